import CEvent
import Foundation
import Synchronization

/// What a server does with each request: a plain async function of values.
public typealias HTTPHandler = @Sendable (HTTPRequest) async -> HTTPResponse

/// The answer to a request the server refuses itself (it closes the connection after it).
public typealias RefusalRenderer = @Sendable (EdgeRefusal) -> HTTPResponse

/// Limits that evhttp enforces itself (outer ceilings; the contract's limits are checked in Swift).
public struct ServerLimits: Sendable {
    /// Largest body evhttp reads at all (above it, evhttp answers its own 413).
    public var bodyCeiling = 8 * 1024 * 1024
    /// Largest header block (above it, evhttp answers its own 400).
    public var maxHeaderBytes = 16 * 1024
    /// Inactivity timeout in seconds (slow senders and idle keep-alive connections alike).
    public var inactivityTimeoutSeconds = 10
    /// Seconds a request may take to arrive whole from its first byte; then the connection is closed.
    public var requestTimeoutSeconds = 30
    /// The same timeout in milliseconds, replacing `inactivityTimeoutSeconds` when set (the Directus stand-in
    /// closes idle keep-alive connections after 5 s, like Node).
    public var inactivityTimeoutMilliseconds: Int? = nil
    /// The defaults.
    public init() {}
}

/// Why a server could not start.
public struct ServerStartError: Error, CustomStringConvertible, Sendable {
    /// A one-line reason.
    public let description: String
}

/// An HTTP/1.1 server: one evhttp per event loop, each with its own `SO_REUSEPORT` listener on the same port.
public final class HTTPServer: @unchecked Sendable {
    private let group: EventLoopGroup
    private let handler: HTTPHandler
    private let refuse: RefusalRenderer
    private let limits: ServerLimits
    private var workers: [ServerWorker] = []
    /// The bound port (useful with port 0).
    public private(set) var port: UInt16 = 0

    /// Creates a server over the loops of `group`; `refuse` renders the answers the server gives itself.
    public init(group: EventLoopGroup, limits: ServerLimits = ServerLimits(),
                refuse: @escaping RefusalRenderer = EdgeRefusal.plainAnswer, handler: @escaping HTTPHandler) {
        self.group = group
        self.limits = limits
        self.refuse = refuse
        self.handler = handler
    }

    /// Binds `host:port` on every loop; port 0 picks a free port shared by all loops.
    public func start(host: String, port requested: UInt16) throws(ServerStartError) {
        var address = try SocketAddress(host: host, port: requested)
        try address.probeFree()
        for (i, loop) in group.loops.enumerated() {
            let worker = ServerWorker(loop: loop, handler: handler, refuse: refuse, limits: limits)
            let bound = try worker.bind(address)
            if i == 0 {
                address.port = bound
                port = bound
            }
            workers.append(worker)
        }
    }

    /// Stops accepting, waits up to `grace` seconds for in-flight requests, then frees the servers.
    public func shutdown(grace: Double) {
        for worker in workers { worker.stopAccepting() }
        let deadline = Date().addingTimeInterval(grace)
        while workers.contains(where: { $0.inFlight > 0 }) && Date() < deadline {
            usleep(10_000)
        }
        for worker in workers { worker.free() }
        workers.removeAll()
    }

    /// Requests being handled right now, over all loops.
    public var inFlight: Int { workers.reduce(0) { $0 + $1.inFlight } }

    /// Client connections that sent at least one request and are still open, over all loops.
    public var openConnections: Int { workers.reduce(0) { $0 + $1.openConnections } }

    /// Client connections that sent at least one request since start, open or closed, over all loops.
    public var connectionsSeen: Int { workers.reduce(0) { $0 + $1.connectionsSeen } }
}

/// One evhttp on one loop.
final class ServerWorker: @unchecked Sendable {
    let loop: EventLoop
    private let handler: HTTPHandler
    private let refuse: RefusalRenderer
    private let limits: ServerLimits
    private var http: OpaquePointer?
    private var listener: OpaquePointer?
    /// Set (on the loop thread) once evhttp is freed: it freed every request in flight with it,
    /// so late replies must not touch their pointers.
    private var freed = false
    /// Counters written on the loop thread and read from any thread (atomics: no lock per request).
    private let inFlightCount = Atomic<Int>(0)
    private let connectionCount = Atomic<Int>(0)
    private let seenCount = Atomic<Int>(0)
    /// The request deadline of each connection that has sent a byte, by evhttp connection (loop thread only).
    private var guards: [OpaquePointer: ConnectionGuard] = [:]

    init(loop: EventLoop, handler: @escaping HTTPHandler, refuse: @escaping RefusalRenderer, limits: ServerLimits) {
        self.loop = loop
        self.handler = handler
        self.refuse = refuse
        self.limits = limits
    }

