import CEvent
import COpenSSL
import FoundationEssentials
import Glibc
import PosternIO

/// One keep-alive HTTP/1.1 connection to the upstream, on one loop: a nonblocking socket (TLS through OpenSSL
/// on the same socket for `https`), carrying one request, or several pipelined GETs, at a time.
///
/// Requests are serialized one after another into one reusable buffer, which the pool flushes with one `send`
/// at the end of the loop's turn (write readiness is waited for only when the socket is full), so that the
/// GETs a turn pipelines on the connection cost one system call together. Their answers come back in order
/// and are handed to their calls in order. The socket's read event stays armed for the connection's life, and
/// each answer is parsed where it was read (`UpstreamResponseParser`). The connection connects lazily, on its
/// first request, and again when a request finds it closed before anything was sent. While it idles in the
/// pool, a close or stray bytes from the peer close it and leave the pool (`IdlePool`).
///
/// A host name's connection tries the addresses of its `AddressPlan` in order (round robin over the name's
/// addresses that work, `ResolverCache`): a connect that fails (refused, unreachable, a failed TLS handshake, or
/// no answer within `connectAttemptTimeout` while another address is left) moves to the next address for the same
/// requests, and is reported so that new connections leave that address out for a while. Nothing of a request is
/// written before the connection is open, so no request is ever sent twice by this; a failure after that is the
/// request's.
///
/// Bytes no written request asked for are never read as an answer: bytes after the last answer in flight
/// close the connection (before that answer goes to its call, so that the pool does not take it back), and
/// bytes, or a close, that come before anything of the first call's request was written drop the socket
/// and send the queued requests on a fresh one (once; nothing of them was sent, so any method may go).
///
/// When the connection fails (closed by the peer, an invalid answer, a timeout), the call whose answer was
/// being read gets that failure and every call pipelined behind it gets `.closed`: their GETs are retried once
/// on a fresh connection by the pool.
///
/// Ownership: the libevent events carry `self` unretained; the connection frees them (in `close()` or
/// `deinit`) before it goes away, so a callback never sees a freed object. Not thread-safe: every method runs
/// on `loop`'s thread, except `deinit`, which may run anywhere (event_free is thread-safe with
/// `evthread_use_pthreads`).
final class UpstreamConnection: @unchecked Sendable {
    /// Where the connection is in its life.
    private enum State {
        /// No socket (never connected, or closed and not yet reopened).
        case closed
        /// Looking the host name up.
        case resolving
        /// TCP connect in progress.
        case connecting
        /// TLS handshake in progress.
        case handshaking
        /// Connected (and TLS established).
        case open
    }

