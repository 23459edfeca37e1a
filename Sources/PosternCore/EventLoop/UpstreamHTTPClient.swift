import CEvent
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
    /// The `Host` header, built once.
    private let hostHeader: String
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
        hostHeader = endpoint.hostHeader
    }

    /// Sends one request and waits for the answer, at most `timeout` seconds from now (waiting for a pooled
    /// connection included). An idempotent GET that fails because a reused keep-alive connection was closed
    /// is retried once on a fresh one, within the same time.
    public func send(_ request: UpstreamRequest, timeout: Double) async throws(UpstreamFailure) -> UpstreamResponse {
        let deadline = Self.now() &+ UInt64(max(0, timeout) * 1_000_000_000)
        // A GET that meets a closed connection is retried; any other method first checks that the peer has not
        // already closed the idle connection it would reuse (its FIN may be queued before libevent saw it).
        let connection = try await checkout(deadline: deadline, probeIdle: request.method != .get)
        let reused = connection.completed > 0
        let outcome = await perform(request, on: connection, deadline: deadline)
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
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<UpstreamResponse, UpstreamFailure>, Never>) in
            let call = UpstreamCall(connection: connection, keptHeaders: keptHeaders, continuation: continuation)
            call.start(request, endpoint: endpoint, hostHeader: hostHeader, loop: loop, timeout: timeout)
        }
        checkin(connection, healthy: (try? result.get()) != nil && !connection.closedByPeer)
        return result
    }

    // MARK: Pool

    private func checkout(fresh: Bool = false, deadline: UInt64, probeIdle: Bool = false) async throws(UpstreamFailure)
        -> UpstreamConnection {
        closeStaleIdleConnections()
        while !fresh, let connection = idle.popLast() {
            guard probeIdle, connection.peerHasClosed() else { return connection }
            // Closed by the peer while idle: drop it (outside any libevent callback) and try the next one.
            open -= 1
            loop.execute { [connection] in connection.free() }
        }
        if open < maxConnections || fresh {
            open += 1
            return UpstreamConnection(loop: loop, endpoint: endpoint, tls: tlsContext)
        }
        guard waiters.count < maxWaiting else { throw .unreachable(UpstreamFailure.poolQueueFull) }
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

    /// Closes the idle connections that have idled longer than `keepaliveIdle` (the oldest are first).
    private func closeStaleIdleConnections() {
        guard let oldest = idle.first, Self.now() &- oldest.idleSince > keepaliveIdleNanos else { return }
        let now = Self.now()
        let stale = idle.prefix { now &- $0.idleSince > keepaliveIdleNanos }
        idle.removeFirst(stale.count)
        open -= stale.count
        for connection in stale { connection.free() }
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
                idle.append(connection)
            }
            return
        }
        // Free outside libevent's callback stack: the connection may still be on it.
        loop.execute { [connection] in connection.free() }
        if !handToWaiter(UpstreamConnection(loop: loop, endpoint: endpoint, tls: tlsContext)) {
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

/// One `evhttp_connection` (one request at a time).
final class UpstreamConnection: @unchecked Sendable {
    private(set) var evcon: OpaquePointer?
    /// When the connection last went back to the idle pool (monotonic nanoseconds).
    var idleSince: UInt64 = 0
    /// Kept so the base outlives the connection, and so teardown happens on the loop's thread.
    private let loop: EventLoop
    /// Requests completed on this connection (0 = fresh).
    var completed = 0
    /// Set by the close callback: the TCP connection was established and is now closed.
    var closedByPeer = false
    /// Set when the connection was established at least once during the current request.
    var wasConnected = false

    init(loop: EventLoop, endpoint: UpstreamEndpoint, tls: TLSClientContext?) {
        self.loop = loop
        if let tls, let bev = tls.makeBufferevent(base: loop.base, host: endpoint.host) {
            evcon = evhttp_connection_base_bufferevent_new(loop.base, loop.dns, bev, endpoint.host, endpoint.port)
        } else if tls == nil {
            evcon = evhttp_connection_base_new(loop.base, loop.dns, endpoint.host, endpoint.port)
        }
        guard let evcon else { return }
        // evhttp's own retries ignore the method; retries are ours.
        evhttp_connection_set_retries(evcon, 0)
        // The connection object owns evcon and frees it before going away, so `self` stays valid in the callback.
        evhttp_connection_set_closecb(evcon, { _, arg in
            guard let arg else { return }
            let connection = Unmanaged<UpstreamConnection>.fromOpaque(arg).takeUnretainedValue()
            connection.closedByPeer = true
            connection.wasConnected = true
        }, Unmanaged.passUnretained(self).toOpaque())
    }

    /// True when the peer has closed this idle connection (end of stream already queued on the socket), seen
    /// with a non-blocking peek before libevent's own read callback ran (loop thread).
    func peerHasClosed() -> Bool {
        if closedByPeer { return true }
        guard let evcon, let bev = evhttp_connection_get_bufferevent(evcon) else { return false }
        let fd = bufferevent_getfd(bev)
        guard fd >= 0 else { return false }
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK)
    }

    /// Frees the connection now (call on the loop thread).
    func free() {
        if let evcon { UpstreamConnection.release(evcon) }
        evcon = nil
    }

    private static func release(_ evcon: OpaquePointer) {
        // Detach the close callback first: it must not run against an object being torn down.
        evhttp_connection_set_closecb(evcon, nil, nil)
        evhttp_connection_free(evcon)
    }

    deinit {
        // The last reference may go away on any thread (e.g. a test's transport released early):
        // libevent objects are only ever freed on their loop's thread, or once that loop has stopped.
        guard let evcon else { return }
        let handle = UncheckedSendable(evcon)
        loop.executeOrRunIfStopped { UpstreamConnection.release(handle.value) }
    }
}

