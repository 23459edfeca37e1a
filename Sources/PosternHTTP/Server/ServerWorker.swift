import CEvent
import FoundationEssentials
import Glibc
import PosternIO
import Synchronization

/// The listener and the connections of one loop.
final class ServerWorker: EndOfTurnWork, @unchecked Sendable {
    /// The loop that owns the listener and every connection of this worker.
    let loop: EventLoop
    /// Hands a whole request to the handler's runners (`RunnerPool.accept`, made for the server's handler type);
    /// set once by `attach`, dropped by `free` (the pool holds the worker).
    private var accept: ((HTTPRequest, HTTPConnection) -> Void)?
    /// Drops the requests waiting for a runner and ends the idle runners (`RunnerPool.stop`), in `free`.
    private var stopRunners: (() -> Void)?
    /// Writes the answer of a request started without a task (`RunnerPool.answered`), on the loop thread.
    private var answeredByRunners: ((HTTPConnection, HTTPResponse) -> Void)?
    /// Renders the answers the server gives itself.
    let refuse: RefusalRenderer
    let limits: ServerLimits
    private var listenFD: Int32 = -1
    private var listenEvent: OpaquePointer?
    /// Set (on the loop thread) once the worker is freed: late replies are dropped.
    private(set) var freed = false
    /// Counters written on the loop thread and read from any thread (atomics: no lock per request).
    private let inFlightCount = Atomic<Int>(0)
    private let connectionCount = Atomic<Int>(0)
    private let seenCount = Atomic<Int>(0)
    /// Open connections (loop thread only); each stays here until it closes.
    private var connections: [ObjectIdentifier: HTTPConnection] = [:]
    /// The buffer every connection of this worker reads into first, and parses there (loop thread only): a
    /// connection keeps its own only for bytes left over (`HTTPConnection.readable`).
    let scratch = UnsafeMutableRawPointer.allocate(byteCount: HTTPConnection.maxQueued, alignment: 16)
    /// The `Date` header line of the current second, and that second.
    private var dateLine: [UInt8] = []
    private var dateSecond = -1

    /// A worker for `loop` (not listening until `bind`, and not handling requests until its runners are attached).
    init(loop: EventLoop, refuse: @escaping RefusalRenderer, limits: ServerLimits) {
        self.loop = loop
        self.refuse = refuse
        self.limits = limits
    }

    /// Gives the worker its runners (`RunnerPool.attach`), before it binds.
    func attach(accept: @escaping (HTTPRequest, HTTPConnection) -> Void, answered: @escaping (HTTPConnection, HTTPResponse) -> Void,
                stop: @escaping () -> Void) {
        self.accept = accept
        answeredByRunners = answered
        stopRunners = stop
    }

    /// The answer of a request started without a task (`LaterAnswer`): written through the runners (which count it
    /// done), or, once the worker is freed, dropped.
    func answeredLater(_ conn: HTTPConnection, _ response: HTTPResponse) {
        guard loop.inLoop else {
            loop.execute { self.answeredLater(conn, response) }
            return
        }
        if let answeredByRunners { answeredByRunners(conn, response) } else { finish(conn, response) }
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

    /// Answers a whole request on this loop, through the runners of the server's handler (`RunnerPool.accept`).
    func handle(_ request: HTTPRequest, on conn: HTTPConnection) {
        accept?(request, conn)
    }

    /// Counts a request handed to a runner (loop thread).
    func began() {
        inFlightCount.add(1, ordering: .relaxed)
    }

    /// Replies unless the worker is gone, and counts the request done (loop thread).
    func finish(_ conn: HTTPConnection, _ response: HTTPResponse) {
        inFlightCount.subtract(1, ordering: .relaxed)
        if !freed { conn.finish(response) }
    }

    /// Counts a request that was handed to a runner but is dropped unanswered (`free`).
    func dropped() {
        inFlightCount.subtract(1, ordering: .relaxed)
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
        if answered.isEmpty { loop.atEndOfTurn(self) }
        answered.append(conn)
    }

    /// The end-of-turn hook of `flushAtEndOfTurn` (the loop holds the worker until it runs): `writeAnswered`.
    func endOfTurn(_ task: Int) {
        writeAnswered()
    }

    /// Writes the answers of `flushAtEndOfTurn`: a connection whose write brings the next pipelined request and its
    /// answer joins a new list, written in the same drain (the loop runs hooks until none is left).
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
            // Requests no runner took: their connections are closed, nothing is answered; idle runners end. The pool
            // holds the worker: letting go of it here breaks that cycle.
            self.stopRunners?()
            self.accept = nil
            self.answeredByRunners = nil
            self.stopRunners = nil
            return true
        }
    }
}
