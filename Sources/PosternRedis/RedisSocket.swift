import CEvent
import COpenSSL
import FoundationEssentials
import Glibc
import PosternIO

/// What a `RedisSocket` tells its connection, on the loop thread.
protocol RedisSocketDelegate: AnyObject {
    /// Connected, and the TLS handshake done when there is one: the bytes written so far go out now.
    func socketOpened(_ socket: RedisSocket)
    /// Bytes read (valid during the call only).
    func socket(_ socket: RedisSocket, read bytes: UnsafeRawBufferPointer)
    /// The socket failed or the peer closed it; it is closed already and calls nothing more. `refused`: TLS
    /// refused this client (the server's certificate failed the check, or the server sent an alert, such as a
    /// client certificate required or refused), which no retry fixes.
    func socket(_ socket: RedisSocket, failed reason: RedisError, refused: Bool)
}

/// One TCP connection to Redis on one loop: a nonblocking socket, TLS through OpenSSL on it for `rediss://`
/// (the way `UpstreamConnection` runs TLS), its read and write events and the bytes not yet written.
///
/// hiredis 0.14 has no TLS, so the sockets are Postern's own: hiredis only parses the replies
/// (`RedisConnection`). Bytes written before the socket is open (the login, commands sent while connecting)
/// wait and go out once it is. Writes are flushed at the next turn of the loop (the write event), so the
/// commands of one turn leave in one system call. `SSL_read`/`SSL_write` wanting the other direction are
/// retried when the socket allows it.
///
/// Ownership: the events carry `self` unretained; `close()` (which the connection calls before dropping the
/// socket, and `deinit` otherwise) frees them, so no callback runs on a freed socket. Loop thread only.
final class RedisSocket {
    private enum State {
        case connecting, handshaking, open, closed
    }

