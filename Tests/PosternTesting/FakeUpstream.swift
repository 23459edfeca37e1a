import Foundation

/// A tiny raw-TCP stand-in for a misbehaving Directus, on 127.0.0.1 with a free port: POSIX sockets and
/// background threads, independent of libevent, so that the gateway's upstream client meets real
/// refusals, hang-ups, garbage and silence. Stop it with `stop()` (tests call it in `defer`).
package final class FakeUpstream: @unchecked Sendable {
    /// How the fake treats each connection.
    package indirect enum Mode: Sendable {
        /// Nothing listens on the port (bound, then closed): connections are refused.
        case refuse
        /// Accepts, reads the request, closes without answering.
        case closeAfterRequest
        /// Answers `HELLO\r\n\r\n`, which is not HTTP.
        case garbage
        /// Accepts, reads the request, never answers (holds the connection until `stop()`).
        case silent
        /// Answers with this status and body (`application/json`).
        case status(Int, String)
        /// Answers with this status, extra headers and JSON body.
        case statusWithHeaders(Int, [String], String)
        /// Answers 200 with an HTML page.
        case notJSON
        /// Answers 200 with JSON of the wrong shape: `{"data":"x"}`.
        case wrongShape
        /// Waits `seconds`, then behaves like `then`.
        case delayed(Double, then: Mode)
        /// Answers the first request on each connection with this status and JSON body, keeping the
        /// connection open, then hangs up as `hangUp` says.
        case keepAlive(Int, String, hangUp: HangUp)
    }

    /// When a `.keepAlive` connection is closed after its first answer.
    package enum HangUp: Sendable, Equatable {
        /// Right away, while the connection is idle in the gateway's pool (an upstream keep-alive timeout).
        case whenIdle
        /// After reading the next request, without answering it (a race with the upstream's keep-alive timeout).
        case onNextRequest
        /// Like Node's keep-alive timeout racing a request: each connection answers requests until it has been
        /// idle for `milliseconds` (counted in `idleCloses`, the moment Node would close it); the next request on
        /// it is then read and the connection closed without an answer, as if the close and the request had
        /// crossed on the wire.
        case crossingIdleClose(milliseconds: Int)
    }

    /// The port it listens on (or, for `.refuse`, the port nothing listens on).
    package let port: UInt16
    private let mode: Mode
    private var listenFD: Int32 = -1
    private let lock = NSLock()
    private var stopped = false
    private var requestHeads: [String] = []
    private var connectionFDs: [Int32] = []
    private var idleCloseCount = 0
    private let finished = DispatchGroup()
    private let hungUp = DispatchSemaphore(value: 0)

    /// The base URL to put into `config.directus.url`.
    package var url: String { "http://127.0.0.1:\(port)" }

    /// The request heads (request line and headers) received so far.
    package var received: [String] { lock.withLock { requestHeads } }

    /// Connections that reached their idle close (`.crossingIdleClose`).
    package var idleCloses: Int { lock.withLock { idleCloseCount } }

    /// Starts listening (or, for `.refuse`, reserves and releases a port).
    package init(_ mode: Mode) throws {
        self.mode = mode
        let (fd, port) = try SocketTools.bindLoopback(listening: false)
        self.port = port
        if case .refuse = mode {
            close(fd)
            return
        }
        guard listen(fd, 64) == 0 else {
            close(fd)
            throw TestFailure("listen: errno \(errno)")
        }
        listenFD = fd
        finished.enter()
        Thread { [self] in acceptLoop() }.start()
    }

    deinit { stop() }

    /// Waits until the fake has closed its end of one more connection (false after `seconds` without one).
    package func waitForHangUp(seconds: Double = 5) -> Bool {
        hungUp.wait(timeout: .now() + seconds) == .success
    }

    /// Stops accepting, closes every connection and waits for the threads to end.
    package func stop() {
        let wasStopped = lock.withLock { () -> Bool in
            defer { stopped = true }
            return stopped
        }
        if wasStopped { return }
        if listenFD >= 0 { _ = finished.wait(timeout: .now() + 5) }
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func acceptLoop() {
        defer {
            close(listenFD)
            finished.leave()
        }
        while !isStopped {
            guard SocketTools.waitReadable(listenFD, milliseconds: 50) else { continue }
            let client = accept(listenFD, nil, nil)
            if client < 0 { continue }
            finished.enter()
            Thread { [self] in
                serve(client)
                close(client)
                hungUp.signal()
                finished.leave()
            }.start()
        }
    }

    private func serve(_ fd: Int32) {
        guard let head = readRequest(fd) else { return }
        lock.withLock { requestHeads.append(head) }
        if case .keepAlive(let status, let body, let hangUp) = mode {
            let answer = "HTTP/1.1 \(status) X\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)"
            write(fd, answer)
            if case .crossingIdleClose(let milliseconds) = hangUp {
                while true {
                    let idleFrom = Date()
                    // Wait for the next request or for the idle close, whichever comes first.
                    var expired = false
                    while !isStopped && !SocketTools.waitReadable(fd, milliseconds: 5) {
                        if Date().timeIntervalSince(idleFrom) * 1000 >= Double(milliseconds) {
                            expired = true
                            break
                        }
                    }
                    if expired { lock.withLock { idleCloseCount += 1 } }
                    guard let next = readRequest(fd) else { return }
                    lock.withLock { requestHeads.append(next) }
                    if expired { return }  // closed under the request: no answer
                    write(fd, answer)
                }
            }
            if hangUp == .onNextRequest, let next = readRequest(fd) {
                lock.withLock { requestHeads.append(next) }
            }
            return
        }
        respond(fd, mode)
    }

    private func respond(_ fd: Int32, _ mode: Mode) {
        switch mode {
        case .refuse, .closeAfterRequest, .keepAlive:
            return
        case .garbage:
            write(fd, "HELLO\r\n\r\n")
        case .silent:
            while !isStopped { usleep(20_000) }
        case .status(let status, let body):
            write(fd, FakeUpstream.response(status, "application/json", body))
        case .statusWithHeaders(let status, let headers, let body):
            write(fd, FakeUpstream.response(status, "application/json", body, extra: headers))
        case .notJSON:
            write(fd, FakeUpstream.response(200, "text/html", "<html><body>Directus is down for maintenance</body></html>"))
        case .wrongShape:
            write(fd, FakeUpstream.response(200, "application/json", #"{"data":"x"}"#))
        case .delayed(let seconds, let then):
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline && !isStopped { usleep(10_000) }
            respond(fd, then)
        }
    }

    private static func response(_ status: Int, _ type: String, _ body: String, extra: [String] = []) -> String {
        "HTTP/1.1 \(status) X\r\nContent-Type: \(type)\r\nContent-Length: \(body.utf8.count)\r\n"
            + extra.map { "\($0)\r\n" }.joined() + "Connection: close\r\n\r\n\(body)"
    }

    private func write(_ fd: Int32, _ text: String) {
        let bytes = Array(text.utf8)
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return }
            sent += n
        }
    }

    /// Reads one request (head plus `Content-Length` body); nil when the peer went away or we stopped.
    private func readRequest(_ fd: Int32) -> String? {
        var buffer: [UInt8] = []
        var headLength: Int?
        var bodyLength = 0
        while !isStopped {
            if let h = headLength, buffer.count >= h + 4 + bodyLength {
                return String(decoding: buffer[0..<h], as: UTF8.self)
            }
            guard SocketTools.waitReadable(fd, milliseconds: 50) else { continue }
            var chunk = [UInt8](repeating: 0, count: 16384)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return nil }
            buffer += chunk[0..<n]
            if headLength == nil, let end = SocketTools.find(buffer, [13, 10, 13, 10]) {
                headLength = end
                let head = String(decoding: buffer[0..<end], as: UTF8.self)
                for line in head.components(separatedBy: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                    bodyLength = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                }
            }
        }
        return nil
    }
}

