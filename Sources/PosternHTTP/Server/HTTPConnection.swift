import CEvent
import FoundationEssentials
import Glibc
import PosternIO

/// One client connection of the server: a nonblocking socket with one persistent read event, input parsed in
/// place (`HTTPRequestAssembler`, on Node's llhttp), and answers written with one `sendmsg` each.
///
/// A read goes into the worker's scratch buffer, shared by all its connections, and is parsed there at once: a
/// connection keeps bytes of its own only when some are left unparsed (requests pipelined behind one in flight),
/// as nginx frees an idle connection's buffers. An idle keep-alive connection holds no input buffer.
///
/// Requests on a connection are answered in order: while one is being handled, parsing stops (the bytes
/// that follow stay buffered) and resumes once its answer is written. The read event stays armed the whole
/// time (no `epoll_ctl` per request); a one-shot write event is armed only when the socket cannot take a
/// whole answer at once. Loop thread only; the handler's task keeps the object alive until it replies, and a
/// reply after the connection closed is dropped.
final class HTTPConnection: @unchecked Sendable {
    /// The socket (closed by `close()`).
    let fd: Int32
    /// The peer's IP address.
    let peer: String
    private let worker: ServerWorker
    private let limits: ServerLimits
    /// Set once the socket is closed: nothing touches it or its events afterwards.
    private(set) var closed = false
    /// Counted in the worker's open connections (it has sent a whole request).
    var counted = false

    // Events (created once, freed in close()).
    private var readEvent: OpaquePointer?
    private var writeEvent: OpaquePointer?
    private var deadlineEvent: OpaquePointer?
    /// The inactivity timeout, for the write event (a slow reader).
    private var inactivity: timeval
    /// The same timeout in milliseconds, for the worker's sweep (`closeIfInactive`).
    private let inactivityMilliseconds: Int64
    /// When bytes of a request last arrived or an answer was last written out (`coarseMilliseconds`): the idle
    /// time counts from then. Bytes outside any request (empty lines before one) do not count: a connection that
    /// sends only those is closed after the inactivity timeout like a silent one. A field, not a timer on the read
    /// event: re-arming a libevent timer on every read and every answer cost two timer-heap updates per request.
    private var lastActivity: Int64
    private var deadlineArmed = false
    private var readPaused = false
    /// The peer sent EOF: every whole request that arrived before it is answered, then the connection closes.
    private var peerGone = false

    // Input: bytes [start, end) of `buffer` are read but not parsed yet. `buffer` is the connection's own (nil
    // while it has nothing left over), or the worker's scratch buffer during the `drive()` of a read into it.
    private var buffer: UnsafeMutableRawPointer?
    private var capacity = 0
    private var start = 0
    private var end = 0
    /// `buffer` is the worker's scratch buffer (during one `readable()`), not the connection's own.
    private var borrowed = false
    /// Parses the input into requests.
    private let assembler: HTTPRequestAssembler
    /// Bytes of a request have arrived and it is not whole yet.
    private var messageOpen: Bool { assembler.messageOpen }

    // State of the connection.
    /// A request was handed to the handler (or refused) and its answer is not written yet.
    private var busy = false
    /// Inside `drive()` (a reply written inline must not start a second, nested parse).
    private var driving = false
    /// A request is with the handler: exactly one answer may come back.
    private var awaitingAnswer = false
    /// Close once the answer being written is out.
    private var closeAfterAnswer = false
    /// The last answer is out and the write side shut: reading and discarding until the peer closes.
    private var lingering = false
    /// The server refused a request itself (the client may still be sending what follows it).
    private var refused = false
    /// The request being handled is a `HEAD` (its answer carries no body).
    private var answeringHead = false
    /// The request being handled came as HTTP/1.0 with keep-alive (its answer says so).
    private var keepAlive10 = false

    // Output: `head` then `outBody`, `sent` bytes of both written so far.
    /// The head being written, from the worker's pool (`ServerWorker.takeHeadBuffer`) while an answer is out, given
    /// back once it is written: an idle connection holds none.
    private var head: HeadBuffer?
    private var outBody = HTTPBody.empty
    private var sent = 0
    private var writeBlocked = false

