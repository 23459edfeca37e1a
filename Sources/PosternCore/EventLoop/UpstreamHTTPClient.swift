import Foundation

/// Sends requests to one upstream from one event loop, over a pool of keep-alive connections.
///
/// Not thread-safe by design: every method runs on `loop`'s thread (the handlers' task executor).
/// The upstream timeout runs from the call, so time spent waiting for a free connection counts; at most
/// `maxWaiting` calls wait, later ones fail at once. A connection idle longer than `keepaliveIdle` is
/// closed instead of reused: Directus (Node) closes idle keep-alive connections after 5 s, and a request
/// sent just as it does is lost (docs/api.md, Upstream and edge rules).
public final class UpstreamHTTPClient: @unchecked Sendable {
    let loop: EventLoop
    let endpoint: UpstreamEndpoint
    private let maxConnections: Int
    private let maxWaiting: Int
    private let keepaliveIdleNanos: UInt64
    /// Idle connections, oldest first.
    private var idle: [UpstreamConnection] = []
    private var open = 0
    /// Calls waiting for a connection, first come first served.
    private var waiters: [PoolWaiter] = []
    private let tlsContext: TLSClientContext?
    /// `" HTTP/1.1\r\nHost: <host>\r\n"`, built once: what follows the target in every request.
    private let versionAndHost: [UInt8]
    /// The answer headers copied into a response (nil: all of them).
    private let keptHeaders: [StaticString]?

    /// The answer headers the gateway reads (`Retry-After`, for the 429/503 translation; `Connection` is
    /// looked at in place): the others are never turned into `String`s.
    public static let gatewayHeaders: [StaticString] = ["Retry-After"]

    /// Creates a client for `endpoint` on `loop`; its responses carry the answer headers named in `keptHeaders`
    /// (every one when nil).
    public init(loop: EventLoop, endpoint: UpstreamEndpoint, maxConnections: Int, tls: TLSClientContext? = nil,
                maxWaiting: Int = 1024, keepaliveIdle: Double = 4.0, keptHeaders: [StaticString]? = nil) {
        self.keptHeaders = keptHeaders
        self.loop = loop
        self.endpoint = endpoint
        self.maxConnections = max(1, maxConnections)
        self.maxWaiting = max(0, maxWaiting)
        keepaliveIdleNanos = UInt64(max(0, keepaliveIdle) * 1_000_000_000)
        tlsContext = endpoint.tls ? (tls ?? TLSClientContext.shared) : nil
        versionAndHost = UpstreamConnection.versionAndHost(endpoint.hostHeader)
    }

    /// Sends one request and waits for the answer, at most `timeout` seconds from now (waiting for a pooled
    /// connection included). An idempotent GET that fails because a reused keep-alive connection was closed
    /// is retried once on a fresh one, within the same time.
    public func send(_ request: UpstreamRequest, timeout: Double) async throws(UpstreamFailure) -> UpstreamResponse {
        let now = Self.now()
        let deadline = now &+ UInt64(max(0, timeout) * 1_000_000_000)
        // A GET that meets a closed connection is retried; any other method first checks that the peer has not
        // already closed the idle connection it would reuse (its FIN may be queued before libevent saw it).
        let outcome: Result<UpstreamResponse, UpstreamFailure>
        let reused: Bool
        if let connection = try takeConnection(now: now, probeIdle: request.method != .get) {
            // The usual case: a pooled connection (or room for a new one) without suspending, and no time spent
            // waiting, so the whole timeout is left for the exchange.
            reused = connection.completed > 0
            let left = Double(deadline &- now) / 1_000_000_000
            outcome = left > 0 ? await exchange(request, on: connection, timeout: left)
                : await perform(request, on: connection, deadline: deadline)
        } else {
            let connection = try await waitForConnection(deadline: deadline)
            reused = connection.completed > 0
            outcome = await perform(request, on: connection, deadline: deadline)
        }
        switch outcome {
        case .success(let response):
            return response
        case .failure(.closed) where reused && request.method == .get:
            let fresh = try await checkout(fresh: true, deadline: deadline)
            return try await perform(request, on: fresh, deadline: deadline).get()
        case .failure(let failure):
            throw failure
        }
    }

    /// Monotonic nanoseconds.
    private static func now() -> UInt64 { DispatchTime.now().uptimeNanoseconds }

    /// Seconds left until `deadline` (0 when it passed).
    private static func remaining(_ deadline: UInt64) -> Double {
        let now = now()
        return deadline > now ? Double(deadline - now) / 1_000_000_000 : 0
    }

    private func perform(_ request: UpstreamRequest, on connection: UpstreamConnection, deadline: UInt64) async
        -> Result<UpstreamResponse, UpstreamFailure> {
        let timeout = Self.remaining(deadline)
        guard timeout > 0 else {
            // The wait for the connection used up the time: nothing was sent, the connection is still good.
            checkin(connection, healthy: true)
            return .failure(.timeout)
        }
        return await exchange(request, on: connection, timeout: timeout)
    }

    /// Sends `request` on `connection`, waits at most `timeout` seconds (> 0) for the answer, and gives the
    /// connection back to the pool.
    @inline(__always)
    private func exchange(_ request: UpstreamRequest, on connection: UpstreamConnection, timeout: Double) async
        -> Result<UpstreamResponse, UpstreamFailure> {
        connection.prepare(request, versionAndHost: versionAndHost)
        // The connection resumes the continuation exactly once (answer, failure or its deadline).
        let result = await withUnsafeContinuation { connection.start($0, timeout: timeout) }
        checkin(connection, healthy: (try? result.get()) != nil && !connection.closedByPeer)
        return result
    }