    private let loop: EventLoop
    /// `host:port`, for the error texts.
    private let peer: String
    private weak var delegate: RedisSocketDelegate?
    private var state = State.closed
    private var fd: Int32 = -1
    private var ssl: OpaquePointer?
    private var readEvent: OpaquePointer?
    private var writeEvent: OpaquePointer?
    private var output: [UInt8] = []
    private var written = 0
    /// `SSL_read` wanted to write first (a key update): retried when the socket is writable.
    private var readWantsWrite = false
    /// `SSL_write` wanted to read first: retried when the socket is readable.
    private var writeWantsRead = false
    /// OpenSSL's reason when a read failed on a TLS error (an alert from the server).
    private var tlsFailure: String?
    private let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 * 1024, alignment: 16)

    /// A socket for `peer` (a `host:port` text used in errors) telling `delegate`; nothing happens before `open`.
    init(loop: EventLoop, peer: String, delegate: RedisSocketDelegate) {
        self.loop = loop
        self.peer = peer
        self.delegate = delegate
    }

    deinit {
        close()
        buffer.deallocate()
    }

    /// Starts connecting to `address`; once connected, TLS with `tls`, checking the certificate against
    /// `serverName` and sending it as SNI (`TLSClientContext.makeSSL`). A failure to even start is returned (the
    /// delegate is not called for it).
    func open(_ address: SocketAddressValue, tls: TLSClientContext?, serverName: String) -> RedisError? {
        let socketFD = socket(address.family, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_NONBLOCK.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard socketFD >= 0 else { return .unavailable("socket: \(String(cString: strerror(errno)))") }
        fd = socketFD
        RedisSocket.setOptions(fd)
        if let tls {
            guard let made = TLSClientHandshake.start(tls, fd: fd, serverName: serverName) else {
                close()
                return .unavailable("cannot create a TLS session")
            }
            ssl = made
        }
        let me = Unmanaged.passUnretained(self).toOpaque()
        readEvent = event_new(loop.base, fd, Int16(EV_READ | EV_PERSIST), { _, _, arg in
            guard let arg else { return }
            // Kept alive through the call: the connection may drop its socket from inside it.
            let socket = Unmanaged<RedisSocket>.fromOpaque(arg).takeUnretainedValue()
            withExtendedLifetime(socket) { socket.readable() }
        }, me)
        writeEvent = event_new(loop.base, fd, Int16(EV_WRITE), { _, _, arg in
            guard let arg else { return }
            let socket = Unmanaged<RedisSocket>.fromOpaque(arg).takeUnretainedValue()
            withExtendedLifetime(socket) { socket.writable() }
        }, me)
        state = .connecting
        let rc = address.withSockaddr { Glibc.connect(fd, $0, $1) }
        if rc != 0 && errno != EINPROGRESS {
            let text = String(cString: strerror(errno))
            close()
            return .unavailable("\(text) (\(peer))")
        }
        // Connected at once (loopback may) or in progress: the write event says which.
        event_add(writeEvent, nil)
        return nil
    }

    /// Queues `bytes`; they go out at the next turn of the loop once the socket is open.
    func write(_ bytes: [UInt8]) {
        guard state != .closed else { return }
        if written == output.count {
            output.removeAll(keepingCapacity: true)
            written = 0
        }
        output.append(contentsOf: bytes)
        if state == .open && !writeWantsRead { event_add(writeEvent, nil) }
    }

    /// Closes the socket; the delegate hears nothing more.
    func close() {
        if let readEvent { event_free(readEvent) }
        if let writeEvent { event_free(writeEvent) }
        readEvent = nil
        writeEvent = nil
        if let ssl { SSL_free(ssl) }
        ssl = nil
        if fd >= 0 { Glibc.close(fd) }
        fd = -1
        state = .closed
        output.removeAll()
        written = 0
    }

    // MARK: Events

    private func writable() {
        switch state {
        case .connecting:
            var error: Int32 = 0
            var length = socklen_t(MemoryLayout<Int32>.size)
            getsockopt(fd, SOL_SOCKET, SO_ERROR, &error, &length)
            guard error == 0 else {
                fail(.unavailable("\(String(cString: strerror(error))) (\(peer))"))
                return
            }
            event_add(readEvent, nil)
            if ssl != nil {
                state = .handshaking
                handshake()
            } else {
                opened()
            }
        case .handshaking:
            handshake()
        case .open:
            if readWantsWrite {
                readWantsWrite = false
                readable()
                guard state == .open else { return }
            }
            flush()
        case .closed:
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
        case .connecting, .closed:
            return
        }
        if writeWantsRead {
            writeWantsRead = false
            flush()
            guard state == .open else { return }
        }
        while state == .open {
            let n = receive()
            if n > 0 {
                delegate?.socket(self, read: UnsafeRawBufferPointer(rebasing: buffer[0..<n]))
                // Plain: a short read emptied the socket. TLS: nothing decrypted is left over.
                if n < buffer.count && (ssl.map { SSL_pending($0) == 0 } ?? true) { return }
            } else if n == 0 {
                fail(.connectionLost)
                return
            } else {
                if errno == EAGAIN || errno == EWOULDBLOCK { return }
                if let tlsFailure {
                    fail(.unavailable("TLS connection to \(peer) failed: \(tlsFailure)"), refused: true)
                } else {
                    fail(.connectionLost)
                }
                return
            }
        }
    }

    private func handshake() {
        guard let ssl else { return }
        switch TLSClientHandshake.step(ssl) {
        case .done:
            opened()
        case .wantsRead:
            break  // the read event is armed
        case .wantsWrite:
            event_add(writeEvent, nil)
        case .refused(let reason):
            // The certificate check failed, or the server sent an alert.
            fail(.unavailable("TLS handshake with \(peer) failed: \(reason)"), refused: true)
        case .failed(let reason):
            // The connection closed or reset under the handshake: an outage, not a refusal.
            fail(.unavailable("TLS handshake with \(peer) failed: \(reason)"))
        }
    }

    private func opened() {
        state = .open
        delegate?.socketOpened(self)
        if state == .open && written < output.count { flush() }
    }

    // MARK: Reading and writing

    /// Reads into `buffer`: > 0 bytes, 0 at the end of the stream, < 0 with `errno` (EAGAIN: nothing yet).
    private func receive() -> Int {
        guard let ssl else { return recv(fd, buffer.baseAddress, buffer.count, 0) }
        let read = TLSTransfer.read(ssl, into: buffer.baseAddress, count: buffer.count)
        if case .wantsWrite = read {
            readWantsWrite = true
            event_add(writeEvent, nil)
        }
        // An alert from the server (TLS 1.3 checks a client certificate after the client's handshake ended).
        if case .alert = read { tlsFailure = TLSClientHandshake.failureReason(ssl) }
        return read.received
    }

    private func flush() {
        while state == .open && written < output.count {
            let n: Int = output.withUnsafeBytes { raw in
                // Not empty: written < count.
                let start = raw.baseAddress! + written
                let count = raw.count - written
                guard let ssl else { return send(fd, start, count, Int32(MSG_NOSIGNAL)) }
                return TLSTransfer.write(ssl, from: start, count: count)
            }
            if n > 0 {
                written += n
                continue
            }
            switch errno {
            case EAGAIN, EWOULDBLOCK:
                event_add(writeEvent, nil)
            case EINPROGRESS:
                writeWantsRead = true  // the read event brings it back
            case EINTR:
                continue
            default:
                fail(.connectionLost)
            }
            return
        }
        if written == output.count {
            output.removeAll(keepingCapacity: true)
            written = 0
        }
    }

    private func fail(_ reason: RedisError, refused: Bool = false) {
        close()
        delegate?.socket(self, failed: reason, refused: refused)
    }

    // MARK: Helpers

    /// Keep-alive probes as hiredis set them (idle 15 s, then every 5 s, 3 of them), and no Nagle delay.
    private static func setOptions(_ fd: Int32) {
        var one: Int32 = 1
        let size = socklen_t(MemoryLayout<Int32>.size)
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, size)
        setsockopt(fd, SOL_SOCKET, SO_KEEPALIVE, &one, size)
        var idle: Int32 = 15
        var interval: Int32 = 5
        var count: Int32 = 3
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_KEEPIDLE, &idle, size)
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_KEEPINTVL, &interval, size)
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_KEEPCNT, &count, size)
    }
}
