import Foundation
import Glibc

/// A client that sends a request in pieces, a pause apart, and notices when the server answers or closes.
package final class TrickleClient {
    private let fd: Int32
    /// What the server sent back.
    package private(set) var reply: [UInt8] = []
    /// The server closed the connection (or reset it).
    package private(set) var closed = false

    /// Connects to 127.0.0.1:`port`.
    package init(port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        if rc != 0 { throw RawHTTPClient.ClientError.connect(errno) }
    }

    deinit { Glibc.close(fd) }

    /// Reads whatever has arrived, without waiting.
    private func poll() {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !closed {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, Int32(MSG_DONTWAIT)) }
            if n > 0 { reply += chunk[0..<n]; continue }
            if n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK) { closed = true }
            return
        }
    }

    /// Sends `pieces` `interval` seconds apart and stops at the first sign of the server (a new answer or a
    /// close); returns how many pieces went out.
    package func trickle(_ pieces: [[UInt8]], interval: Double) -> Int {
        poll()
        let before = reply.count
        for (i, piece) in pieces.enumerated() {
            poll()
            if closed || reply.count > before { return i }
            let n = piece.withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if n != piece.count { closed = true; return i }
            Thread.sleep(forTimeInterval: interval)  // the trickle itself, not a barrier
        }
        return pieces.count
    }

    /// Waits up to `seconds` for the answer to end with a close.
    package func waitForClose(seconds: Int) { waitUntil(seconds: seconds) { _ in false } }

    /// Reads (blocking, up to `seconds` per read) until `done` holds for what arrived, or the server closes.
    package func waitUntil(seconds: Int, _ done: (String) -> Bool) {
        var tv = timeval(tv_sec: seconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var chunk = [UInt8](repeating: 0, count: 4096)
        while !closed && !done(replyText) {
            let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { reply += chunk[0..<n] } else { closed = n == 0 || (errno != EAGAIN && errno != EWOULDBLOCK); return }
        }
    }

    /// What the server sent back, as text.
    package var replyText: String { String(decoding: reply, as: UTF8.self) }
}
