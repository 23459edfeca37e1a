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
    package let port: UInt16
    private let script: @Sendable (Int) -> [Step]
    private let listenFD: Int32
    private let lock = NSLock()
    private var stopped = false
    private var requestTexts: [String] = []
    private var connectionCount = 0
    private var closeCount = 0
    private var expiredHoldCount = 0
    private let finished = DispatchGroup()

    /// The base URL of the peer.
    package var url: String { "http://127.0.0.1:\(port)" }
    /// The requests received (head and body), in order.
    package var requests: [String] { lock.withLock { requestTexts } }
    /// The connections accepted.
    package var connections: Int { lock.withLock { connectionCount } }
    /// Holds (`.hold`) that reached their `atMost` before they were released.
    package var expiredHolds: Int { lock.withLock { expiredHoldCount } }
    /// The connections the peer has closed.
    package var closes: Int { lock.withLock { closeCount } }

    /// Starts listening; `script` gives the steps for each request by its number.
    package init(_ script: @escaping @Sendable (Int) -> [Step]) throws {
        self.script = script
        let (fd, port) = try SocketTools.bindLoopback(listening: true)
        listenFD = fd
        self.port = port
        finished.enter()
        Thread { [self] in acceptLoop() }.start()
    }

    deinit { stop() }

    /// Stops accepting and waits for the connection threads to end.
    package func stop() {
        let was = lock.withLock { () -> Bool in
            defer { stopped = true }
            return stopped
        }
        if !was { _ = finished.wait(timeout: .now() + 5) }
    }

    private var isStopped: Bool { lock.withLock { stopped } }

    private func acceptLoop() {
        defer {
            close(listenFD)
            finished.leave()
        }
        while !isStopped {
            guard SocketTools.waitReadable(listenFD, milliseconds: 20) else { continue }
            let client = accept(listenFD, nil, nil)
            if client < 0 { continue }
            lock.withLock { connectionCount += 1 }
            finished.enter()
            Thread { [self] in
                serve(client)
                close(client)
                lock.withLock { closeCount += 1 }
                finished.leave()
            }.start()
        }
    }

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
