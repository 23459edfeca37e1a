import CEvent
import FoundationEssentials
import Glibc
import PosternIO
import Synchronization

/// The listener and the connections of one loop.
final class ServerWorker: @unchecked Sendable {
    /// The loop that owns the listener and every connection of this worker.
    let loop: EventLoop
    /// Starts a runner task (`runnerStart`), made for the server's handler type.
    private let startRunner: RunnerStart
    /// Tried before `handler`: an answer that needs no suspension, given on the loop thread.
    private let immediate: ImmediateHTTPHandler?
    /// Renders the answers the server gives itself.
    let refuse: RefusalRenderer
    private let limits: ServerLimits
    private var listenFD: Int32 = -1
    private var listenEvent: OpaquePointer?
    /// Set (on the loop thread) once the worker is freed: late replies are dropped.
    private var freed = false
    /// Counters written on the loop thread and read from any thread (atomics: no lock per request).
    private let inFlightCount = Atomic<Int>(0)
    private let connectionCount = Atomic<Int>(0)
    private let seenCount = Atomic<Int>(0)
    /// Open connections (loop thread only); each stays here until it closes.
    private var connections: [ObjectIdentifier: HTTPConnection] = [:]
    /// The buffer every connection of this worker reads into first, and parses there (loop thread only): a
    /// connection keeps its own only for bytes left over (`HTTPConnection.readable`).
    let scratch = UnsafeMutableRawPointer.allocate(byteCount: HTTPConnection.maxQueued, alignment: 16)
    /// Requests with a runner task now (loop thread only): at most `limits.maxHandling`; the rest wait in `pending`.
    private var handling = 0
    /// The `Date` header line of the current second, and that second.
    private var dateLine: [UInt8] = []
    private var dateSecond = -1

    /// A worker for `loop` (not listening until `bind`).
    init(loop: EventLoop, startRunner: @escaping RunnerStart, immediate: ImmediateHTTPHandler?, refuse: @escaping RefusalRenderer,
         limits: ServerLimits) {
        self.loop = loop
        self.startRunner = startRunner
        self.immediate = immediate
        self.refuse = refuse
        self.limits = limits
    }

    deinit {
        scratch.deallocate()
        for buffer in headBuffers { buffer.deallocate() }
    }

    /// Answer heads not in use (loop thread only): a connection takes one to write an answer and gives it back once
    /// the answer is out, so that an idle connection holds none and a busy worker allocates none.
    private var headBuffers: [HeadBuffer] = []

    /// A head buffer for an answer (loop thread).
    func takeHeadBuffer() -> HeadBuffer {
        headBuffers.popLast() ?? HeadBuffer(capacity: 1024)
    }

    /// A head buffer whose answer is written (loop thread): kept for the next answer, up to as many as
    /// `limits.maxHandling` answers out at once.
    func giveBack(_ buffer: HeadBuffer) {
        if headBuffers.count < limits.maxHandling {
            headBuffers.append(buffer)
        } else {
            buffer.deallocate()
        }
    }

    /// Requests being handled on this loop.
    var inFlight: Int { inFlightCount.load(ordering: .relaxed) }

    /// Connections on this loop that sent a whole request and are still open.
    var openConnections: Int { connectionCount.load(ordering: .relaxed) }

    /// Connections seen on this loop since start.
    var connectionsSeen: Int { seenCount.load(ordering: .relaxed) }

    /// Counts a connection on its first whole request (loop thread).
    func requestArrived(_ conn: HTTPConnection) {
        guard !conn.counted else { return }
        conn.counted = true
        connectionCount.add(1, ordering: .relaxed)
        seenCount.add(1, ordering: .relaxed)
    }

    /// A connection closed: forget it (loop thread).
    func connectionClosed(_ conn: HTTPConnection) {
        connections.removeValue(forKey: ObjectIdentifier(conn))
        if conn.counted { connectionCount.subtract(1, ordering: .relaxed) }
    }

