import Foundation

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