/// Small POSIX socket helpers for live tests.
package enum SocketTools {
    /// The local port a socket is bound to.
    package static func localPort(of fd: Int32) -> UInt16 {
        var addr = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return UInt16(bigEndian: addr.sin_port)
    }

    /// True when `fd` has data (or EOF, or a pending connection) within the time.
    /// Writes all of `bytes` (no SIGPIPE); false when the peer went away first.
    package static func writeAll(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
        }
        return true
    }

    /// Reads one request (head and `Content-Length` body) from `fd` as text, keeping what follows it in `buffer`;
    /// nil when the client closed or `stopped()` became true.
    package static func readRequest(_ fd: Int32, _ buffer: inout [UInt8], stopped: () -> Bool) -> String? {
        while !stopped() {
            if let end = find(buffer, [13, 10, 13, 10]) {
                let head = String(decoding: buffer[0..<end], as: UTF8.self)
                var length = 0
                for line in head.components(separatedBy: "\r\n") where line.lowercased().hasPrefix("content-length:") {
                    length = Int(line.dropFirst("content-length:".count).trimmingCharacters(in: .whitespaces)) ?? 0
                }
                if buffer.count >= end + 4 + length {
                    let text = String(decoding: buffer[0..<(end + 4 + length)], as: UTF8.self)
                    buffer.removeFirst(end + 4 + length)
                    return text
                }
            }
            guard waitReadable(fd, milliseconds: 20) else { continue }
            var chunk = [UInt8](repeating: 0, count: 65536)
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n <= 0 { return nil }
            buffer += chunk[0..<n]
        }
        return nil
    }

    /// True when `fd` has data (or EOF, or a pending connection) within `milliseconds`.
    package static func waitReadable(_ fd: Int32, milliseconds: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, milliseconds) > 0
    }

    /// Where `b` first starts in `a`, or nil.
    package static func find(_ a: [UInt8], _ b: [UInt8]) -> Int? {
        guard a.count >= b.count else { return nil }
        for i in 0...(a.count - b.count) where a[i..<(i + b.count)].elementsEqual(b) { return i }
        return nil
    }

    /// A TCP socket bound to 127.0.0.1 on a free port, without `SO_REUSEPORT`; `listening` also calls listen().
    /// Returns the descriptor (the caller closes it) and the port.
    package static func bindLoopback(listening: Bool) throws -> (fd: Int32, port: UInt16) {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw TestFailure("socket: errno \(errno)") }
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = 0
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0, !listening || listen(fd, 16) == 0 else {
            close(fd)
            throw TestFailure("bind/listen: errno \(errno)")
        }
        return (fd, localPort(of: fd))
    }

    /// A port that was free a moment ago (bound to port 0, then released).
    package static func freePort() throws -> UInt16 {
        let (fd, port) = try bindLoopback(listening: false)
        close(fd)
        return port
    }
}
