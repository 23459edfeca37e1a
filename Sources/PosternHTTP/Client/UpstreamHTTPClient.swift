import FoundationEssentials
import PosternIO

/// Sends requests to one upstream from one event loop, over a pool of keep-alive connections.
///
/// Not thread-safe by design: every method runs on `loop`'s thread (the handlers' task executor).
/// The upstream timeout runs from the call, so time spent waiting for a free connection counts; at most
/// `maxWaiting` calls wait, later ones fail at once. A connection idle longer than `keepaliveIdle` is
/// closed instead of reused: Directus (Node) closes idle keep-alive connections after 5 s, and a request
/// sent just as it does is lost (docs/api.md, Upstream and edge rules).
///
/// An idle connection is reused only once it has been quiet for `reuseQuiet` since its last answer, oldest first,
/// while the pool has room for a new one (a full pool reuses the one quiet the longest): bytes an upstream sends
/// after an answer, nothing having asked for them, then close the connection while it idles, instead of being
/// read as the answer to the next request sent on it (HTTP/1.1 answers carry nothing that ties them to a request).
///
/// GETs that the same turn of the loop sends are pipelined (HTTP/1.1): the first takes a connection as any call
/// does, the next ones (up to `pipelineDepth` in all) are queued behind it on that connection, and the turn's
/// requests are written at its end, one `send` per connection. A request that is not a GET always has a
/// connection of its own. A pipelined GET that loses its connection before its answer came (the peer closed
/// it, or the answer before it failed) is retried once on a fresh connection, like a GET on a reused one.
package final class UpstreamHTTPClient: EndOfTurnWork, @unchecked Sendable {
    package let loop: EventLoop
    package let endpoint: UpstreamEndpoint
    private let maxConnections: Int
    private let maxWaiting: Int
    private let keepaliveIdleNanos: UInt64
    /// At most this many GETs in flight on one connection (1: no pipelining).
    private let pipelineDepth: Int
    /// Answer bodies above this many bytes fail (`directus.max_response_bytes`).
    private let maxResponseBytes: Int
    /// The idle connections and the count of open ones.
    private let idlePool = IdlePool()
    /// Calls waiting for a connection, first come first served.
    private var waiters: [PoolWaiter] = []
    /// The connection this turn's GETs are pipelined on (nil between turns).
    private var batch: UpstreamConnection?
    /// The connections this turn queued requests on, flushed at its end.
    private var unflushed: [UpstreamConnection] = []
    /// Completions' outcomes to hand over at the end of the turn, and the list being handed over (kept for its storage).
    private var deliveries: [UpstreamDelivery] = []
    private var delivering: [UpstreamDelivery] = []
    private let tlsContext: TLSClientContext?
    /// `" HTTP/1.1\r\nHost: <host>\r\n"`, built once: what follows the target in every request.
    private let versionAndHost: [UInt8]
    /// The answer headers copied into a response (nil: all of them).
    private let keptHeaders: [StaticString]?

    /// The largest answer body taken when none is given (16 MiB, `directus.max_response_bytes`' default).
    static let defaultMaxResponseBytes = 16 << 20

    /// How long an idle connection stays quiet after its last answer before it carries another request, while the
    /// pool has room for a new connection (10 ms, in nanoseconds).
    static let reuseQuiet: UInt64 = 10_000_000

    /// Creates a client for `endpoint` on `loop`; its responses carry the answer headers named in `keptHeaders`
    /// (every one when nil). Up to `pipelineDepth` GETs of one turn share a connection; an answer body above
    /// `maxResponseBytes` fails as a bad response.
    package init(loop: EventLoop, endpoint: UpstreamEndpoint, maxConnections: Int, tls: TLSClientContext? = nil,
                maxWaiting: Int = 1024, keepaliveIdle: Double = 4.0, pipelineDepth: Int = 1,
                maxResponseBytes: Int = UpstreamHTTPClient.defaultMaxResponseBytes, keptHeaders: [StaticString]? = nil) {
        self.keptHeaders = keptHeaders
        self.maxResponseBytes = maxResponseBytes
        self.loop = loop
        self.endpoint = endpoint
        self.maxConnections = max(1, maxConnections)
        self.maxWaiting = max(0, maxWaiting)
        self.pipelineDepth = max(1, pipelineDepth)
        keepaliveIdleNanos = UInt64(max(0, keepaliveIdle) * 1_000_000_000)
        tlsContext = endpoint.tls ? (tls ?? TLSClientContext.shared) : nil
        versionAndHost = UpstreamConnection.versionAndHost(endpoint.hostHeader)
    }

    /// Sends one request and waits for the answer, at most `timeout` seconds from now (waiting for a pooled
    /// connection included). An idempotent GET that fails because a reused keep-alive connection was closed
    /// (or the connection it was pipelined on) is retried once on a fresh one, within the same time.
    package func send(_ request: UpstreamRequest, timeout: Double) async throws(UpstreamFailure) -> UpstreamResponse {
        let now = Self.now()
        let deadline = now &+ UInt64(max(0, timeout) * 1_000_000_000)
        guard let (connection, retryable) = try connectionAtOnce(for: request, now: now) else {
            return try await sendAfterWaiting(request, deadline: deadline).get()
        }
        let outcome = await exchange(request, on: connection, deadline: deadline)
        return try await retryingClosed(outcome, request, retryable: retryable, deadline: deadline).get()
    }

    /// The connection `request` goes out on without waiting, and whether a GET that meets its close may be sent once
    /// more (it was used before); nil when the call must wait for one (every pooled connection busy, no room for a
    /// new one). A GET goes behind this turn's GETs on one connection while it can (written with them at the end
    /// of the turn); any other method first checks that the peer has not already closed the idle connection it
    /// would reuse (its FIN may be queued before libevent saw it). Fails when too many calls wait already.
    private func connectionAtOnce(for request: UpstreamRequest, now: UInt64) throws(UpstreamFailure)
        -> (UpstreamConnection, Bool)? {
        if request.method == .get, let batch, batch.canPipeline(depth: pipelineDepth) { return (batch, true) }
        // The usual case: a pooled connection (or room for a new one) without suspending, and no time spent waiting,
        // so the whole timeout is left for the exchange.
        guard let connection = try takeConnection(now: now, probeIdle: request.method != .get) else { return nil }
        return (connection, connection.completed > 0)
    }

    /// `outcome`; or, when a GET sent on a reused connection met its close (`retryable`), the outcome of the GET
    /// sent once more on a fresh connection.
    private func retryingClosed(_ outcome: Result<UpstreamResponse, UpstreamFailure>, _ request: UpstreamRequest,
                                retryable: Bool, deadline: UInt64) async -> Result<UpstreamResponse, UpstreamFailure> {
        guard case .failure(.closed) = outcome, retryable && request.method == .get else { return outcome }
        do throws(UpstreamFailure) {
            let fresh = try await checkout(fresh: true, deadline: deadline)
            return await perform(request, on: fresh, deadline: deadline)
        } catch {
            return .failure(error)
        }
    }

    /// Monotonic nanoseconds.
    private static func now() -> UInt64 { MonotonicInstant.now.nanoseconds }

    /// Seconds left until `deadline` (0 when it passed).
    private static func remaining(_ deadline: UInt64) -> Double {
        let now = now()
        return deadline > now ? Double(deadline - now) / 1_000_000_000 : 0
    }

    private func perform(_ request: UpstreamRequest, on connection: UpstreamConnection, deadline: UInt64) async
        -> Result<UpstreamResponse, UpstreamFailure> {
        guard Self.now() < deadline else {
            // The wait for the connection used up the time: nothing was sent, the connection is still good.
            checkin(connection, healthy: true)
            return .failure(.timeout)
        }
        return await exchange(request, on: connection, deadline: deadline)
    }

    /// Queues `request` on `connection` (written at the end of the turn) and waits for the answer, until
    /// `deadline`. The connection comes back to the pool when its last call is answered (`drained`).
    @inline(__always)
    private func exchange(_ request: UpstreamRequest, on connection: UpstreamConnection, deadline: UInt64) async
        -> Result<UpstreamResponse, UpstreamFailure> {
        // The connection resumes the continuation exactly once (answer, failure or its deadline).
        await withUnsafeContinuation { continuation in
            enqueue(request, on: connection, .task(continuation), deadline: deadline)
        }
    }

    /// Queues `request` on `connection` for `waiter`, to be written at the end of the turn (`retryable`: see
    /// `UpstreamConnection.queue`).
    private func enqueue(_ request: UpstreamRequest, on connection: UpstreamConnection, _ waiter: UpstreamWaiter,
                         deadline: UInt64, retryable: Bool = false) {
        connection.queue(request, versionAndHost: versionAndHost, waiter, deadline: deadline, retryable: retryable)
        if pipelineDepth > 1 && request.method == .get && !connection.closedByPeer { batch = connection }
        if unflushed.isEmpty { loop.atEndOfTurn(self, Self.flushTask) }
        if unflushed.last !== connection { unflushed.append(connection) }
    }

    /// `send` for a caller on the loop thread that has no task to suspend (the gateway's uncached reads):
    /// `completion` gets the outcome exactly once, on the loop thread, at the end of a turn (never before this
    /// returns). The same pool, deadline and retry as `send`: a GET that meets a closed reused connection is sent
    /// once more on a fresh one, within the same time. A call that must wait for a pooled connection (every one busy)
    /// waits in a task of the loop, as `send` does.
    package func start(_ request: UpstreamRequest, timeout: Double, completion: @escaping UpstreamCompletion) {
        let now = Self.now()
        let deadline = now &+ UInt64(max(0, timeout) * 1_000_000_000)
        let picked: (UpstreamConnection, Bool)?
        do throws(UpstreamFailure) {
            picked = try connectionAtOnce(for: request, now: now)
        } catch {
            delivered(UpstreamDelivery(completion: completion, outcome: .failure(error), connection: nil, retry: nil,
                                       deadline: deadline))
            return
        }
        guard let (connection, retryable) = picked else {
            // The task runs on this loop (its executor preference): the completion is called on the loop thread.
            let done = UncheckedSendable(completion)
            Task(executorPreference: loop) {
                done.value(await self.sendAfterWaiting(request, deadline: deadline))
            }
            return
        }
        enqueue(request, on: connection, .completion(completion), deadline: deadline,
                retryable: retryable && request.method == .get)
    }

    /// Hands a completion's outcome over at the end of the turn (`deliver`).
    func delivered(_ delivery: consuming UpstreamDelivery) {
        if deliveries.isEmpty { loop.atEndOfTurn(self, Self.deliverTask) }
        deliveries.append(delivery)
    }

    /// The end-of-turn hook of `delivered`: each completion gets its outcome, or its GET is sent once more on a fresh
    /// connection when a reused one closed under it (as `send` retries it, within the same deadline).
    private func deliver() {
        swap(&deliveries, &delivering)
        // Taken off the end of the reversed list: each moved out, not copied (a copy retains every part of an answer).
        delivering.reverse()
        while let delivery = delivering.popLast() {
            guard let request = delivery.retry, case .failure(.closed) = delivery.outcome else {
                delivery.completion(delivery.outcome)
                continue
            }
            let now = Self.now()
            guard now < delivery.deadline else {
                delivery.completion(.failure(.timeout))
                continue
            }
            enqueue(request, on: freshConnection(now: now), .completion(delivery.completion), deadline: delivery.deadline)
        }
    }

    /// `start`'s call when the pool is busy: waits for a connection, then goes on as `send` does.
    private func sendAfterWaiting(_ request: UpstreamRequest, deadline: UInt64) async -> Result<UpstreamResponse, UpstreamFailure> {
        let connection: UpstreamConnection
        do throws(UpstreamFailure) {
            connection = try await waitForConnection(deadline: deadline)
        } catch {
            return .failure(error)
        }
        let retryable = connection.completed > 0
        let outcome = await perform(request, on: connection, deadline: deadline)
        return await retryingClosed(outcome, request, retryable: retryable, deadline: deadline)
    }

    /// The end-of-turn hooks (`EventLoop.atEndOfTurn(_:_:)`, which holds the client until they run): `flush` and
    /// `deliver`.
    private static let flushTask = 0, deliverTask = 1

    package func endOfTurn(_ task: Int) {
        if task == Self.flushTask { flush() } else { deliver() }
    }

    /// The end of the turn: writes what the turn's calls queued, one `send` per connection; the next turn's GETs
    /// start a new batch.
    private func flush() {
        batch = nil
        for connection in unflushed { connection.flush() }
        unflushed.removeAll(keepingCapacity: true)
    }

    /// A connection's last call got its outcome: back to the pool (or closed, when it failed).
    func drained(_ connection: UpstreamConnection) {
        if batch === connection { batch = nil }
        checkin(connection, healthy: !connection.closedByPeer)
    }

    // MARK: Pool

    private func checkout(fresh: Bool = false, deadline: UInt64) async throws(UpstreamFailure) -> UpstreamConnection {
        if let connection = try takeConnection(now: Self.now(), fresh: fresh) { return connection }
        return try await waitForConnection(deadline: deadline)
    }

    /// A connection without waiting: the idle pooled one quiet the longest, once quiet for `reuseQuiet` or when
    /// the pool is full (with `probeIdle`, one the peer has neither closed nor written to), else a new one while
    /// the pool has room (or always when `fresh`); nil when the call must wait for one. Fails when too many calls
    /// already wait.
    private func takeConnection(now: UInt64, fresh: Bool = false, probeIdle: Bool = false) throws(UpstreamFailure)
        -> UpstreamConnection? {
        closeStaleIdleConnections(now: now)
        while !fresh, let connection = idlePool.list.first,
              now &- connection.idleSince >= Self.reuseQuiet || idlePool.open >= maxConnections {
            idlePool.list.removeFirst()
            connection.pooled = false
            guard probeIdle, connection.peerHasClosedOrWritten() else { return connection }
            // Closed by the peer while idle: drop it (outside any libevent callback) and try the next one.
            idlePool.open -= 1
            loop.execute { [connection] in connection.free() }
        }
        if idlePool.open < maxConnections || fresh {
            idlePool.open += 1
            return makeConnection()
        }
        guard waiters.count < maxWaiting else { throw .unreachable(UpstreamFailure.poolQueueFull) }
        return nil
    }

    /// A new connection beyond the pool's size if need be (a retry's: `takeConnection(fresh: true)`), never waiting.
    private func freshConnection(now: UInt64) -> UpstreamConnection {
        closeStaleIdleConnections(now: now)
        idlePool.open += 1
        return makeConnection()
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
        UpstreamConnection(pool: self, idlePool: idlePool, loop: loop, endpoint: endpoint, tls: tlsContext,
                           keptHeaders: keptHeaders, maxResponseBytes: maxResponseBytes)
    }

    /// Closes the idle connections that have idled longer than `keepaliveIdle` (the oldest are first).
    private func closeStaleIdleConnections(now: UInt64) {
        guard let oldest = idlePool.list.first, now &- oldest.idleSince > keepaliveIdleNanos else { return }
        let stale = idlePool.list.prefix { now &- $0.idleSince > keepaliveIdleNanos }
        idlePool.list.removeFirst(stale.count)
        idlePool.open -= stale.count
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
        if healthy && waiters.isEmpty && idlePool.open > maxConnections {
            idlePool.open -= 1
            loop.execute { [connection] in connection.free() }
            return
        }
        if healthy {
            if !handToWaiter(connection) {
                connection.idleSince = Self.now()
                connection.pooled = true
                idlePool.list.append(connection)
            }
            return
        }
        // Free outside libevent's callback stack: the connection may still be on it.
        loop.execute { [connection] in connection.free() }
        if !handToWaiter(makeConnection()) {
            idlePool.open -= 1
        }
    }

    /// Connections currently open (idle or busy).
    package var openConnections: Int { idlePool.open }
}

/// A call waiting for a pooled connection: resumed once, by a checkin or by its deadline timer, possibly
/// before the waiting call got to `wait` (then the outcome is kept until it does).
private final class PoolWaiter: @unchecked Sendable {
    private let lock = PlainLock()
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

/// A pool's idle connections and its count of open ones (idle or busy), apart from the pool: a connection the peer
/// closes while it idles leaves them through a weak reference to this (`UpstreamConnection`), safe even while the
/// pool goes away on another thread. The pool itself is never referenced weakly (a weak reference gives its object a
/// side table, and every retain of the pool on the request path then takes the runtime's slow path). Loop thread only.
final class IdlePool {
    /// Idle connections, oldest first.
    var list: [UpstreamConnection] = []
    /// Open connections, idle or busy.
    var open = 0

    /// The peer closed `connection` while it was pooled: it leaves the pool.
    func closed(_ connection: UpstreamConnection) {
        guard let index = list.firstIndex(where: { $0 === connection }) else { return }
        list.remove(at: index)
        connection.pooled = false
        open -= 1
    }
}