    /// The connection's own input buffer at first; bytes queued behind a request in flight stop being read at
    /// `maxQueued` (also the size of the worker's scratch buffer, `ServerWorker.scratch`).
    private static let initialCapacity = 4096
    static let maxQueued = 64 * 1024

    /// Takes over an accepted nonblocking socket and starts reading it.
    init(fd: Int32, peer: String, worker: ServerWorker, base: OpaquePointer, limits: ServerLimits) {
        self.fd = fd
        self.peer = peer
        self.worker = worker
        self.limits = limits
        let ms = limits.inactivityMilliseconds
        inactivity = timeval(tv_sec: ms / 1000, tv_usec: (ms % 1000) * 1000)
        inactivityMilliseconds = Int64(ms)
        lastActivity = HTTPConnection.coarseMilliseconds()
        assembler = HTTPRequestAssembler(limits: limits, peer: peer)
        // The connection owns its events and its buffer and frees them in close()/deinit: the unretained
        // pointer is valid whenever a callback runs. The worker keeps the connection until close().
        let me = Unmanaged.passUnretained(self).toOpaque()
        readEvent = event_new(base, fd, Int16(EV_READ | EV_PERSIST), { _, what, arg in
            guard let arg else { return }
            let conn = Unmanaged<HTTPConnection>.fromOpaque(arg).takeUnretainedValue()
            conn.readable()
        }, me)
        writeEvent = event_new(base, fd, Int16(EV_WRITE), { _, what, arg in
            guard let arg else { return }
            let conn = Unmanaged<HTTPConnection>.fromOpaque(arg).takeUnretainedValue()
            if what & Int16(EV_TIMEOUT) != 0 { conn.close() } else { conn.writable() }
        }, me)
        deadlineEvent = event_new(base, -1, 0, { _, _, arg in
            guard let arg else { return }
            Unmanaged<HTTPConnection>.fromOpaque(arg).takeUnretainedValue().deadlinePassed()
        }, me)
        event_add(readEvent, nil)
    }

    deinit {
        if !borrowed { buffer?.deallocate() }
        head?.deallocate()
    }

    /// Closes the socket and frees the events; the worker forgets the connection (loop thread).
    func close() {
        guard !closed else { return }
        closed = true
        if let readEvent { event_free(readEvent) }
        if let writeEvent { event_free(writeEvent) }
        if let deadlineEvent { event_free(deadlineEvent) }
        readEvent = nil
        writeEvent = nil
        deadlineEvent = nil
        Glibc.close(fd)
        outBody = .empty
        worker.connectionClosed(self)
    }

    // MARK: Reading

    /// The socket is readable: one read, then parse (level-triggered: more comes next turn). With nothing left
    /// over from before, the read goes into the worker's scratch buffer and what is not parsed at once is copied
    /// into a buffer of the connection's own; else it is appended to that buffer.
    private func readable() {
        if lingering { discard(); return }
        let n: Int
        if start == end {
            let scratch = worker.scratch
            n = read(fd, scratch, HTTPConnection.maxQueued)
            guard n > 0 else { readFailed(n); return }
            if let own = buffer { own.deallocate() }
            buffer = scratch
            borrowed = true
            capacity = HTTPConnection.maxQueued
            start = 0
            end = n
            drive()
            keepLeftover()
        } else {
            if end == capacity && !makeRoom() {
                pauseReading()
                return
            }
            // `start < end` here: the connection's own buffer holds them.
            n = read(fd, buffer! + end, capacity - end)
            guard n > 0 else { readFailed(n); return }
            end += n
            drive()
        }
        if messageOpen { lastActivity = HTTPConnection.coarseMilliseconds() }
    }

    /// A read gave `n` <= 0: EOF, or an error other than "try again".
    private func readFailed(_ n: Int) {
        if n == 0 {
            peerClosed()
        } else if errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR {
            close()
        }
    }