    var inFlight: Int { inFlightCount.load(ordering: .relaxed) }

    var openConnections: Int { connectionCount.load(ordering: .relaxed) }

    /// Connections seen on this loop since start.
    var connectionsSeen: Int { seenCount.load(ordering: .relaxed) }

    /// Starts the request deadline of a connection whose first request began to arrive (loop thread).
    @discardableResult
    func guardConnection(_ conn: OpaquePointer, bev: OpaquePointer) -> ConnectionGuard {
        if let existing = guards[conn] { return existing }
        let guarded = ConnectionGuard(evcon: conn, bev: bev, base: loop.base, seconds: limits.requestTimeoutSeconds) { [unowned self] in
            self.requestTimedOut($0)
        }
        guards[conn] = guarded
        // The worker outlives its evhttp and every connection of it, so the unretained pointer is valid.
        evhttp_connection_set_closecb(conn, { conn, arg in
            guard let conn, let arg else { return }
            Unmanaged<ServerWorker>.fromOpaque(arg).takeUnretainedValue().connectionClosed(conn)
        }, Unmanaged.passUnretained(self).toOpaque())
        return guarded
    }

    /// Counts a connection on its first whole request and stops its deadline (loop thread).
    private func requestArrived(_ req: OpaquePointer) {
        guard let conn = evhttp_request_get_connection(req), let bev = evhttp_connection_get_bufferevent(conn) else { return }
        let guarded = guardConnection(conn, bev: bev)
        guarded.requestReceived()
        if !guarded.counted {
            guarded.counted = true
            connectionCount.add(1, ordering: .relaxed)
            seenCount.add(1, ordering: .relaxed)
        }
    }

    /// evhttp is freeing the connection: drop its guard (loop thread).
    private func connectionClosed(_ conn: OpaquePointer) {
        guard let guarded = guards.removeValue(forKey: conn) else { return }
        guarded.close()
        if guarded.counted { connectionCount.subtract(1, ordering: .relaxed) }
    }

    /// A request did not arrive whole in time: answer 408 when nothing else is being written, and close.
    private func requestTimedOut(_ guarded: ConnectionGuard) {
        guard guards[guarded.evcon] === guarded else { return }
        if guarded.outputIdle { guarded.sendFinal(refuse(.requestTimeout)) }
        evhttp_connection_free(guarded.evcon)  // calls connectionClosed
    }

    private func adjustInFlight(_ delta: Int) {
        inFlightCount.add(delta, ordering: .relaxed)
    }

    /// Creates the evhttp and its listener on the loop thread; returns the bound port.
    func bind(_ address: SocketAddress) throws(ServerStartError) -> UInt16 {
        let result = loop.runAndWait { () -> Result<UInt16, ServerStartError> in
            self.bindOnLoop(address)
        }
        return try result.get()
    }

    private func bindOnLoop(_ address: SocketAddress) -> Result<UInt16, ServerStartError> {
        guard let http = evhttp_new(loop.base) else { return .failure(ServerStartError(description: "evhttp_new failed")) }
        // evhttp answers methods outside this set with its own 501: allow all and answer 405 in Swift.
        let all = EVHTTP_REQ_GET.rawValue | EVHTTP_REQ_POST.rawValue | EVHTTP_REQ_HEAD.rawValue | EVHTTP_REQ_PUT.rawValue
            | EVHTTP_REQ_DELETE.rawValue | EVHTTP_REQ_OPTIONS.rawValue | EVHTTP_REQ_TRACE.rawValue
            | EVHTTP_REQ_CONNECT.rawValue | EVHTTP_REQ_PATCH.rawValue
        evhttp_set_allowed_methods(http, UInt16(all))
        evhttp_set_max_body_size(http, Int(limits.bodyCeiling))
        evhttp_set_max_headers_size(http, Int(limits.maxHeaderBytes))
        if let ms = limits.inactivityTimeoutMilliseconds {
            var tv = timeval(tv_sec: ms / 1000, tv_usec: Int((ms % 1000) * 1000))
            evhttp_set_timeout_tv(http, &tv)
        } else {
            evhttp_set_timeout(http, Int32(limits.inactivityTimeoutSeconds))
        }
        // Each connection's bufferevent is made here, so that its request deadline starts with its first byte.
        evhttp_set_bevcb(http, serverBufferEvent, nil)
        ServerWorker.byServer.withLock { $0[http] = Unmanaged.passUnretained(self) }
        // The worker outlives its evhttp (freed in free()), so the unretained pointer stays valid.
        evhttp_set_gencb(http, { req, arg in
            guard let req, let arg else { return }
            Unmanaged<ServerWorker>.fromOpaque(arg).takeUnretainedValue().accept(req)
        }, Unmanaged.passUnretained(self).toOpaque())

        let flags = LEV_OPT_CLOSE_ON_FREE | LEV_OPT_REUSEABLE | LEV_OPT_REUSEABLE_PORT | LEV_OPT_CLOSE_ON_EXEC
        let listener = address.withSockaddr { sa, len in
            evconnlistener_new_bind(loop.base, nil, nil, UInt32(flags), 1024, sa, Int32(len))
        }
        guard let listener else {
            _ = ServerWorker.byServer.withLock { $0.removeValue(forKey: http) }
            evhttp_free(http)
            return .failure(ServerStartError(description: "cannot listen on \(address): \(String(cString: strerror(errno)))"))
        }
        guard evhttp_bind_listener(http, listener) != nil else {
            evconnlistener_free(listener)
            _ = ServerWorker.byServer.withLock { $0.removeValue(forKey: http) }
            evhttp_free(http)
            return .failure(ServerStartError(description: "evhttp_bind_listener failed"))
        }
        self.http = http
        self.listener = listener
        // Out of file descriptors, accept() fails at once and the listening socket stays readable:
        // without this the loop would spin. Back off instead (the callback's argument is evhttp's, so the
        // worker is found by its listener).
        ServerWorker.byListener.withLock { $0[listener] = Unmanaged.passUnretained(self) }
        evconnlistener_set_error_cb(listener) { listener, _ in
            guard let listener, let worker = ServerWorker.byListener.withLock({ $0[listener] }) else { return }
            worker.takeUnretainedValue().acceptFailed(errno: errno)
        }
        return .success(SocketAddress.localPort(of: evconnlistener_get_fd(listener)))
    }

