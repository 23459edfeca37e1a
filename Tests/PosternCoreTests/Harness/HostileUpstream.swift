import Foundation
import PosternTesting

/// A raw-TCP Directus that lies about its answers, on 127.0.0.1 with a free port: each request read (head and
/// `Content-Length` body, several per keep-alive connection, one connection per thread) is answered with the
/// steps its script gives for the request's text. It counts the bytes it streamed, so that a test can show
/// how much of an oversized answer the gateway read before it hung up. Stop it with `stop()`.
final class HostileUpstream: @unchecked Sendable {
    /// One thing to do after reading a request.
    enum Step: Sendable {
        /// Write these bytes at once.
        case send(String)
        /// Wait this many seconds (the time between an answer and a stray one after it).
        case wait(Double)
        /// Write `piece` over and over, `total` bytes in all (`nil`: until the gateway hangs up), at most
        /// `bytesPerSecond` (nil: as fast as the socket takes them). Counted in `streamed`.
        case stream(String, total: Int?, bytesPerSecond: Int?)
        /// Close the connection.
        case close
    }

    /// The port it listens on.
    var port: UInt16 { server.port }
    private let script: @Sendable (String) -> [Step]
    private let lock = NSLock()
    /// The socket and its accept loop (set once in `init`, right after the other properties).
    private var server: LoopbackThreadServer!
    private var requestTexts: [String] = []
    private var streamedBytes = 0
    private var streamsEnded = 0
    private var longestWaitSeen = 0.0
    private var lateWaitCount = 0
    /// A `.wait` step that took this long or longer counts in `lateWaits`.
    var lateWait = Double.infinity

    /// The base URL to put into `config.directus.url`.
    var url: String { "http://127.0.0.1:\(port)" }
    /// The requests received (head and body), in order.
    var requests: [String] { lock.withLock { requestTexts } }
    /// The connections accepted.
    var connections: Int { server.connections }
    /// The bytes written by `.stream` steps so far.
    var streamed: Int { lock.withLock { streamedBytes } }
    /// The longest time a `.wait` step took, in seconds (the thread may sleep longer than asked on a busy machine).
    var longestWait: Double { lock.withLock { longestWaitSeen } }
    /// `.wait` steps that took `lateWait` or longer.
    var lateWaits: Int { lock.withLock { lateWaitCount } }
    /// `.stream` steps that ended (all written, or the gateway hung up).
    var streamsDone: Int { lock.withLock { streamsEnded } }

    /// Starts listening; `script` gives the steps for each request's text.
    init(_ script: @escaping @Sendable (String) -> [Step]) throws {
        self.script = script
        // The connection threads keep the peer alive until `stop()`, as a thread of its own did before.
        server = try LoopbackThreadServer { [self] fd in serve(fd) }
    }

    deinit { stop() }

    /// Stops accepting and waits for the connection threads to end.
    func stop() {
        server?.stop(waiting: 10)
    }

    private var isStopped: Bool { server.isStopped }

    private func serve(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var pending: [UInt8] = []
        while let request = readRequest(fd, &pending) {
            lock.withLock { requestTexts.append(request) }
            for step in script(request) {
                switch step {
                case .send(let text):
                    guard write(fd, Array(text.utf8)) else { return }
                case .wait(let seconds):
                    let from = Date()
                    usleep(UInt32(seconds * 1_000_000))
                    let waited = Date().timeIntervalSince(from)
                    lock.withLock {
                        longestWaitSeen = max(longestWaitSeen, waited)
                        if waited >= lateWait { lateWaitCount += 1 }
                    }
                case .stream(let piece, let total, let rate):
                    let open = stream(fd, Array(piece.utf8), total: total, bytesPerSecond: rate)
                    lock.withLock { streamsEnded += 1 }
                    guard open else { return }
                case .close:
                    return
                }
            }
        }
    }

    /// Writes `piece` repeatedly; false when the gateway hung up first.
    private func stream(_ fd: Int32, _ piece: [UInt8], total: Int?, bytesPerSecond: Int?) -> Bool {
        let start = Date()
        var sent = 0
        while !isStopped, total.map({ sent < $0 }) ?? true {
            let count = min(piece.count, total.map { $0 - sent } ?? piece.count)
            let n = piece.withUnsafeBytes { send(fd, $0.baseAddress, count, Int32(MSG_NOSIGNAL)) }
            if n <= 0 { return false }
            sent += n
            lock.withLock { streamedBytes += n }
            if let rate = bytesPerSecond {
                // The pace itself (not a barrier): sleep until the bytes sent are due.
                let due = Double(sent) / Double(rate) - Date().timeIntervalSince(start)
                if due > 0 { usleep(UInt32(due * 1_000_000)) }
            }
        }
        return true
    }

    private func write(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        SocketTools.writeAll(fd, bytes)
    }

    /// Reads one request (head and `Content-Length` body) as text; nil when the client closed or we stopped.
    private func readRequest(_ fd: Int32, _ buffer: inout [UInt8]) -> String? {
        SocketTools.readRequest(fd, &buffer) { isStopped }
    }

    /// An HTTP/1.1 keep-alive answer with a JSON body.
    static func answer(_ body: String, status: Int = 200, extra: String = "") -> String {
        "HTTP/1.1 \(status) OK\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\(extra)\r\n\(body)"
    }

    /// The request's `X-Request-Id` value ("" without one).
    static func requestID(_ request: String) -> String {
        for line in request.components(separatedBy: "\r\n") where line.lowercased().hasPrefix("x-request-id:") {
            return line.dropFirst("x-request-id:".count).trimmingCharacters(in: .whitespaces)
        }
        return ""
    }
}