    private let loop: EventLoop
    private let endpoint: UpstreamEndpoint
    private let tls: TLSClientContext?
    private var state = State.closed
    private var fd: Int32 = -1
    private var ssl: OpaquePointer?
    /// The socket's read event (persistent while the socket is open).
    private var readEvent: OpaquePointer?
    /// The socket's write event (one-shot: connect completion, a full socket, TLS wanting to write).
    private var writeEvent: OpaquePointer?
    /// The calls' deadline (created once; armed lazily, see `armedFor`).
    private var timeoutEvent: OpaquePointer?
    /// The connect attempt's deadline while another address is left to try (created on first use).
    private var connectTimeoutEvent: OpaquePointer?
    private var connectTimeoutArmed = false
    private var resolving: DNSLookup?
    /// The addresses of the host name this connection tries, in order (empty for a numeric host), the next one to
    /// try, and the one being connected to or connected.
    private var plan = AddressPlan(addresses: [])
    private var nextAddress = 0
    private var address: ResolvedAddress?
    private let parser: UpstreamResponseParser
    /// The serialized requests not yet written (reused: no allocation once it has grown to the usual size).
    private let output = RawBytes(capacity: 1024)
    /// Bytes of `output` already written.
    private var written = 0
    /// Bytes of requests serialized, and written, over the connection's life (a call's request has started to
    /// go out once `sentBytes` passed its `start`).
    private var queuedBytes: UInt64 = 0
    private var sentBytes: UInt64 = 0
    /// The queued requests were already moved to a fresh socket once since the last answer (`resend`).
    private var resent = false
    /// A TLS read that wanted to write first (renegotiation or key update): retried when the socket is writable.
    private var readWantsWrite = false
    /// The read buffer, shared by the loop's connections (taken when the socket opens): each read is parsed
    /// before the callback returns, and the parser copies what it keeps, so no connection needs its own.
    private var readBuffer: ReadBuffer?
    private var buffer: UnsafeMutableRawBufferPointer { readBuffer!.bytes }
    /// The calls whose requests were queued on the connection, in the order their answers come; `first` is the one
    /// whose answer is being read. Each is resumed exactly once.
    private var calls: [Call] = []
    private var first = 0
    /// The earliest deadline of the calls in flight (monotonic nanoseconds; .max when none is).
    private var earliestDeadline = UInt64.max
    /// When the timeout event is armed to fire (monotonic nanoseconds; .max when it is not armed): never after
    /// `earliestDeadline`, and often before it. The event stays armed when a call ends, and a call whose deadline
    /// is later than it arms nothing: at steady load a connection arms its timer about once per timeout instead of
    /// once per request. Fired before `earliestDeadline`, it is armed again for it (`timedOut`).
    private var armedFor = UInt64.max

    /// When the connection last went back to the idle pool (monotonic nanoseconds).
    var idleSince: UInt64 = 0
    /// Requests completed on this connection (0 = fresh).
    var completed = 0
    /// True when the connection cannot carry another request (closed by the peer, by an error or by a
    /// `Connection: close` answer).
    private(set) var closedByPeer = false
    /// True while the connection sits in the pool's idle list (set by the pool).
    var pooled = false
    /// The pool the connection belongs to, told when the last call in flight got its outcome (`drained`: it takes
    /// the connection back) and of a completion's outcome (`delivered`: it hands it over at the end of the turn), on
    /// the loop thread.
    ///
    /// Unowned, and called only while a call is in flight, which keeps the pool alive: a task waiting for an answer
    /// is in a method of the pool, and a completion's call holds the pool (`Call.pool`). Not weak: a weak reference
    /// gives its object a side table, and every retain of the pool on the request path then takes the runtime's
    /// slow path.
    private unowned let pool: UpstreamHTTPClient
    /// The pool's idle connections, which this one leaves when the peer closes it while it is pooled. Weak: the pool
    /// may be going away, on another thread, at that moment.
    private weak var idlePool: IdlePool?

    /// A call in flight: who waits for the answer, until when, and where its request starts in the bytes
    /// queued on the connection (`queuedBytes`).
    private struct Call {
        let waiter: UpstreamWaiter
        let deadline: UInt64
        let start: UInt64
        /// The connection itself, for a call whose waiter is a completion: a task waiting for its answer holds the
        /// connection in its frame, a completion does not, so the call does, until the completion has run (a
        /// cycle broken when the call leaves the queue; released at the end of the turn, off libevent's callbacks).
        let owner: UpstreamConnection?
        /// The pool, for a call whose waiter is a completion, for the same reason as `owner` (a task waiting for its
        /// answer is in a method of the pool).
        let pool: UpstreamHTTPClient?
        /// For a completion's GET on a reused connection: the request, retried once on `.closed` (`UpstreamDelivery`).
        let retry: UpstreamRequest?
    }

    /// Calls in flight (sent, or queued to be sent at the end of the turn).
    var inFlight: Int { calls.count - first }

    /// True while another GET may be pipelined behind the calls in flight: the connection is not closed or
    /// failing, and it holds fewer than `depth` calls.
    func canPipeline(depth: Int) -> Bool {
        !closedByPeer && inFlight > 0 && inFlight < depth
    }