    /// evhttp → worker, for a new connection's first bytes (the worker outlives its evhttp).
    static let byServer = LockedBox<[OpaquePointer: Unmanaged<ServerWorker>]>([:])
    /// Listener → worker, for the accept-error callback (whose argument belongs to evhttp).
    private static let byListener = LockedBox<[OpaquePointer: Unmanaged<ServerWorker>]>([:])
    private var acceptBackoff: EventLoop.Timer?
    private var accepting = true
    /// accept() failures seen (e.g. out of file descriptors).
    private(set) var acceptErrors = 0

    /// Pauses accepting for a moment after an accept() error, then resumes (loop thread).
    private func acceptFailed(errno code: Int32) {
        acceptErrors += 1
        guard let listener, acceptBackoff == nil else { return }
        evconnlistener_disable(listener)
        acceptBackoff = EventLoop.Timer(loop: loop, seconds: 0.25) { [weak self] in
            guard let self else { return }
            self.acceptBackoff = nil
            if self.accepting, let listener = self.listener { evconnlistener_enable(listener) }
        }
    }

    /// Stops accepting new connections (existing keep-alive connections finish their requests).
    func stopAccepting() {
        _ = loop.runAndWait { () -> Bool in
            self.accepting = false
            self.acceptBackoff?.cancel()
            self.acceptBackoff = nil
            if let listener = self.listener { evconnlistener_disable(listener) }
            return true
        }
    }

    /// Frees the evhttp (and with it the listener and every connection).
    func free() {
        _ = loop.runAndWait { () -> Bool in
            if let listener = self.listener { _ = ServerWorker.byListener.withLock { $0.removeValue(forKey: listener) } }
            self.acceptBackoff?.cancel()
            self.acceptBackoff = nil
            if let http = self.http {
                _ = ServerWorker.byServer.withLock { $0.removeValue(forKey: http) }
                evhttp_free(http)
            }
            self.http = nil
            self.freed = true
            self.listener = nil
            return true
        }
    }

    // MARK: Requests

    /// Turns the evhttp request into a value and starts its handler on this loop.
    private func accept(_ req: OpaquePointer) {
        requestArrived(req)
        let request = ServerWorker.makeRequest(req)
        let pending = PendingReply(raw: req)
        if let reason = RequestFraming.problem(method: request.method, headers: request.headers) {
            // libevent read the body by the first Content-Length (or none): what follows on this
            // connection cannot be trusted, so answer and close it.
            var answer = refuse(.badFraming(request, reason: reason))
            answer.headers.set("Connection", "close")
            reply(pending, answer)
            return
        }
        adjustInFlight(1)
        let handler = self.handler
        // Task.immediate runs the handler right here, on the loop thread, up to its first suspension (no hop
        // through the loop's job queue to start it); after a suspension it resumes on its preferred executor,
        // this loop. The handler stays async, and a handler that answers without suspending replies inline.
        Task.immediate(executorPreference: loop) {
            let response = await handler(request)
            if self.loop.inLoop {
                self.finish(pending, response)
            } else {
                self.loop.execute { self.finish(pending, response) }
            }
        }
    }

    /// Replies unless evhttp is gone, and counts the request done (loop thread).
    private func finish(_ pending: PendingReply, _ response: HTTPResponse) {
        if !freed { reply(pending, response) }
        adjustInFlight(-1)
    }