    // MARK: Pool

    private func checkout(fresh: Bool = false, deadline: UInt64) async throws(UpstreamFailure) -> UpstreamConnection {
        if let connection = try takeConnection(now: Self.now(), fresh: fresh) { return connection }
        return try await waitForConnection(deadline: deadline)
    }

    /// A connection without waiting: an idle pooled one (the most recently used; with `probeIdle`, one the peer
    /// has not closed), else a new one while the pool has room (or always when `fresh`); nil when the call must
    /// wait for one. Fails when too many calls already wait.
    private func takeConnection(now: UInt64, fresh: Bool = false, probeIdle: Bool = false) throws(UpstreamFailure)
        -> UpstreamConnection? {
        closeStaleIdleConnections(now: now)
        while !fresh, let connection = idle.popLast() {
            connection.pooled = false
            guard probeIdle, connection.peerHasClosed() else { return connection }
            // Closed by the peer while idle: drop it (outside any libevent callback) and try the next one.
            open -= 1
            loop.execute { [connection] in connection.free() }
        }
        if open < maxConnections || fresh {
            open += 1
            return makeConnection()
        }
        guard waiters.count < maxWaiting else { throw .unreachable(UpstreamFailure.poolQueueFull) }
        return nil
    }

    /// Waits (first come, first served) for a connection a call gives back, until `deadline`.
    private func waitForConnection(deadline: UInt64) async throws(UpstreamFailure) -> UpstreamConnection {
        // Queued before the first suspension: other calls may run before the continuation below exists, and
        // they must see this one in the queue (a checkin meanwhile leaves its connection in the waiter).
        let waiter = PoolWaiter()
        waiters.append(waiter)
        waiter.timer = EventLoop.Timer(loop: loop, seconds: Self.remaining(deadline)) { [weak self, waiter] in
            waiter.timer = nil
            self?.waiters.removeAll { $0 === waiter }
            waiter.resume(nil)
        }
        let connection = await withCheckedContinuation { waiter.wait($0) }
        guard let connection else { throw .timeout }
        return connection
    }

    /// A new connection (not connected until its first request) that leaves the pool when the peer closes it
    /// while idle.
    private func makeConnection() -> UpstreamConnection {
        let connection = UpstreamConnection(loop: loop, endpoint: endpoint, tls: tlsContext, keptHeaders: keptHeaders)
        connection.onIdleClose = { [weak self] closed in
            guard let self, let index = self.idle.firstIndex(where: { $0 === closed }) else { return }
            self.idle.remove(at: index)
            closed.pooled = false
            self.open -= 1
        }
        return connection
    }

    /// Closes the idle connections that have idled longer than `keepaliveIdle` (the oldest are first).
    private func closeStaleIdleConnections(now: UInt64) {
        guard let oldest = idle.first, now &- oldest.idleSince > keepaliveIdleNanos else { return }
        let stale = idle.prefix { now &- $0.idleSince > keepaliveIdleNanos }
        idle.removeFirst(stale.count)
        open -= stale.count
        for connection in stale {
            connection.pooled = false
            connection.free()
        }
    }

    /// Hands `connection` to the first waiting call, if any.
    private func handToWaiter(_ connection: UpstreamConnection) -> Bool {
        guard !waiters.isEmpty else { return false }
        let waiter = waiters.removeFirst()
        waiter.timer?.cancel()
        waiter.timer = nil
        waiter.resume(connection)
        return true
    }

    private func checkin(_ connection: UpstreamConnection, healthy: Bool) {
        // A retry's fresh connection may have taken the pool above its size: shrink back when it returns.
        if healthy && waiters.isEmpty && open > maxConnections {
            open -= 1
            loop.execute { [connection] in connection.free() }
            return
        }
        if healthy {
            if !handToWaiter(connection) {
                connection.idleSince = Self.now()
                connection.pooled = true
                idle.append(connection)
            }
            return
        }
        // Free outside libevent's callback stack: the connection may still be on it.
        loop.execute { [connection] in connection.free() }
        if !handToWaiter(makeConnection()) {
            open -= 1
        }
    }

    /// Connections currently open (idle or busy).
    public var openConnections: Int { open }
}

/// A call waiting for a pooled connection: resumed once, by a checkin or by its deadline timer, possibly
/// before the waiting call got to `wait` (then the outcome is kept until it does).
private final class PoolWaiter: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<UpstreamConnection?, Never>?
    private var outcome: UpstreamConnection??
    /// The deadline timer (loop thread only).
    var timer: EventLoop.Timer?

    /// Suspends the call until `resume`, or returns at once when it already came.
    func wait(_ continuation: CheckedContinuation<UpstreamConnection?, Never>) {
        let ready: UpstreamConnection?? = lock.withLock {
            if outcome == nil { self.continuation = continuation }
            return outcome
        }
        if let ready { continuation.resume(returning: ready) }
    }

    /// Gives the call its connection (nil: the deadline passed); only the first outcome counts.
    func resume(_ connection: UpstreamConnection?) {
        let waiting: CheckedContinuation<UpstreamConnection?, Never>? = lock.withLock {
            guard outcome == nil else { return nil }
            outcome = .some(connection)
            defer { continuation = nil }
            return continuation
        }
        waiting?.resume(returning: connection)
    }
}
