import Foundation

/// A raw-TCP upstream on 127.0.0.1 that answers each request with the steps its script gives for the
/// request's number (0-based, over all connections). Stop it with `stop()`.
package final class ScriptedUpstream: @unchecked Sendable {
    /// One thing to do after reading a request.
    package enum Step {
        /// Write these bytes at once.
        case send(String)
        /// Write these bytes one at a time, each in its own segment (a trickling peer).
        case trickle(String)
        /// Close the connection.
        case close
        /// Hold the answer until `released` says so (polled every 5 ms), at most `atMost` seconds: an answer slow for
        /// as long as the test wants, ended by an event, never by a guess at how long is long enough. A hold that
        /// reaches `atMost` is counted in `expiredHolds`.
        case hold(until: @Sendable () -> Bool, atMost: Double)
    }

    /// The port it listens on.
    package var port: UInt16 { server.port }
    private let script: @Sendable (Int) -> [Step]
    private let lock = NSLock()
    /// The socket and its accept loop (set once in `init`, right after the other properties).
    private var server: LoopbackThreadServer!
    private var requestTexts: [String] = []
    private var expiredHoldCount = 0

    /// The base URL of the peer.
    package var url: String { "http://127.0.0.1:\(port)" }
    /// The requests received (head and body), in order.
    package var requests: [String] { lock.withLock { requestTexts } }
    /// The connections accepted.
    package var connections: Int { server.connections }
    /// Holds (`.hold`) that reached their `atMost` before they were released.
    package var expiredHolds: Int { lock.withLock { expiredHoldCount } }
    /// The connections the peer has closed.
    package var closes: Int { server.closes }

    /// Starts listening; `script` gives the steps for each request by its number.
    package init(_ script: @escaping @Sendable (Int) -> [Step]) throws {
        self.script = script
        // The connection threads keep the peer alive until `stop()`, as a thread of its own did before.
        server = try LoopbackThreadServer { [self] fd in serve(fd) }
    }

    deinit { stop() }

    /// Stops accepting and waits for the connection threads to end.
    package func stop() {
        server?.stop(waiting: 5)
    }

    private var isStopped: Bool { server.isStopped }

    private func serve(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var pending: [UInt8] = []
        while let request = readRequest(fd, &pending) {
            let index = lock.withLock { () -> Int in
                requestTexts.append(request)
                return requestTexts.count - 1
            }
            for step in script(index) {
                switch step {
                case .send(let text):
                    write(fd, Array(text.utf8))
                case .trickle(let text):
                    for byte in text.utf8 {
                        write(fd, [byte])
                        usleep(500)  // the trickle itself, not a barrier: each byte is its own segment
                    }
                case .close:
                    return
                case .hold(let released, let atMost):
                    let start = Date()
                    while !released() && !isStopped {
                        if Date().timeIntervalSince(start) >= atMost {
                            lock.withLock { expiredHoldCount += 1 }
                            break
                        }
                        usleep(5_000)
                    }
                }
            }
        }
    }

    private func write(_ fd: Int32, _ bytes: [UInt8]) {
        _ = SocketTools.writeAll(fd, bytes)
    }

    /// Reads one request (head and `Content-Length` body) as text; nil when the client closed or we stopped.
    private func readRequest(_ fd: Int32, _ buffer: inout [UInt8]) -> String? {
        SocketTools.readRequest(fd, &buffer) { isStopped }
    }
}