    /// True when bytes wait to be written (the pool flushes them at the end of the turn).
    var hasUnwritten: Bool { written < output.count }

    /// The read buffer's size: an answer larger than this arrives in several reads (and several pipelined
    /// answers of the usual size arrive in one).
    static let readBufferSize = 64 * 1024

    /// One loop's upstream read buffer.
    final class ReadBuffer {
        let bytes = UnsafeMutableRawBufferPointer.allocate(byteCount: UpstreamConnection.readBufferSize, alignment: 16)
        deinit { bytes.deallocate() }
    }
    private static let readBufferKey = EventLoop.LocalKey()

    /// A connection to `endpoint` (not connected yet) whose answers keep `keptHeaders` (all when nil) and whose
    /// answer bodies above `maxResponseBytes` fail.
    init(pool: UpstreamHTTPClient, idlePool: IdlePool, loop: EventLoop, endpoint: UpstreamEndpoint,
         tls: TLSClientContext?, keptHeaders: [StaticString]?,
         maxResponseBytes: Int = UpstreamHTTPClient.defaultMaxResponseBytes) {
        self.pool = pool
        self.idlePool = idlePool
        self.loop = loop
        self.endpoint = endpoint
        self.tls = tls
        parser = UpstreamResponseParser(keptHeaders: keptHeaders, maxBodyBytes: maxResponseBytes)
    }

    deinit {
        closeSocket()
        resolving?.cancel()
        if let timeoutEvent { event_free(timeoutEvent) }
        if let connectTimeoutEvent { event_free(connectTimeoutEvent) }
    }

    /// How long a connect to one of a host name's addresses (TCP and TLS handshake) may take while another address
    /// is left to try: 2 s, a lost SYN retransmitted once. The last address has the calls' own deadlines.
    static let connectAttemptTimeout: Double = 2

    // MARK: Requests

    /// Serializes `request` for the upstream after any request still waiting to be written: request line,
    /// `Host`, its headers, `Content-Length`, body. A header whose name or value holds CR, LF or NUL is not sent
    /// (it would split the request). `versionAndHost` is `" HTTP/1.1\r\nHost: <host>\r\n"`, built once by the pool.
    private func serialize(_ request: UpstreamRequest, versionAndHost: [UInt8]) {
        if written == output.count {
            output.count = 0
            written = 0
        }
        let before = output.count
        defer { queuedBytes += UInt64(output.count - before) }
        output.append(request.method.description)
        output.append(0x20)
        output.append(endpoint.basePath)
        output.append(request.target)
        output.append(versionAndHost)
        // The fields carried as values first (`request.headers`' order).
        request.headFields?.write(to: HeadWriter(output))
        for (name, value) in request.otherHeaders where HeadWriter.safe(name) && HeadWriter.safe(value) {
            output.append(name)
            output.append(0x3A, 0x20)
            output.append(value)
            output.append(13, 10)
        }
        if !request.body.isEmpty || request.method == .post || request.method == .patch || request.method == .put {
            output.append(HeadBytes.contentLength)
            output.append(String(request.body.count))
            output.append(13, 10)
        }
        output.append(13, 10)
        request.body.withUnsafeBytes { raw in
            if let start = raw.baseAddress, raw.count > 0 { output.append(start, raw.count) }
        }
    }

    /// `" HTTP/1.1\r\nHost: <hostHeader>\r\n"`: what follows the target in every request to one upstream.
    static func versionAndHost(_ hostHeader: String) -> [UInt8] {
        HeadBytes.versionAndHost + Array(hostHeader.utf8) + HeadBytes.crlf
    }