    /// Answers a whole request on this loop: at once when `immediate` can (no task resumed, no job queued),
    /// else through the handler, whose answer goes back to `conn`.
    ///
    /// Handlers run in long-lived tasks, one request after another: a task's allocator keeps the slabs its
    /// async frames needed, so a reused task allocates nothing for them, where a new task per request
    /// mallocs a dozen slabs and the task itself (docs/architecture.md, One request's path).
    ///
    /// The request waits in `pending` until the end of this loop turn's jobs: a runner that finishes its
    /// answer meanwhile takes it there and goes on without suspending (no continuation resumed, no job queued,
    /// no executor hops). What is left at the end of the turn goes to idle runners, or to new ones, up to
    /// `limits.maxHandling` requests at once; beyond that it waits in `pending` for the next runner that answers.
    func handle(_ request: HTTPRequest, on conn: HTTPConnection) {
        var prepared: AnyObject?
        if let immediate, let response = immediate(request, &prepared) {
            // Answered before this returns: nothing is in flight meanwhile (a shutdown cannot see it).
            conn.finish(response)
            return
        }
        inFlightCount.add(1, ordering: .relaxed)
        // With requests waiting already, every runner is busy (`dispatchPending` stops only at the cap) and the
        // next to answer takes the oldest: no hook needed.
        if pendingHead == pending.count { loop.atEndOfTurn { self.dispatchPending() } }
        pending.append(RunnerJob(request: request, conn: conn, prepared: prepared))
    }

    /// Requests waiting for a runner (loop thread only), first come first served from `pendingHead`; a taken
    /// slot is emptied at once, so that no request stays referenced here (its connection reuses the buffers).
    private var pending: [RunnerJob?] = []
    private var pendingHead = 0

