import FoundationEssentials
import Glibc
import PosternIO

/// What a server does with each request: a plain async function of values.
package typealias HTTPHandler = @Sendable (HTTPRequest) async -> HTTPResponse

/// What a server does with each request, as a type: the server's runner tasks call `handle` directly, where a
/// call through an `HTTPHandler` closure is one more async frame, and a hop back to the caller's executor after it
/// (a `swift_task_switch`, which takes the task's lock).
///
/// A handler may answer a request at once, on the loop thread (`handleImmediately`); when it cannot, it may leave
/// the rest of the answer, going on from what it did so far, as a `PreparedAnswer`: a closure over the handler's own
/// typed values, which the server calls in a runner task instead of `handle`, or an object of the handler's that the
/// server starts at once and that calls back with the answer — typed at both ends, never looked into, never cast.
package protocol HTTPRequestHandler: Sendable {
    /// The answer to `request`.
    func handle(_ request: HTTPRequest) async -> HTTPResponse
    /// The answer to `request` when it is ready without suspending (tried first, on the loop thread, with no task
    /// resumed); else nil, with the rest of the answer in `rest` when some of the work is done (nil: `handle`).
    func handleImmediately(_ request: HTTPRequest, rest: inout PreparedAnswer?) -> HTTPResponse?
}

extension HTTPRequestHandler {
    /// No immediate answer, nothing prepared.
    package func handleImmediately(_ request: HTTPRequest, rest: inout PreparedAnswer?) -> HTTPResponse? { nil }
}

/// The rest of a request's answer as a handler's immediate step prepared it (`HTTPRequestHandler`): what that step
/// did travels captured in the closure, or held by the handler's object, with its types.
///
/// A closure or an object rather than an associated type carried through the server's queue: the server's generic
/// code is not specialised for the gateway's types across the module boundary, and unspecialised, a generic prepared
/// value cost every request its metadata look-ups (`make instructions` A: about 10,000 instructions per request more).
package enum PreparedAnswer: Sendable {
    /// The rest, run in a runner task.
    case task(@Sendable () async -> HTTPResponse)
    /// The rest, started at once on the loop thread, without a task (while fewer than `ServerLimits.maxHandling`
    /// requests are being handled; else in a runner task when one is free). A task's switches, continuations and
    /// frames were a tenth of an uncached read's instructions.
    case later(any LaterWork)
}

/// The rest of a request's answer that goes on without a task (`PreparedAnswer.later`): an object the handler has
/// for the request anyway (the gateway's request context), so that preparing it allocates nothing (a closure over
/// the same values allocated its context).
package protocol LaterWork: AnyObject, Sendable {
    /// Starts the rest, on the loop thread: it hands the answer to `answer` exactly once, on the loop thread (before
    /// it returns, when it has the answer at once).
    func start(_ answer: LaterAnswer)
}

/// Where the answer of a request started without a task goes (`PreparedAnswer.later`): call it once, on the loop
/// thread. A value, not a closure: the server's usual one names the connection, so starting a request this way
/// allocates nothing for it.
package struct LaterAnswer: @unchecked Sendable {  // loop thread only: the connection never leaves it
    private enum Target {
        /// The server's: the connection's answer, written by its worker.
        case connection(ServerWorker, HTTPConnection)
        /// A runner task's, waiting for the answer (the request waited for a runner).
        case task(UnsafeContinuation<HTTPResponse, Never>)
        /// Anyone else's.
        case closure(@Sendable (HTTPResponse) -> Void)
    }
    private let target: Target

    init(_ worker: ServerWorker, _ conn: HTTPConnection) { target = .connection(worker, conn) }
    init(_ continuation: UnsafeContinuation<HTTPResponse, Never>) { target = .task(continuation) }
    /// An answer given to `body`.
    package init(_ body: @escaping @Sendable (HTTPResponse) -> Void) { target = .closure(body) }

    /// Gives the answer.
    package func callAsFunction(_ response: HTTPResponse) {
        switch target {
        case .connection(let worker, let conn): worker.answeredLater(conn, response)
        case .task(let continuation): continuation.resume(returning: response)
        case .closure(let body): body(response)
        }
    }
}

/// An `HTTPHandler` closure as an `HTTPRequestHandler`, with an optional immediate answer (`ImmediateHTTPHandler`).
struct ClosureRequestHandler: HTTPRequestHandler {
    let body: HTTPHandler
    let immediate: ImmediateHTTPHandler?
    func handle(_ request: HTTPRequest) async -> HTTPResponse { await body(request) }
    func handleImmediately(_ request: HTTPRequest, rest: inout PreparedAnswer?) -> HTTPResponse? { immediate?(request) }
}

/// An answer given at once, on the loop thread, without resuming a handler task; nil when the request needs the
/// asynchronous handler (a closure handler prepares nothing for it: a handler type can, `HTTPRequestHandler`).
package typealias ImmediateHTTPHandler = @Sendable (HTTPRequest) -> HTTPResponse?

/// The answer to a request the server refuses itself (it closes the connection after it).
package typealias RefusalRenderer = @Sendable (EdgeRefusal) -> HTTPResponse