    /// Queues `request` behind the calls in flight and gives `waiter` its outcome once: its answer, a failure,
    /// or `.timeout` at `deadline` (monotonic nanoseconds). The bytes go out when the pool calls `flush` at the
    /// end of the turn, or as soon as a connection still to be opened is connected.
    ///
    /// `retryable`: a completion's GET on a reused connection, whose `.closed` outcome goes to the pool with the
    /// request, to be sent once more (`UpstreamDelivery.retry`).
    func queue(_ request: UpstreamRequest, versionAndHost: [UInt8], _ waiter: UpstreamWaiter, deadline: UInt64,
               retryable: Bool = false) {
        let idle = inFlight == 0
        let start = queuedBytes
        serialize(request, versionAndHost: versionAndHost)
        let completes: Bool
        if case .completion = waiter { completes = true } else { completes = false }
        calls.append(Call(waiter: waiter, deadline: deadline, start: start, owner: completes ? self : nil,
                          pool: completes ? pool : nil, retry: retryable ? request : nil))
        if idle { parser.reset() }
        if deadline < earliestDeadline {
            earliestDeadline = deadline
            if deadline < armedFor { armTimeout() }
        }
        switch state {
        case .open, .resolving, .connecting, .handshaking:
            // Open: written by `flush`; on the way to open: written once connected.
            break
        case .closed:
            // Never connected, or closed by the peer while idle: nothing was sent yet, so any method may open a
            // fresh socket.
            closedByPeer = false
            connect()
        }
    }

    /// Writes what the calls queued (the pool's end-of-turn flush); a full socket finishes it when writable.
    ///
    /// A reused connection's read event stays armed while it idles, and the loop runs every socket callback of a turn
    /// before the turn's end (`EventLoop.requestDrain`): stray bytes or a close that reached it before this turn already
    /// closed it and took it out of the pool (`closedIdle`). Only what came during the turn is unseen; when the turn has
    /// run longer than `peekAfterTurnMicroseconds` (a loop thread preempted on a busy machine), a nonblocking peek
    /// checks before the first byte of a request goes out, and stray bytes or a close then drop the socket and the
    /// requests go out on a fresh one. Plain sockets only (on TLS, records that are not data, such as session tickets,
    /// may wait there).
    func flush() {
        guard state == .open && hasUnwritten else { return }
        if ssl == nil, completed > 0, inFlight > 0, sentBytes <= calls[first].start,
           loop.turnAgeMicroseconds > UpstreamConnection.peekAfterTurnMicroseconds, peerHasClosedOrWritten() {
            resendOrFail(.closed)
            return
        }
        writeOutput()
    }

    /// How long a turn of the loop runs (µs) before `flush` peeks at a reused connection: 1 ms. Bytes an upstream sends
    /// within 9 ms of an answer have reached the socket before the turn that reuses the connection 10 ms after it
    /// (`UpstreamHTTPClient.reuseQuiet`), or this peek sees them.
    static let peekAfterTurnMicroseconds = 1_000

    /// True when the peer has closed this idle connection or written to it (end of stream or stray bytes
    /// already queued on the socket), seen with a nonblocking peek before the read event ran.
    func peerHasClosedOrWritten() -> Bool {
        if closedByPeer || state == .closed { return true }
        var byte: UInt8 = 0
        let n = recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return n >= 0 || (errno != EAGAIN && errno != EWOULDBLOCK)
    }

    /// Closes the connection now (no call may be in flight).
    func free() {
        closedByPeer = true
        closeSocket()
    }

    // MARK: Connecting

    private func connect() {
        address = nil
        if let numeric = SocketAddressValue(numericHost: endpoint.host, port: endpoint.port) {
            open(numeric)
            return
        }
        state = .resolving
        let request = DNSLookup { [weak self] plan, error in
            self?.resolved(plan, error: error)
        }
        resolving = request
        request.start(host: endpoint.host, loop: loop)
    }

    /// The resolver's answer (nil: the name is unknown): connects to the plan's first address.
    private func resolved(_ plan: AddressPlan?, error: String) {
        guard state == .resolving else { return }
        resolving = nil
        state = .closed
        guard let plan else {
            fail(.unreachable("cannot resolve \(endpoint.host): \(error)"))
            return
        }
        self.plan = plan
        nextAddress = 0
        openNextAddress(after: "no address")
    }