    /// The oldest waiting request, if any (loop thread only).
    private func takePending() -> RunnerJob? {
        guard pendingHead < pending.count else { return nil }
        let job = pending[pendingHead].take()
        pendingHead += 1
        if pendingHead == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingHead = 0
        } else if pendingHead >= 1024 && pendingHead * 2 >= pending.count {
            // A queue that never empties (more clients than `maxHandling`, for a while): the taken slots go, so
            // that it does not grow with every request (amortised O(1): at most once per `pendingHead` taken).
            pending.removeFirst(pendingHead)
            pendingHead = 0
        }
        return job
    }

    /// The end-of-turn hook of `handle`: the requests no finishing runner took go to idle runners, or new ones,
    /// while fewer than `limits.maxHandling` are being handled.
    private func dispatchPending() {
        // Nothing is pending once the worker is freed: `free()` drops what no runner took.
        while handling < limits.maxHandling, let job = takePending() {
            handling += 1
            if let idle = idleRunners.popLast() {
                idle.resume(returning: job)
            } else {
                startRunner(self, job)
            }
        }
    }

    /// Starts a runner task on a worker, with its first request.
    typealias RunnerStart = @Sendable (ServerWorker, RunnerJob) -> Void

    /// The runner start for `handler`: a runner's code specialised for its type, so that it calls
    /// `handler.handle` directly.
    static func runnerStart<Handler: HTTPRequestHandler>(_ handler: Handler) -> RunnerStart {
        { worker, job in
            // Task.immediate runs the handler right here, on the loop thread, up to its first suspension (no hop
            // through the loop's job queue to start it); after a suspension it resumes on its preferred executor,
            // this loop.
            Task.immediate(executorPreference: worker.loop) {
                await worker.run(job, handler)
            }
        }
    }

    /// One runner task: handles `first`, then each request it finds waiting when it has answered (`pending`) or
    /// is handed while it waits idle, until the worker is freed or enough runners are idle already.
    private func run<Handler: HTTPRequestHandler>(_ first: RunnerJob, _ handler: Handler) async {
        var job: RunnerJob? = first
        while let current = job {
            let response = await handler.handle(current.request, prepared: current.prepared)
            guard loop.inLoop else {
                // This runner ends here; its slot goes to the oldest waiting request, if any.
                loop.execute {
                    self.finish(current.conn, response)
                    self.handling -= 1
                    if !self.freed { self.dispatchPending() }
                }
                return
            }
            finish(current.conn, response)
            guard !freed else { return }
            // A request that arrived this turn is taken here, without suspending (see `handle`).
            job = nil
            if let next = takePending() {
                job = next
                continue
            }
            handling -= 1
            guard idleRunners.count < ServerWorker.maxIdleRunners else { return }
            // An idle runner holds no request: the connection can reuse that request's header buffer.
            job = await withUnsafeContinuation { idleRunners.append($0) }
        }
    }

    /// A request for a runner task (loop thread only).
    struct RunnerJob: @unchecked Sendable {
        let request: HTTPRequest
        let conn: HTTPConnection
        /// What the immediate hook prepared for the handler, if anything.
        let prepared: AnyObject?
    }

    /// Runner tasks waiting for a request (loop thread only); resumed with nil when the worker is freed.
    private var idleRunners: [UnsafeContinuation<RunnerJob?, Never>] = []
    /// Idle runner tasks kept at most (each keeps the few KiB of slabs its handler's frames need).
    private static let maxIdleRunners = 256

    /// Replies unless the worker is gone, and counts the request done (loop thread).
    private func finish(_ conn: HTTPConnection, _ response: HTTPResponse) {
        inFlightCount.subtract(1, ordering: .relaxed)
        if !freed { conn.finish(response) }
    }

    /// Connections with an answer to write at the end of this loop turn (loop thread only).
    private var answered: [HTTPConnection] = []
    /// `answered` while it is being written (kept to reuse its storage).
    private var writing: [HTTPConnection] = []

    /// Writes `conn`'s answer at the end of the loop turn, after every other answer of the turn.
    ///
    /// One `sendmsg` per answer either way, but a turn's answers then leave one right after another: a client
    /// woken by the first (an inter-processor wake-up in the kernel, the dearest part of a send on loopback) is
    /// usually still reading when the next arrives, where answers sent as each was made (a request's work
    /// apart) woke it for nearly every one. `make bench` C: about 1.5 µs less CPU per request in the gateway.
    func flushAtEndOfTurn(_ conn: HTTPConnection) {
        if answered.isEmpty { loop.atEndOfTurn(writeAnsweredAtEndOfTurn) }
        answered.append(conn)
    }

    /// The end-of-turn hook of `flushAtEndOfTurn`, made once (a closure made per turn allocated its context).
    private lazy var writeAnsweredAtEndOfTurn: () -> Void = { [weak self] in self?.writeAnswered() }

    /// The end-of-turn hook of `flushAtEndOfTurn`: a connection whose write brings the next pipelined request
    /// and its answer joins a new list, written in the same drain (the loop runs hooks until none is left).
    private func writeAnswered() {
        swap(&answered, &writing)
        for conn in writing { conn.flushWritten() }
        writing.removeAll(keepingCapacity: true)
    }

    /// Appends `Date: <IMF-fixdate>\r\n`, formatted once a second, to an answer's head (one copy of the bytes).
    func appendDate(to out: inout HeadBuffer) {
        let now = time(nil)
        if now != dateSecond {
            dateSecond = now
            var t = now
            var parts = tm()
            gmtime_r(&t, &parts)
            var text = [CChar](repeating: 0, count: 64)
            let n = strftime(&text, 64, "Date: %a, %d %b %Y %H:%M:%S GMT\r\n", &parts)
            dateLine = text.prefix(n).map { UInt8(bitPattern: $0) }
        }
        dateLine.withUnsafeBytes { out.append($0) }
    }

    /// Opens the listening socket on the loop thread; returns the bound port.
    func bind(_ address: SocketAddress) throws(ServerStartError) -> UInt16 {
        let result = loop.runAndWait { () -> Result<UInt16, ServerStartError> in
            self.bindOnLoop(address)
        }
        return try result.get()
    }

    private func bindOnLoop(_ address: SocketAddress) -> Result<UInt16, ServerStartError> {
        let family = address.withSockaddr { sa, _ in Int32(sa.pointee.sa_family) }
        let fd = socket(family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard fd >= 0 else { return .failure(ServerStartError(description: "socket: \(String(cString: strerror(errno)))")) }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        setsockopt(fd, SOL_SOCKET, SO_REUSEPORT, &one, socklen_t(MemoryLayout<Int32>.size))
        let bound = address.withSockaddr { sa, len in Glibc.bind(fd, sa, len) }
        guard bound == 0, listen(fd, 4096) == 0 else {
            let reason = String(cString: strerror(errno))
            Glibc.close(fd)
            return .failure(ServerStartError(description: "cannot listen on \(address): \(reason)"))
        }
        listenFD = fd
        // The worker outlives its listen event (freed in free()), so the unretained pointer stays valid.
        listenEvent = event_new(loop.base, fd, Int16(EV_READ | EV_PERSIST), { _, _, arg in
            guard let arg else { return }
            Unmanaged<ServerWorker>.fromOpaque(arg).takeUnretainedValue().acceptAll()
        }, Unmanaged.passUnretained(self).toOpaque())
        event_add(listenEvent, nil)
        // Freed in free(), like the listen event.
        sweepEvent = event_new(loop.base, -1, Int16(EV_PERSIST), { _, _, arg in
            guard let arg else { return }
            Unmanaged<ServerWorker>.fromOpaque(arg).takeUnretainedValue().closeInactive()
        }, Unmanaged.passUnretained(self).toOpaque())
        let every = limits.inactivitySweepMilliseconds
        var interval = timeval(tv_sec: every / 1000, tv_usec: (every % 1000) * 1000)
        event_add(sweepEvent, &interval)
        return .success(SocketAddress.localPort(of: fd))
    }

    /// The inactivity sweep's timer (persistent, every `limits.inactivitySweepMilliseconds`).
    private var sweepEvent: OpaquePointer?

    /// Closes the connections idle (or sending slowly) for the inactivity timeout, except those waiting for
    /// their answer: one pass over this loop's connections, instead of a timer re-armed on every request.
    private func closeInactive() {
        let now = HTTPConnection.coarseMilliseconds()
        // Collected first: closing a connection removes it from `connections`.
        for conn in Array(connections.values) { conn.closeIfInactive(now: now) }
    }

    private var acceptBackoff: EventLoop.Timer?
    private var accepting = true
    /// accept() failures seen (e.g. out of file descriptors).
    private(set) var acceptErrors = 0

    /// Accepts the waiting connections (a bounded batch, so that one busy listener cannot starve the loop).
    private func acceptAll() {
        for _ in 0..<64 {
            var storage = sockaddr_storage()
            var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
            let fd = withUnsafeMutablePointer(to: &storage) { p in
                p.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                    accept4(listenFD, $0, &length, Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue))
                }
            }
            if fd < 0 {
                switch errno {
                case EAGAIN, EWOULDBLOCK: return
                case EINTR, ECONNABORTED, EPROTO: continue
                default: acceptFailed(); return
                }
            }
            var one: Int32 = 1
            setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
            let conn = HTTPConnection(fd: fd, peer: ServerWorker.ip(of: storage), worker: self, base: loop.base, limits: limits)
            connections[ObjectIdentifier(conn)] = conn
        }
    }

    /// The IP address of a peer (no port).
    private static func ip(of storage: sockaddr_storage) -> String {
        var storage = storage
        var text = [CChar](repeating: 0, count: Int(INET6_ADDRSTRLEN) + 1)
        let family = Int32(storage.ss_family)
        let ok = withUnsafePointer(to: &storage) { p -> Bool in
            let raw = UnsafeRawPointer(p)
            if family == AF_INET {
                let address = raw.assumingMemoryBound(to: sockaddr_in.self)
                return withUnsafePointer(to: address.pointee.sin_addr) { inet_ntop(AF_INET, $0, &text, socklen_t(text.count)) != nil }
            }
            let address = raw.assumingMemoryBound(to: sockaddr_in6.self)
            return withUnsafePointer(to: address.pointee.sin6_addr) { inet_ntop(AF_INET6, $0, &text, socklen_t(text.count)) != nil }
        }
        guard ok else { return "0.0.0.0" }
        let length = text.firstIndex(of: 0) ?? text.count
        return String(decoding: text[..<length].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    /// Out of file descriptors, accept() fails at once and the listening socket stays readable: pause
    /// accepting for a moment instead of spinning (loop thread).
    private func acceptFailed() {
        acceptErrors += 1
        guard let listenEvent, acceptBackoff == nil else { return }
        event_del(listenEvent)
        acceptBackoff = EventLoop.Timer(loop: loop, seconds: 0.25) { [weak self] in
            guard let self else { return }
            self.acceptBackoff = nil
            if self.accepting, let listenEvent = self.listenEvent { event_add(listenEvent, nil) }
        }
    }

    /// Stops accepting new connections and closes the listening socket (existing keep-alive connections
    /// finish their requests).
    func stopAccepting() {
        _ = loop.runAndWait { () -> Bool in
            self.accepting = false
            self.acceptBackoff?.cancel()
            self.acceptBackoff = nil
            self.closeListener()
            return true
        }
    }

    private func closeListener() {
        if let listenEvent { event_free(listenEvent) }
        listenEvent = nil
        if listenFD >= 0 { Glibc.close(listenFD) }
        listenFD = -1
    }

    /// Closes the listener and every connection; replies that come later are dropped.
    func free() {
        _ = loop.runAndWait { () -> Bool in
            self.acceptBackoff?.cancel()
            self.acceptBackoff = nil
            self.closeListener()
            if let sweep = self.sweepEvent { event_free(sweep) }
            self.sweepEvent = nil
            for conn in Array(self.connections.values) { conn.close() }
            self.connections.removeAll()
            self.freed = true
            // Requests no runner took: their connections are closed, nothing is answered.
            while self.takePending() != nil { self.inFlightCount.subtract(1, ordering: .relaxed) }
            let idle = self.idleRunners
            self.idleRunners.removeAll()
            for runner in idle { runner.resume(returning: nil) }
            return true
        }
    }
}
