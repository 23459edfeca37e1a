import PosternIO
import Synchronization

/// A pub/sub connection subscribed to one channel, on one loop; it reconnects and resubscribes by itself.
///
/// `onMessage` runs on the loop thread for each message. After every resubscription (not the first
/// subscription) `onResubscribed` runs there too: messages published while the connection was down were
/// lost, so the owner should drop whatever those messages would have invalidated.
package final class RedisSubscriber: Sendable {
    /// The loop the connection and the callbacks run on.
    package let loop: EventLoop
    /// The channel.
    let channel: String
    private let core: SubscriberCore

    /// Subscribes to `channel` on `endpoint` from `loop`; starts at once.
    package init(loop: EventLoop, endpoint: RedisEndpoint, channel: String, options: RedisOptions = RedisOptions(),
                onMessage: @escaping @Sendable ([UInt8]) -> Void, onResubscribed: @escaping @Sendable () -> Void) {
        self.loop = loop
        self.channel = channel
        let core = SubscriberCore(connection: RedisConnection(loop: loop, endpoint: endpoint, options: options),
                                  channel: channel, onMessage: onMessage, onResubscribed: onResubscribed)
        self.core = core
        loop.executeOrRun { core.start() }
    }

    deinit {
        let core = self.core
        loop.executeOrRunIfStopped { core.close() }
    }

    /// True while subscribed (connected, and Redis confirmed the subscription).
    package var isSubscribed: Bool { core.subscribed.load(ordering: .acquiring) }

    /// Waits until the subscription is confirmed (at once if it is); false when the subscriber was closed first.
    package func waitUntilSubscribed() async -> Bool {
        let core = self.core
        return await withCheckedContinuation { continuation in
            loop.executeOrRunIfStopped { core.whenSubscribed(continuation) }
        }
    }

    /// Stops: no more messages, no reconnection. Call before the loop stops.
    package func close() {
        let core = self.core
        loop.executeOrRunIfStopped { core.close() }
    }
}

/// The loop-bound part of a subscriber (loop thread only, except `subscribed`).
private final class SubscriberCore: @unchecked Sendable {
    let connection: RedisConnection
    let channel: String
    let onMessage: @Sendable ([UInt8]) -> Void
    let onResubscribed: @Sendable () -> Void
    let subscribed = Atomic<Bool>(false)
    private var everSubscribed = false
    private var closed = false
    private var waiters: [CheckedContinuation<Bool, Never>] = []

    init(connection: RedisConnection, channel: String, onMessage: @escaping @Sendable ([UInt8]) -> Void,
         onResubscribed: @escaping @Sendable () -> Void) {
        self.connection = connection
        self.channel = channel
        self.onMessage = onMessage
        self.onResubscribed = onResubscribed
    }

    func start() {
        // The connection's hooks and this core reference each other until close() clears the hooks.
        connection.onReady = { [self] in subscribe() }
        connection.onDown = { [self] in subscribed.store(false, ordering: .releasing) }
        connection.start()
    }

    func close() {
        closed = true
        connection.close()  // also clears the hooks, breaking the cycle
        subscribed.store(false, ordering: .releasing)
        resumeWaiters(false)
    }

    func whenSubscribed(_ continuation: CheckedContinuation<Bool, Never>) {
        if closed {
            continuation.resume(returning: false)
        } else if subscribed.load(ordering: .acquiring) {
            continuation.resume(returning: true)
        } else {
            waiters.append(continuation)
        }
    }

    private func resumeWaiters(_ value: Bool) {
        let pending = waiters
        waiters.removeAll()
        for waiter in pending { waiter.resume(returning: value) }
    }

    private func subscribe() {
        // The handler holds this core until the socket goes away or close() runs (which drops the socket).
        if !connection.subscribe(["SUBSCRIBE", .string(channel)], handler: { [self] reply in received(reply) }) {
            connection.restart(.unavailable("cannot send SUBSCRIBE"))
        }
    }

    /// One pub/sub reply (loop thread): `["subscribe", channel, count]` or `["message", channel, payload]`.
    private func received(_ reply: RedisReply) {
        guard case .array(let parts) = reply, parts.count >= 3, let kind = parts[0].string else { return }
        switch kind {
        case "message":
            onMessage(parts[2].bytes ?? [])
        case "subscribe":
            subscribed.store(true, ordering: .releasing)
            if everSubscribed { onResubscribed() }
            everSubscribed = true
            resumeWaiters(true)
        default:
            break
        }
    }
}