    /// Connects to the plan's next address, or fails the calls with `reason` (the last connect's failure) when
    /// none is left.
    private func openNextAddress(after reason: String) {
        guard nextAddress < plan.addresses.count else {
            fail(.unreachable(reason))
            return
        }
        let next = plan.addresses[nextAddress]
        nextAddress += 1
        address = next
        open(next.socketAddress(port: endpoint.port))
    }

    /// The connect (or TLS handshake) to the current address failed, before anything of a request was written:
    /// the address is reported, and the calls go on to the plan's next address, or fail with `reason`.
    private func connectFailed(_ reason: String) {
        closeSocket()  // reports the address (state connecting or handshaking)
        guard inFlight > 0 else { return }
        openNextAddress(after: reason)
    }

    private func open(_ address: SocketAddressValue) {
        let socketFD = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socketFD >= 0 else {
            fail(.unreachable("socket: \(String(cString: strerror(errno)))"))
            return
        }
        fd = socketFD
        if readBuffer == nil { readBuffer = loop.local(Self.readBufferKey) { ReadBuffer() } }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        // Unretained: the connection frees both events (closeSocket, deinit) before it goes away.
        let me = Unmanaged.passUnretained(self).toOpaque()
        readEvent = event_new(loop.base, fd, Int16(EV_READ | EV_PERSIST), { _, _, arg in
            guard let arg else { return }
            Unmanaged<UpstreamConnection>.fromOpaque(arg).takeUnretainedValue().readable()
        }, me)
        writeEvent = event_new(loop.base, fd, Int16(EV_WRITE), { _, _, arg in
            guard let arg else { return }
            Unmanaged<UpstreamConnection>.fromOpaque(arg).takeUnretainedValue().writable()
        }, me)
        state = .connecting  // also when connect fails at once: closeSocket then reports the failed connect
        if nextAddress < plan.addresses.count { armConnectTimeout() }
        let rc = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        if rc == 0 {
            connected()
        } else if errno == EINPROGRESS {
            event_add(writeEvent, nil)
        } else {
            connectFailed("connection failed")
        }
    }

    /// Arms the connect attempt's deadline (`connectAttemptTimeout`).
    private func armConnectTimeout() {
        if connectTimeoutEvent == nil {
            connectTimeoutEvent = event_new(loop.base, -1, 0, { _, _, arg in
                guard let arg else { return }
                let connection = Unmanaged<UpstreamConnection>.fromOpaque(arg).takeUnretainedValue()
                connection.connectTimeoutArmed = false
                if connection.state == .connecting || connection.state == .handshaking {
                    connection.connectFailed("connect timed out")
                }
            }, Unmanaged.passUnretained(self).toOpaque())
        }
        let seconds = UpstreamConnection.connectAttemptTimeout
        var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
        event_add(connectTimeoutEvent, &tv)
        connectTimeoutArmed = true
    }

    private func connected() {
        event_add(readEvent, nil)
        if plan.retrying, let address { HostResolver.shared.connectSucceeded(host: endpoint.host, address: address) }
        guard let tls else {
            disarmConnectTimeout()
            state = .open
            writeOutput()
            return
        }
        guard let made = TLSClientHandshake.start(tls, fd: fd, serverName: endpoint.host) else {
            fail(.unreachable("cannot create a TLS session"))
            return
        }
        ssl = made
        state = .handshaking
        handshake()
    }

    private func handshake() {
        guard let ssl else { return }
        switch TLSClientHandshake.step(ssl) {
        case .done:
            disarmConnectTimeout()
            state = .open
            writeOutput()
        case .wantsRead:
            break  // the read event is armed
        case .wantsWrite:
            event_add(writeEvent, nil)
        case .refused(let reason), .failed(let reason):
            connectFailed("TLS handshake with \(endpoint.host) failed: \(reason)")
        }
    }