    /// After the `drive()` of a read into the scratch buffer: the bytes not parsed yet move into a buffer of the
    /// connection's own (the scratch buffer is the next read's, of any connection).
    private func keepLeftover() {
        guard borrowed else { return }
        borrowed = false
        let scratch = buffer
        buffer = nil
        capacity = 0
        guard !closed, start < end, let scratch else {
            start = 0
            end = 0
            return
        }
        let left = end - start
        capacity = max(HTTPConnection.initialCapacity, left)
        let own = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        own.copyMemory(from: scratch + start, byteCount: left)
        buffer = own
        start = 0
        end = left
        if busy && end >= HTTPConnection.maxQueued { pauseReading() }
    }

    /// Frees space at the end of the connection's own buffer: moves unparsed bytes to the front, or grows it (up
    /// to `maxQueued` while a request is in flight; false when full).
    private func makeRoom() -> Bool {
        guard let buffer else { return false }  // never: called with bytes left over, which the buffer holds
        if start > 0 {
            buffer.copyMemory(from: buffer + start, byteCount: end - start)
            end -= start
            start = 0
            return true
        }
        if busy && capacity >= HTTPConnection.maxQueued { return false }
        let grown = UnsafeMutableRawPointer.allocate(byteCount: capacity * 2, alignment: 16)
        grown.copyMemory(from: buffer, byteCount: end)
        buffer.deallocate()
        self.buffer = grown
        capacity *= 2
        return true
    }

    /// Stops reading (the buffer behind a request in flight is full).
    private func pauseReading() {
        guard !readPaused, let readEvent else { return }
        readPaused = true
        event_del(readEvent)
    }

    /// Reads again, unless the peer has gone.
    private func resumeReading() {
        guard readPaused, !peerGone, let readEvent else { return }
        readPaused = false
        event_add(readEvent, nil)
    }

    /// EOF from the peer: nothing more is read, but the whole requests buffered before it are answered in turn (a
    /// half-closed client still reads); then the connection closes (a request cut short by the EOF is dropped).
    private func peerClosed() {
        peerGone = true
        pauseReading()
        if !busy { close() }
    }

    /// The worker's sweep: close the connection when it has been idle (or sending slowly) for the inactivity
    /// timeout, never while it waits for its answer (a slow write has the write event's own timer).
    func closeIfInactive(now: Int64) {
        guard now &- lastActivity >= inactivityMilliseconds, !busy || lingering else { return }
        close()
    }

    /// The coarse monotonic clock in milliseconds (`MonotonicInstant.coarse`: plenty for a timeout of seconds).
    static func coarseMilliseconds() -> Int64 {
        Int64(MonotonicInstant.coarse.nanoseconds / 1_000_000)
    }

    /// Parses the buffered bytes, handing each whole request to the handler, until the buffer is empty or
    /// a request is in flight.
    private func drive() {
        guard !driving else { return }
        driving = true
        defer { driving = false }
        while !closed && !busy && start < end, let buffer {
            let (n, step) = assembler.parse(buffer + start, count: end - start)
            start += n
            if assembler.takeContinue() {
                // The client waits for this before it sends the body (nothing else is being written now).
                let line: StaticString = "HTTP/1.1 100 Continue\r\n\r\n"
                _ = Glibc.send(fd, line.utf8Start, line.utf8CodeUnitCount, Int32(MSG_NOSIGNAL | MSG_DONTWAIT))
            }
            switch step {
            case .needMore:
                break
            case .request(let request, let keepAlive, let http10):
                dispatch(request, keepAlive: keepAlive, http10: http10)
            case .refused(let refusal):
                refuse(refusal)
                return
            }
        }
        guard !closed else { return }
        if start == end && !borrowed {
            // Nothing left over: an idle connection holds no input buffer.
            buffer?.deallocate()
            buffer = nil
            capacity = 0
            start = 0
            end = 0
        }
        if messageOpen && !busy && !deadlineArmed, let deadlineEvent {
            var tv = timeval(tv_sec: limits.requestTimeoutSeconds, tv_usec: 0)
            event_add(deadlineEvent, &tv)
            deadlineArmed = true
        }
        if busy && !borrowed && end == capacity && capacity >= HTTPConnection.maxQueued && start == 0 { pauseReading() }
    }