    /// Sends the one reply of a request: builds the buffer, sends, frees, forgets the pointer.
    private func reply(_ pending: PendingReply, _ response: HTTPResponse) {
        let req = pending.take()
        let headers = evhttp_request_get_output_headers(req)
        for (name, value) in response.headers {
            EvhttpOutput.addHeader(headers, name, value)
        }
        // HEAD: the headers of the answer, with its length, and no body byte (evhttp would send the
        // buffer as it is, and a stray body breaks the next request on a keep-alive connection).
        let head = evhttp_request_get_command(req) == EVHTTP_REQ_HEAD
        if head, response.status != 204, response.status != 304, response.headers["Content-Length"] == nil {
            EvhttpOutput.addHeader(headers, "Content-Length", String(response.body.count))
        }
        // The body goes once, straight into the request's own output buffer (no buffer of our own to
        // allocate, fill, move and free): evhttp_send_reply with no buffer sends that one.
        if !response.body.isEmpty, !head {
            ServerWorker.addBody(response.body, to: evhttp_request_get_output_buffer(req))
        }
        let conn = evhttp_request_get_connection(req)  // nil when the client has gone (then evhttp frees req)
        evhttp_send_reply(req, Int32(response.status), HTTPResponse.reason(response.status), nil)
        if let conn { guards[conn]?.requestAnswered() }
    }

    /// Bodies from this size on are lent to the buffer instead of copied into it.
    private static let lendBytes = 1024

    /// Puts `body` into `output`: a large body by reference (the buffer keeps the body's storage alive until
    /// it is written and frees it then), so its bytes are never copied on their way to the socket.
    private static func addBody(_ body: Data, to output: OpaquePointer?) {
        guard body.count >= lendBytes else {
            body.withUnsafeBytes { raw in _ = evbuffer_add(output, raw.baseAddress, raw.count) }
            return
        }
        // A Data of this size keeps its bytes in one heap storage object that never moves and that no one
        // mutates in place while it is shared: the retained box pins it until evbuffer's cleanup releases it.
        let box = Unmanaged.passRetained(LentBody(body))
        let added = box.takeUnretainedValue().body.withUnsafeBytes { raw in
            evbuffer_add_reference(output, raw.baseAddress, raw.count, { _, _, arg in
                guard let arg else { return }
                Unmanaged<LentBody>.fromOpaque(arg).release()
            }, box.toOpaque())
        }
        if added != 0 {  // not added, so the cleanup will never run: release here and copy instead
            box.release()
            body.withUnsafeBytes { raw in _ = evbuffer_add(output, raw.baseAddress, raw.count) }
        }
    }

    private static func makeRequest(_ req: OpaquePointer) -> HTTPRequest {
        let method = ServerWorker.method(evhttp_request_get_command(req))
        let uri = evhttp_request_get_uri(req).map { String(cString: $0) } ?? "/"
        let headers = EvhttpInput.headers(req)
        let body = EvhttpInput.body(req)
        var peer = "0.0.0.0"
        if let conn = evhttp_request_get_connection(req) {
            var address: UnsafeMutablePointer<CChar>?
            var port: UInt16 = 0
            evhttp_connection_get_peer(conn, &address, &port)
            if let address { peer = String(cString: address) }
        }
        return HTTPRequest(method: method, target: uri, headers: headers, body: body, remoteAddress: peer)
    }

    /// The method of an evhttp command, without going through its name.
    private static func method(_ cmd: evhttp_cmd_type) -> HTTPMethod {
        switch cmd {
        case EVHTTP_REQ_GET: return .get
        case EVHTTP_REQ_POST: return .post
        case EVHTTP_REQ_HEAD: return .head
        case EVHTTP_REQ_PUT: return .put
        case EVHTTP_REQ_DELETE: return .delete
        case EVHTTP_REQ_OPTIONS: return .options
        case EVHTTP_REQ_TRACE: return .other("TRACE")
        case EVHTTP_REQ_CONNECT: return .other("CONNECT")
        case EVHTTP_REQ_PATCH: return .patch
        default: return .other("UNKNOWN")
        }
    }
}

/// A response body lent to an evbuffer (kept alive until the buffer has written it).
private final class LentBody {
    let body: Data
    init(_ body: Data) { self.body = body }
}

/// The evhttp request awaiting its one reply; the pointer is only touched on its loop thread.
private final class PendingReply: @unchecked Sendable {
    private var raw: OpaquePointer?

    init(raw: OpaquePointer) { self.raw = raw }

    /// Hands out the pointer exactly once; a second reply is a programming error.
    func take() -> OpaquePointer {
        guard let r = raw else { preconditionFailure("a request was answered twice") }
        raw = nil
        return r
    }
}