/// One request in flight: owns the continuation, resumed exactly once by the response or the timer.
private final class UpstreamCall {
    private let connection: UpstreamConnection
    private let keptHeaders: [StaticString]?
    private var continuation: CheckedContinuation<Result<UpstreamResponse, UpstreamFailure>, Never>?
    private var timer: EventLoop.Timer?
    private var errorKind: evhttp_request_error?

    init(connection: UpstreamConnection, keptHeaders: [StaticString]?,
         continuation: CheckedContinuation<Result<UpstreamResponse, UpstreamFailure>, Never>) {
        self.connection = connection
        self.keptHeaders = keptHeaders
        self.continuation = continuation
    }

    func start(_ request: UpstreamRequest, endpoint: UpstreamEndpoint, hostHeader: String, loop: EventLoop, timeout: Double) {
        guard let evcon = connection.evcon else {
            finish(.failure(.unreachable("cannot create a connection to \(endpoint.host)")))
            return
        }
        connection.closedByPeer = false
        connection.wasConnected = false  // set by the close callback if this attempt got connected
        // One-shot: passRetained here, exactly one takeRetainedValue in the completion callback,
        // or in the timeout path when the connection is freed and the callback can no longer run.
        let arg = Unmanaged.passRetained(self).toOpaque()
        guard let req = evhttp_request_new({ req, arg in
            guard let arg else { return }
            let call = Unmanaged<UpstreamCall>.fromOpaque(arg).takeRetainedValue()
            call.complete(req)
        }, arg) else {
            Unmanaged<UpstreamCall>.fromOpaque(arg).release()
            finish(.failure(.unreachable("evhttp_request_new failed")))
            return
        }
        evhttp_request_set_error_cb(req) { error, arg in
            guard let arg else { return }
            Unmanaged<UpstreamCall>.fromOpaque(arg).takeUnretainedValue().errorKind = error
        }
        let headers = evhttp_request_get_output_headers(req)
        EvhttpOutput.addHeader(headers, "Host", hostHeader)
        for (name, value) in request.headers {
            EvhttpOutput.addHeader(headers, name, value)
        }
        if !request.body.isEmpty {
            EvhttpOutput.addHeader(headers, "Content-Length", String(request.body.count))
            request.body.withUnsafeBytes { raw in
                _ = evbuffer_add(evhttp_request_get_output_buffer(req), raw.baseAddress, raw.count)
            }
        } else if request.method == .post || request.method == .patch || request.method == .put {
            evhttp_add_header(headers, "Content-Length", "0")
        }
        timer = EventLoop.Timer(loop: loop, seconds: timeout) { [self] in
            self.timedOut(arg)
        }
        let target = endpoint.basePath.isEmpty ? request.target : endpoint.basePath + request.target
        if evhttp_make_request(evcon, req, UpstreamCall.command(request.method), target) != 0 {
            // evhttp_make_request frees the request on failure, so the callback never runs.
            timer?.cancel()
            Unmanaged<UpstreamCall>.fromOpaque(arg).release()
            finish(.failure(.unreachable("evhttp_make_request failed")))
        }
    }

    private func timedOut(_ arg: UnsafeMutableRawPointer) {
        timer = nil  // it fired; dropping it breaks the call → timer → closure → call cycle
        guard continuation != nil else { return }
        // Freeing the connection drops its queued request without running the callback,
        // so the retained reference from start() is released here instead.
        connection.free()
        Unmanaged<UpstreamCall>.fromOpaque(arg).release()
        finish(.failure(.timeout))
    }

    private func complete(_ req: OpaquePointer?) {
        timer?.cancel()
        timer = nil
        guard let req else {
            finish(.failure(failureWithoutResponse()))
            return
        }
        let status = Int(evhttp_request_get_response_code(req))
        guard status > 0 else {
            finish(.failure(failureWithoutResponse()))
            return
        }
        let headers = keptHeaders.map { EvhttpInput.headers(req, only: $0) } ?? EvhttpInput.headers(req)
        let body = EvhttpInput.body(req)
        connection.completed += 1
        if EvhttpInput.header(req, "Connection", is: "close") { connection.closedByPeer = true }
        finish(.success(UpstreamResponse(status: status, headers: headers, body: body)))
    }

    private func failureWithoutResponse() -> UpstreamFailure {
        switch errorKind {
        case EVREQ_HTTP_INVALID_HEADER, EVREQ_HTTP_DATA_TOO_LONG, EVREQ_HTTP_BUFFER_ERROR:
            return .badResponse("invalid HTTP answer")
        default:
            // The close callback fires only for connections that were established:
            // established then closed means the peer hung up on the request, else it never connected.
            connection.closedByPeer = true
            return connection.wasConnected ? .closed : .unreachable("connection failed")
        }
    }

    private func finish(_ result: Result<UpstreamResponse, UpstreamFailure>) {
        guard let continuation else { return }
        self.continuation = nil
        continuation.resume(returning: result)
    }

    private static func command(_ method: HTTPMethod) -> evhttp_cmd_type {
        switch method {
        case .get: return EVHTTP_REQ_GET
        case .post: return EVHTTP_REQ_POST
        case .put: return EVHTTP_REQ_PUT
        case .patch: return EVHTTP_REQ_PATCH
        case .delete: return EVHTTP_REQ_DELETE
        case .head: return EVHTTP_REQ_HEAD
        case .options: return EVHTTP_REQ_OPTIONS
        case .other: return EVHTTP_REQ_GET
        }
    }
}