    // MARK: Events

    private func writable() {
        switch state {
        case .connecting:
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            if error != 0 {
                connectFailed("connection failed")
                return
            }
            connected()
        case .handshaking:
            handshake()
        case .open:
            if readWantsWrite {
                readWantsWrite = false
                readable()
            }
            if inFlight > 0 && hasUnwritten { writeOutput() }
        case .closed, .resolving:
            break
        }
    }

    private func readable() {
        switch state {
        case .handshaking:
            handshake()
            return
        case .open:
            break
        case .closed, .resolving, .connecting:
            return
        }
        // A TLS write that wanted to read first goes on now.
        if ssl != nil, inFlight > 0, hasUnwritten { writeOutput() }
        while state == .open {
            let n = receive()
            if n > 0 {
                guard answerCanStart() else { return }
                guard parse(UnsafeRawBufferPointer(rebasing: buffer[0..<n])) else { return }
                // A short plain read emptied the socket: don't spend a read on EAGAIN.
                if ssl == nil && n < buffer.count { return }
                if let ssl, SSL_pending(ssl) == 0, n < buffer.count { return }
            } else if n == 0 {
                endOfStream()
                return
            } else {
                if errno == EAGAIN || errno == EWOULDBLOCK { return }
                endOfStream()
                return
            }
        }
    }

    /// Parses bytes read: each answer completed goes to its call, and the bytes after it start the next call's
    /// answer. False when the connection ended (failed, closed, or no call left for the bytes that remain).
    private func parse(_ read: UnsafeRawBufferPointer) -> Bool {
        var bytes = read
        while true {
            switch parser.feed(bytes) {
            case .needMore:
                return true
            case .complete(let leftover):
                // Bytes after the answer that no written request asked for: the connection can no longer be
                // trusted. Closed before the answer goes to its call when no call is left behind it, so that the
                // pool does not take it back.
                let stray = leftover > 0 && (inFlight == 1 || sentBytes <= calls[first + 1].start)
                if stray && inFlight == 1 {
                    closedByPeer = true
                    closeSocket()
                }
                let open = answered()
                if stray {
                    // The calls behind it (none of their requests went out) go out on a fresh socket.
                    if open && inFlight > 0 { resendOrFail(.closed) }
                    return false
                }
                if leftover == 0 { return open && state == .open }
                guard open, inFlight > 0 else { return false }
                bytes = UnsafeRawBufferPointer(rebasing: bytes[(bytes.count - leftover)...])
            case .invalid(let reason):
                fail(.badResponse("invalid HTTP answer (\(reason))"))
                return false
            case .truncated:
                fail(.closed)
                return false
            }
        }
    }

    /// Reads into `buffer`: > 0 bytes, 0 at the end of the stream, < 0 with `errno` (EAGAIN: nothing yet).
    private func receive() -> Int {
        guard let ssl else {
            return recv(fd, buffer.baseAddress, buffer.count, 0)
        }
        let read = TLSTransfer.read(ssl, into: buffer.baseAddress, count: buffer.count)
        if case .wantsWrite = read {
            readWantsWrite = true
            event_add(writeEvent, nil)
        }
        return read.received
    }

    /// Whether what was read (bytes, or the end of the stream) can belong to the first call's answer. If not, the
    /// connection is closed (no call in flight: it can no longer be trusted), or the calls go out again on a fresh
    /// one (nothing of the first call's request went out yet, so nothing it asked was answered).
    @inline(__always)
    private func answerCanStart() -> Bool {
        guard inFlight > 0 else {
            closedIdle()
            return false
        }
        guard sentBytes > calls[first].start else {
            resendOrFail(.closed)
            return false
        }
        return true
    }

    private func endOfStream() {
        guard answerCanStart() else { return }
        switch parser.feedEndOfStream() {
        case .complete:
            closedByPeer = true
            closeSocket()
            _ = answered()
            fail(.closed)
        case .invalid(let reason):
            fail(.badResponse("invalid HTTP answer (\(reason))"))
        case .needMore, .truncated:
            fail(.closed)
        }
    }