    /// Reads and drops what a refused client still sends, until it closes (or the linger timer ends it).
    private func discard() {
        let n = read(fd, worker.scratch, HTTPConnection.maxQueued)
        if n == 0 || (n < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) { close() }
    }

    /// Hands the whole request to the handler; its answer comes back through `finish`.
    private func dispatch(_ request: HTTPRequest, keepAlive: Bool, http10: Bool) {
        if deadlineArmed, let deadlineEvent {
            event_del(deadlineEvent)
            deadlineArmed = false
        }
        busy = true
        answeringHead = request.method == .head
        keepAlive10 = keepAlive && http10
        closeAfterAnswer = closeAfterAnswer || !keepAlive
        worker.requestArrived(self)
        awaitingAnswer = true
        worker.handle(request, on: self)
    }

    /// The handler's answer (loop thread): written unless the connection has gone meanwhile.
    func finish(_ response: HTTPResponse) {
        precondition(awaitingAnswer, "a request was answered twice")
        awaitingAnswer = false
        guard !closed else { return }
        write(response)
    }

    /// A request the server refuses itself: answer it through `refuse`, then close.
    private func refuse(_ refusal: EdgeRefusal) {
        busy = true
        refused = true
        assembler.abandon()
        closeAfterAnswer = true
        answeringHead = false
        keepAlive10 = false
        if deadlineArmed, let deadlineEvent {
            event_del(deadlineEvent)
            deadlineArmed = false
        }
        var answer = worker.refuse(refusal)
        answer.headers.set("Connection", "close")
        write(answer)
    }

    /// The request deadline passed before the request arrived whole: 408 (nothing else is being written
    /// while a request is parsed), then close.
    private func deadlinePassed() {
        deadlineArmed = false
        if lingering { close(); return }
        guard messageOpen, !busy else { return }
        refuse(.requestTimeout)
    }

    // MARK: Writing

    /// Serialises the status line and headers into `head` and writes them with the body. A handler's
    /// `Connection: close` (its first `Connection` field) closes the connection after the answer.
    private func write(_ response: HTTPResponse) {
        let statusLine = HeadBytes.statusLine(response.status)
        // Fields rendered once (a stored answer's) are written as they are: none is one of the four below.
        let (rendered, own) = response.headers.forWriting
        // Room for the usual head at once (the fixed lines take less than 128 bytes, and a field of its own rarely
        // more than 128): a longer one grows the buffer as it is appended (no pass over the fields to size them).
        var head = self.head.take() ?? worker.takeHeadBuffer()
        defer { self.head = head }
        head.clear(reserving: statusLine.count + 128 + (rendered?.bytes.count ?? 0) + own.count * 128)
        head.append(statusLine)
        if let rendered { head.append(rendered.bytes) }
        var ownLength: String?
        var hasDate = false
        var connectionSeen = false
        for (name, value) in own {
            // Only names of these lengths can be one the server writes itself (most are not: no comparison).
            switch name.utf8.count {
            case 14 where HTTPHeaders.sameName(name, "Content-Length"): ownLength = value; continue
            case 10 where HTTPHeaders.sameName(name, "Connection"):
                if !connectionSeen && HeadBytes.isClose(value) { closeAfterAnswer = true }
                connectionSeen = true
                continue
            case 17 where HTTPHeaders.sameName(name, "Transfer-Encoding"): continue
            case 4 where HTTPHeaders.sameName(name, "Date"): hasDate = true
            default: break
            }
            head.appendField(name, value)
        }
        let bodiless = response.status == 204 || response.status == 304 || response.status < 200
        if !bodiless {
            head.append(HeadBytes.contentLength)
            if answeringHead, let ownLength {
                head.append(ownLength)
            } else {
                head.appendDecimal(response.content.count)
            }
            head.append(13, 10)
        }
        if !hasDate {
            worker.appendDate(to: &head)
        }
        if closeAfterAnswer {
            head.append(HeadBytes.connectionClose)
        } else if keepAlive10 {
            head.append(HeadBytes.connectionKeepAlive)
        }
        head.append(13, 10)
        outBody = answeringHead || bodiless ? .empty : response.content
        sent = 0
        // Written at the end of the loop turn, with the other answers of the turn (see `flushWritten`).
        worker.flushAtEndOfTurn(self)
    }

