import FoundationEssentials
import PosternIO
import PosternRedis

/// One Redis pub/sub channel shared by every gateway instance on the same Redis, carrying session
/// revocations and changes, and micro-cache invalidations (docs/api.md, Several instances (Redis)).
///
/// A message is `<instance> s <session id>` or `<instance> c <collection>`; an instance ignores its own.
/// Publishing never blocks (the PUBLISH goes out from a task). After a resubscription (the subscriber lost
/// its connection, so messages may have been missed) every session cache and every micro-cache over the
/// collections in `collections` is dropped.
final class RedisEventBus: Sendable {
    private let clients: RedisClientGroup
    private let channel: String
    private let instance = Session.newID()
    private let collections: [String]
    /// Handlers of sessions announced by other instances.
    let sessionHandlers = LockedBox<[@Sendable (String) -> Void]>([])
    /// Handlers of "announcements may have been lost".
    let resetHandlers = LockedBox<[@Sendable () -> Void]>([])
    /// Micro-cache handlers (local and remote changes).
    let cacheHandlers = LockedBox<[@Sendable (String) -> Void]>([])
    private let subscriber = LockedBox<RedisSubscriber?>(nil)

    /// A bus on `channel`, publishing through `clients`; `collections` are those dropped after a resubscription.
    init(clients: RedisClientGroup, endpoint: RedisEndpoint, loop: EventLoop, channel: String = "postern:events",
                collections: [String], options: RedisOptions = RedisOptions()) {
        self.clients = clients
        self.channel = channel
        self.collections = collections
        let subscriber = RedisSubscriber(loop: loop, endpoint: endpoint, channel: channel, options: options,
                                         onMessage: { [weak self] bytes in self?.receive(bytes) },
                                         onResubscribed: { [weak self] in self?.reset() })
        self.subscriber.withLock { $0 = subscriber }
    }

    /// True while subscribed.
    var isSubscribed: Bool { subscriber.withLock { $0 }?.isSubscribed ?? false }

    /// Waits until the subscription is confirmed (false when closed first).
    func waitUntilSubscribed() async -> Bool {
        guard let subscriber = subscriber.withLock({ $0 }) else { return false }
        return await subscriber.waitUntilSubscribed()
    }

    /// Stops listening (before the loops stop).
    func close() {
        subscriber.withLock { $0 }?.close()
    }

    /// The session side of the bus.
    var revocations: any SessionRevocationBus { Revocations(bus: self) }

    /// Session revocations and changes over the bus.
    struct Revocations: SessionRevocationBus {
        /// The bus it speaks for.
        let bus: RedisEventBus

        /// Tells the other instances to drop their cached copy of `sessionID`.
        func publish(sessionID: String) { bus.send("s", sessionID) }

        /// Registers a handler for sessions announced by other instances.
        func subscribe(_ handler: @escaping @Sendable (String) -> Void) {
            bus.sessionHandlers.withLock { $0.append(handler) }
        }

        /// Registers a handler for "announcements may have been lost".
        func subscribeReset(_ handler: @escaping @Sendable () -> Void) {
            bus.resetHandlers.withLock { $0.append(handler) }
        }
    }

    // MARK: Wire

    /// Publishes `<instance> <kind> <subject>` from a task (never blocks the caller; lost if Redis is down).
    func send(_ kind: String, _ subject: String) {
        let message = "\(instance) \(kind) \(subject)"
        let clients = self.clients
        let channel = self.channel
        Task(executorPreference: EventLoop.current) {
            _ = try? await clients.command(["PUBLISH", .string(channel), .string(message)])
        }
    }

    private func receive(_ bytes: [UInt8]) {
        let text = String(decoding: bytes, as: UTF8.self)
        let parts = text.split(separator: " ", maxSplits: 2, omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] != instance else { return }
        let subject = String(parts[2])
        switch parts[1] {
        case "s": for handler in sessionHandlers.withLock({ $0 }) { handler(subject) }
        case "c": for handler in cacheHandlers.withLock({ $0 }) { handler(subject) }
        default: break
        }
    }

    private func reset() {
        for handler in resetHandlers.withLock({ $0 }) { handler() }
        let handlers = cacheHandlers.withLock { $0 }
        for collection in collections {
            for handler in handlers { handler(collection) }
        }
    }
}