    private func writeOutput() {
        while written < output.count {
            let n: Int = {
                // Non-nil: the buffer's memory is allocated once, and written < count.
                let start = UnsafeRawPointer(output.bytes.baseAddress!) + written
                let count = output.count - written
                guard let ssl else { return send(fd, start, count, Int32(MSG_NOSIGNAL)) }
                return TLSTransfer.write(ssl, from: start, count: count)
            }()
            if n > 0 {
                written += n
                sentBytes += UInt64(n)
                continue
            }
            if errno == EAGAIN || errno == EWOULDBLOCK {
                event_add(writeEvent, nil)
                return
            }
            if errno == EINPROGRESS || errno == EINTR { return }
            // The peer reset the connection under the request (or before it: then it goes out on a fresh socket).
            if inFlight > 0 && sentBytes <= calls[first].start {
                resendOrFail(.closed)
            } else {
                fail(.closed)
            }
            return
        }
    }

    // MARK: Outcomes

    /// Hands the answer just parsed to the first call in flight, and gets the parser ready for the next one.
    /// False when the answer closes the connection (`Connection: close`, or delimited by the close): the calls
    /// behind it then fail with `.closed`.
    private func answered() -> Bool {
        completed += 1
        resent = false
        let keepAlive = parser.keepAlive
        let (headers, body) = parser.takeHeadersAndBody()
        let response = UpstreamResponse(status: parser.status, headers: headers, content: body)
        parser.reset()
        let call = calls[first]
        first += 1
        if !keepAlive {
            closedByPeer = true
            closeSocket()
        }
        resumeFirst(call, .success(response))
        if !keepAlive {
            fail(.closed)
            return false
        }
        return true
    }

    /// Closes the connection: the first call in flight gets `failure`, the calls behind it `.closed` (nothing of
    /// their answers was read: the pool retries their GETs once on a fresh connection).
    private func fail(_ failure: UpstreamFailure) {
        closedByPeer = true
        closeSocket()
        written = 0
        output.count = 0
        // Unreachable: nothing was sent, and the calls behind the first would meet the same.
        let behind: UpstreamFailure
        if case .unreachable = failure { behind = failure } else { behind = .closed }
        var outcome = failure
        while first < calls.count {
            let call = calls[first]
            first += 1
            resumeFirst(call, .failure(outcome))
            outcome = behind
        }
    }

    /// The socket is dropped before anything of the first call's request went out on it (bytes nothing asked
    /// for, or a close): the queued requests go out on a fresh socket, once since the last answer; the second
    /// time the calls get `failure` as `fail` gives it.
    private func resendOrFail(_ failure: UpstreamFailure) {
        guard !resent else {
            fail(failure)
            return
        }
        resent = true
        closeSocket()
        // Only requests none of which went out are left in `output`, from `written` on.
        parser.reset()
        closedByPeer = false
        connect()
    }

    /// The peer closed (or wrote to) the connection while no request was in flight.
    private func closedIdle() {
        closedByPeer = true
        closeSocket()
        if pooled { idlePool?.closed(self) }
    }

    /// Gives `call`, just taken off the front of the queue, its outcome; when it was the last one, the pool takes
    /// the connection back. The timeout event is left as it is (`armedFor`), armed for this call's deadline or
    /// earlier. `result` is consumed: the waiter takes it without a copy (a copy of an answer goes through its
    /// type's value witness, a retain of each of its parts). Either kind of waiter runs after this returns (a
    /// task when the loop runs its jobs, a completion at the end of the turn), never inside the connection's
    /// callbacks.
    private func resumeFirst(_ call: Call, _ result: consuming Result<UpstreamResponse, UpstreamFailure>) {
        if first == calls.count {
            calls.removeAll(keepingCapacity: true)
            first = 0
            earliestDeadline = .max
            give(call, result)
            pool.drained(self)
            return
        }
        if call.deadline == earliestDeadline && !closedByPeer {
            earliestDeadline = calls[first...].lazy.map(\.deadline).min() ?? .max
        }
        give(call, result)
    }