    /// Starts writing the answer `write` serialised, unless the connection closed meanwhile (the worker
    /// calls it at the end of the loop turn that answered).
    func flushWritten() {
        guard !closed else { return }
        flush()
    }

    /// Writes what is left of the answer; arms the write event when the socket is full.
    private func flush() {
        // Never nil here: `write` made the head this writes.
        guard let headBytes = head?.bytes else { return }
        let total = headBytes.count + outBody.count
        while sent < total {
            let n = outBody.withUnsafeBytes { bodyBytes in
                HTTPConnection.sendAnswer(fd, head: headBytes, body: bodyBytes, skipping: sent)
            }
            if n > 0 {
                sent += n
            } else if n < 0 && errno == EINTR {
                continue
            } else if n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK) {
                writeBlocked = true
                if let writeEvent { event_add(writeEvent, &inactivity) }
                return
            } else {
                close()
                return
            }
        }
        written()
    }

    /// `head` then `body`, the first `skip` bytes left out, in one `sendmsg` (no SIGPIPE).
    private static func sendAnswer(_ fd: Int32, head: UnsafeRawBufferPointer, body: UnsafeRawBufferPointer, skipping skip: Int) -> Int {
        var vectors = (iovec(), iovec())
        var count = 0
        // `head` always holds at least a status line, and `body` is only pointed at when it has bytes (or, in
        // the else branch, bytes left), so both base addresses exist where they are used.
        if skip < head.count {
            vectors.0 = iovec(iov_base: UnsafeMutableRawPointer(mutating: head.baseAddress! + skip), iov_len: head.count - skip)
            count = 1
            if body.count > 0 {
                vectors.1 = iovec(iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress!), iov_len: body.count)
                count = 2
            }
        } else {
            let offset = skip - head.count
            vectors.0 = iovec(iov_base: UnsafeMutableRawPointer(mutating: body.baseAddress! + offset), iov_len: body.count - offset)
            count = 1
        }
        return withUnsafeMutablePointer(to: &vectors) { pair in
            pair.withMemoryRebound(to: iovec.self, capacity: 2) { iov in
                var message = msghdr()
                message.msg_iov = iov
                message.msg_iovlen = count
                return sendmsg(fd, &message, Int32(MSG_NOSIGNAL))
            }
        }
    }

    /// The socket takes more: write the rest of the answer.
    private func writable() {
        guard writeBlocked else { return }
        writeBlocked = false
        flush()
    }

    /// The answer is out: close, or take the next request (already buffered, or the next read).
    private func written() {
        writeBlocked = false
        outBody = .empty
        if let head = head.take() { worker.giveBack(head) }
        if closeAfterAnswer {
            linger()
            return
        }
        busy = false
        // The idle time before the next request counts from the answer, not from the last read.
        lastActivity = HTTPConnection.coarseMilliseconds()
        resumeReading()
        drive()
        // The peer has closed its side: once no buffered request is left to answer, nothing more can come.
        if peerGone && !busy { close() }
    }

    /// Shuts the write side and reads until the peer closes (briefly): closing with unread input would reset
    /// the connection and could destroy the answer before the client has read it.
    private func linger() {
        if peerGone || (end == start && !refused) {
            close()
            return
        }
        shutdown(fd, Int32(SHUT_WR))
        lingering = true
        if !borrowed {
            buffer?.deallocate()
            buffer = nil
            capacity = 0
        }
        start = 0
        end = 0
        if readPaused, let readEvent {
            readPaused = false
            event_add(readEvent, nil)
        }
        if let deadlineEvent {
            var tv = timeval(tv_sec: 2, tv_usec: 0)
            event_add(deadlineEvent, &tv)
            deadlineArmed = true
        }
    }
}