/// Limits the server enforces on every connection, before any handler runs (the contract's own limits are
/// checked by the pipeline).
package struct ServerLimits: Sendable {
    /// Largest body read at all (above it, the server refuses the request with `EdgeRefusal.bodyTooLarge`).
    package var bodyCeiling = 8 * 1024 * 1024
    /// Largest request head, request line included (above it, `EdgeRefusal.badFraming`: 400).
    var maxHeaderBytes = 16 * 1024
    /// Inactivity timeout in seconds (slow senders and idle keep-alive connections alike).
    package var inactivityTimeoutSeconds = 10
    /// Seconds a request may take to arrive whole from its first byte; then the connection is closed.
    package var requestTimeoutSeconds = 30
    /// The same timeout in milliseconds, replacing `inactivityTimeoutSeconds` when set (the Directus stand-in
    /// closes idle keep-alive connections after 5 s, like Node).
    package var inactivityTimeoutMilliseconds: Int? = nil
    /// Requests one worker hands to the handler at once; the next ones wait, first come first served, until one
    /// of those is answered (a parsed request in a queue, not a suspended handler task holding its frames). The
    /// gateway sets it to what its Directus pool and waiting queue can take (`Application.start`), so that a
    /// crowd of clients waits instead of overflowing that queue.
    package var maxHandling = 1024
    /// The defaults.
    package init() {}

    /// The inactivity timeout in milliseconds, whichever way it was given.
    var inactivityMilliseconds: Int { inactivityTimeoutMilliseconds ?? inactivityTimeoutSeconds * 1000 }

    /// How often a worker looks for inactive connections: a tenth of the timeout (so that a connection is closed
    /// at most 10 % after its time), between 5 ms and 1 s.
    var inactivitySweepMilliseconds: Int { min(1000, max(5, inactivityMilliseconds / 10)) }
}

/// An HTTP/1.1 server: on each event loop its own `SO_REUSEPORT` listener on the same port, and its
/// connections (`HTTPConnection`: nonblocking sockets parsed by llhttp).
package final class HTTPServer: @unchecked Sendable {
    private let group: EventLoopGroup
    /// Gives a worker its runners, made for the handler's type (`RunnerPool`, see `HTTPRequestHandler`).
    private let attachRunners: @Sendable (ServerWorker) -> Void
    private let refuse: RefusalRenderer
    private let limits: ServerLimits
    private var workers: [ServerWorker] = []
    /// The bound port (useful with port 0).
    package private(set) var port: UInt16 = 0

    /// Creates a server over the loops of `group`; `refuse` renders the answers the server gives itself, and
    /// `immediate` (when given) is tried first on every request: its answer is sent without running `handler`.
    package convenience init(group: EventLoopGroup, limits: ServerLimits = ServerLimits(),
                            refuse: @escaping RefusalRenderer = EdgeRefusal.plainAnswer, immediate: ImmediateHTTPHandler? = nil,
                            handler: @escaping HTTPHandler) {
        self.init(group: group, limits: limits, refuse: refuse, handling: ClosureRequestHandler(body: handler, immediate: immediate))
    }

    /// The same server with a handler type (`HTTPRequestHandler`): what the gateway uses. Its
    /// `handleImmediately` is tried first on every request.
    package init<Handler: HTTPRequestHandler>(group: EventLoopGroup, limits: ServerLimits = ServerLimits(),
                                             refuse: @escaping RefusalRenderer = EdgeRefusal.plainAnswer,
                                             handling handler: Handler) {
        self.group = group
        self.limits = limits
        self.refuse = refuse
        attachRunners = { worker in RunnerPool.attach(handler, to: worker) }
    }

    /// Binds `host:port` on every loop; port 0 picks a free port shared by all loops.
    package func start(host: String, port requested: UInt16) throws(ServerStartError) {
        var address = try SocketAddress(host: host, port: requested)
        try address.probeFree()
        for (i, loop) in group.loops.enumerated() {
            let worker = ServerWorker(loop: loop, refuse: refuse, limits: limits)
            attachRunners(worker)
            let bound = try worker.bind(address)
            if i == 0 {
                address.port = bound
                port = bound
            }
            workers.append(worker)
        }
    }

    /// Stops accepting, waits up to `grace` seconds for in-flight requests, then frees the servers.
    package func shutdown(grace: Double) {
        for worker in workers { worker.stopAccepting() }
        let deadline = Date().addingTimeInterval(grace)
        while workers.contains(where: { $0.inFlight > 0 }) && Date() < deadline {
            usleep(10_000)
        }
        for worker in workers { worker.free() }
        workers.removeAll()
    }

    /// Requests being handled right now, over all loops.
    package var inFlight: Int { workers.reduce(0) { $0 + $1.inFlight } }

    /// Client connections that sent at least one request and are still open, over all loops.
    package var openConnections: Int { workers.reduce(0) { $0 + $1.openConnections } }

    /// Client connections that sent at least one request since start, open or closed, over all loops.
    var connectionsSeen: Int { workers.reduce(0) { $0 + $1.connectionsSeen } }
}