    /// Hands `result` to `call`'s waiter: resumes its task, or passes it to the pool for its completion.
    private func give(_ call: Call, _ result: consuming Result<UpstreamResponse, UpstreamFailure>) {
        switch call.waiter {
        case .task(let continuation):
            continuation.resume(returning: result)
        case .completion(let completion):
            pool.delivered(UpstreamDelivery(completion: completion, outcome: result, connection: call.owner,
                                            retry: call.retry, deadline: call.deadline))
        }
    }

    /// Arms the timeout event for `earliestDeadline`.
    private func armTimeout() {
        if timeoutEvent == nil {
            // Unretained: the connection frees the event in deinit, so the callback never outlives it.
            timeoutEvent = event_new(loop.base, -1, 0, { _, _, arg in
                guard let arg else { return }
                let connection = Unmanaged<UpstreamConnection>.fromOpaque(arg).takeUnretainedValue()
                connection.timedOut()
            }, Unmanaged.passUnretained(self).toOpaque())
        }
        let now = MonotonicInstant.now.nanoseconds
        let left = earliestDeadline > now ? earliestDeadline - now : 0
        var tv = timeval(tv_sec: Int(left / 1_000_000_000), tv_usec: Int(left % 1_000_000_000 / 1000))
        event_add(timeoutEvent, &tv)
        armedFor = earliestDeadline
    }

    /// A call's deadline passed: as an answer cannot be skipped, the connection closes; the calls whose deadline
    /// passed get `.timeout`, the others `.closed` (nothing of their answers was read: their GETs are retried).
    private func timedOut() {
        let fired = armedFor
        armedFor = .max
        guard inFlight > 0 else { return }
        // Armed for a call that has ended since: the calls now in flight have later deadlines.
        guard fired >= earliestDeadline else {
            armTimeout()
            return
        }
        resolving?.cancel()
        resolving = nil
        closedByPeer = true
        closeSocket()
        written = 0
        output.count = 0
        // The timer may fire a little before the deadline by the precise clock (libevent reads a coarse one). A call
        // with less than `minimumRetryTime` left times out too: its retry could not be answered in time, and the
        // calls of one turn have deadlines a hair apart (more when the loop's thread was preempted between them).
        let passed = max(MonotonicInstant.now.nanoseconds, earliestDeadline) &+ UpstreamConnection.minimumRetryTime
        while first < calls.count {
            let call = calls[first]
            first += 1
            resumeFirst(call, .failure(call.deadline <= passed ? .timeout : .closed))
        }
    }

    /// The least time left (nanoseconds) for which a call pipelined behind a timed-out one is retried (50 ms).
    static let minimumRetryTime: UInt64 = 50_000_000

    /// Disarms the connect attempt's deadline, if armed.
    private func disarmConnectTimeout() {
        guard connectTimeoutArmed else { return }
        connectTimeoutArmed = false
        if let connectTimeoutEvent { event_del(connectTimeoutEvent) }
    }

    private func closeSocket() {
        if let readEvent { event_free(readEvent) }
        if let writeEvent { event_free(writeEvent) }
        readEvent = nil
        writeEvent = nil
        readWantsWrite = false
        if let ssl { SSL_free(ssl) }
        ssl = nil
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        disarmConnectTimeout()
        if state == .connecting || state == .handshaking, let address {
            // Refused, unreachable, timed out, or the TLS handshake failed: new connections leave it out a while.
            HostResolver.shared.connectFailed(host: endpoint.host, address: address)
        }
        if state == .resolving {
            resolving?.cancel()
            resolving = nil
        }
        state = .closed
    }
}
