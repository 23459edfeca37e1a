import Foundation

/// A raw-TCP upstream on 127.0.0.1 with a free port, independent of libevent: each request it reads (head and
/// `Content-Length` body, several per keep-alive connection, each connection on a thread of its own) is answered
/// with the steps its script gives for it, so that a client meets real refusals, hang-ups, garbage, silence,
/// trickles, floods and answers nobody asked for. It records what it read and counts what it did, for the test to
/// check. Stop it with `stop()` (tests call it in `defer`).
package final class ScriptedUpstream: @unchecked Sendable {
    /// A request as the script sees it.
    package struct Request: Sendable {
        /// Its number over all connections (0-based).
        package let index: Int
        /// Its number on its connection (0-based).
        package let onConnection: Int
        /// Its text: head and body.
        package let text: String

        /// True when the text starts with `prefix` (such as `"POST /auth/login"`).
        package func hasPrefix(_ prefix: String) -> Bool { text.hasPrefix(prefix) }

        /// The `X-Request-Id` value ("" without one).
        package var requestID: String {
            for line in text.components(separatedBy: "\r\n") where line.lowercased().hasPrefix("x-request-id:") {
                return line.dropFirst("x-request-id:".count).trimmingCharacters(in: .whitespaces)
            }
            return ""
        }
    }

    /// One thing to do after reading a request.
    package enum Step: Sendable {
        /// Write these bytes at once.
        case send(String)
        /// Write these bytes one at a time, each in its own segment (a trickling peer).
        case trickle(String)
        /// Wait this many seconds (a slow answer; the time between an answer and a stray one after it). The time
        /// it took is measured: see `longestWait` and `lateWaits`. Ends early on `stop()`.
        case wait(Double)
        /// Hold the answer until `released` says so (polled every 5 ms), at most `atMost` seconds: an answer slow for
        /// as long as the test wants, ended by an event, never by a guess at how long is long enough. A hold that
        /// reaches `atMost` is counted in `expiredHolds`. Ends on `stop()`.
        case hold(until: @Sendable () -> Bool, atMost: Double)
        /// Write `piece` over and over, `total` bytes in all (`nil`: until the client hangs up), at most
        /// `bytesPerSecond` (nil: as fast as the socket takes them). Counted in `streamed` and `streamsDone`.
        case stream(String, total: Int?, bytesPerSecond: Int?)
        /// Like Node's keep-alive timeout racing a request: wait for the next request, but once the connection has
        /// been idle for `milliseconds` (counted in `idleCloses`, the moment Node would close it) read the next
        /// request (recorded) and close the connection without an answer, as if the close and the request had
        /// crossed on the wire.
        case closeWhenIdle(milliseconds: Int)
        /// Close the connection.
        case close

        /// Never answer: hold the connection until `stop()`.
        package static let silent = Step.hold(until: { false }, atMost: .infinity)
    }

    /// The port it listens on (for `refusing()`, the port nothing listens on).
    package var port: UInt16 { server?.port ?? refusedPort }
    private let script: @Sendable (Request) -> [Step]
    private let lock = NSLock()
    /// The socket and its accept loop (set once in `init`, right after the other properties; nil for `refusing()`).
    private var server: LoopbackThreadServer?
    private var refusedPort: UInt16 = 0
    private var requestTexts: [String] = []
    private var expiredHoldCount = 0
    private var streamedBytes = 0
    private var streamsEnded = 0
    private var longestWaitSeen = 0.0
    private var lateWaitCount = 0
    private var idleCloseCount = 0
    private var hangUpsAwaited = 0
    /// A `.wait` step that took this long or longer counts in `lateWaits`.
    package var lateWait: Double {
        get { lock.withLock { lateWaitThreshold } }
        set { lock.withLock { lateWaitThreshold = newValue } }
    }
    private var lateWaitThreshold = Double.infinity

    /// The base URL to put into `config.directus.url`.
    package var url: String { "http://127.0.0.1:\(port)" }
    /// The requests received (head and body), in order.
    package var requests: [String] { lock.withLock { requestTexts } }
    /// The connections accepted.
    package var connections: Int { server?.connections ?? 0 }
    /// The connections the peer has closed.
    package var closes: Int { server?.closes ?? 0 }
    /// Holds (`.hold`) that reached their `atMost` before they were released.
    package var expiredHolds: Int { lock.withLock { expiredHoldCount } }
    /// The bytes written by `.stream` steps so far.
    package var streamed: Int { lock.withLock { streamedBytes } }
    /// `.stream` steps that ended (all written, or the client hung up).
    package var streamsDone: Int { lock.withLock { streamsEnded } }
    /// The longest time a `.wait` step took, in seconds (the thread may sleep longer than asked on a busy machine).
    package var longestWait: Double { lock.withLock { longestWaitSeen } }
    /// `.wait` steps that took `lateWait` or longer.
    package var lateWaits: Int { lock.withLock { lateWaitCount } }
    /// Connections that reached their idle close (`.closeWhenIdle`).
    package var idleCloses: Int { lock.withLock { idleCloseCount } }

    /// Starts listening; `script` gives the steps for each request.
    package init(_ script: @escaping @Sendable (Request) -> [Step]) throws {
        self.script = script
        // The connection threads keep the peer alive until `stop()`.
        server = try LoopbackThreadServer { [self] fd in serve(fd) }
    }

    /// Starts listening; every request gets `steps`.
    package convenience init(every steps: [Step]) throws {
        try self.init { _ in steps }
    }

    private init(refusingOn port: UInt16) {
        script = { _ in [] }
        refusedPort = port
    }

    /// A peer that nothing listens behind: its port was bound, then released, so connections are refused.
    package static func refusing() throws -> ScriptedUpstream {
        ScriptedUpstream(refusingOn: try SocketTools.freePort())
    }

    deinit { stop() }

    /// Stops accepting, ends every step that waits, and waits for the connection threads to end.
    package func stop() {
        server?.stop(waiting: 10)
    }

    /// Waits until the peer has closed one more connection than the earlier calls waited for (false after
    /// `seconds` without one).
    package func waitForHangUp(seconds: Double = 5) -> Bool {
        let awaited = lock.withLock { () -> Int in
            hangUpsAwaited += 1
            return hangUpsAwaited
        }
        return (try? eventually("hang-up \(awaited)", timeout: seconds) { closes >= awaited }) != nil
    }

    private var isStopped: Bool { server?.isStopped ?? true }

    private func serve(_ fd: Int32) {
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var pending: [UInt8] = []
        var onConnection = 0
        while let text = readRequest(fd, &pending) {
            let index = record(text)
            let request = Request(index: index, onConnection: onConnection, text: text)
            onConnection += 1
            for step in script(request) {
                guard perform(step, fd, &pending) else { return }
            }
        }
    }

    /// Adds a request to `requests`; its index.
    private func record(_ text: String) -> Int {
        lock.withLock { () -> Int in
            requestTexts.append(text)
            return requestTexts.count - 1
        }
    }

    /// Does `step` on `fd`; false when the connection is to be closed.
    private func perform(_ step: Step, _ fd: Int32, _ pending: inout [UInt8]) -> Bool {
        switch step {
        case .send(let text):
            return SocketTools.writeAll(fd, Array(text.utf8))
        case .trickle(let text):
            for byte in text.utf8 {
                guard SocketTools.writeAll(fd, [byte]) else { return false }
                usleep(500)  // the trickle itself, not a barrier: each byte is its own segment
            }
            return true
        case .wait(let seconds):
            let from = Date()
            // The pause itself (not a barrier), in slices so that `stop()` ends it.
            while !isStopped {
                let left = seconds - Date().timeIntervalSince(from)
                if left <= 0 { break }
                usleep(UInt32(min(left, 0.01) * 1_000_000))
            }
            let waited = Date().timeIntervalSince(from)
            lock.withLock {
                longestWaitSeen = max(longestWaitSeen, waited)
                if waited >= lateWaitThreshold { lateWaitCount += 1 }
            }
            return true
        case .hold(let released, let atMost):
            let start = Date()
            while !released() && !isStopped {
                if Date().timeIntervalSince(start) >= atMost {
                    lock.withLock { expiredHoldCount += 1 }
                    break
                }
                usleep(5_000)
            }
            return true
        case .stream(let piece, let total, let rate):
            let open = stream(fd, Array(piece.utf8), total: total, bytesPerSecond: rate)
            lock.withLock { streamsEnded += 1 }
            return open
        case .closeWhenIdle(let milliseconds):
            guard pending.isEmpty else { return true }  // the next request is already here
            let idleFrom = Date()
            while !isStopped && !SocketTools.waitReadable(fd, milliseconds: 5) {
                if Date().timeIntervalSince(idleFrom) * 1000 >= Double(milliseconds) {
                    lock.withLock { idleCloseCount += 1 }
                    if let next = readRequest(fd, &pending) { _ = record(next) }
                    return false  // closed under the request: no answer
                }
            }
            return true
        case .close:
            return false
        }
    }

    /// Writes `piece` repeatedly; false when the client hung up first.
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

    /// Reads one request (head and `Content-Length` body) as text; nil when the client closed or we stopped.
    private func readRequest(_ fd: Int32, _ buffer: inout [UInt8]) -> String? {
        SocketTools.readRequest(fd, &buffer) { isStopped }
    }
}

extension ScriptedUpstream {
    /// An HTTP/1.1 answer with this body, status, content type and extra header lines (each without its CRLF);
    /// `close` adds `Connection: close`.
    package static func answer(_ body: String, status: Int = 200, contentType: String = "application/json",
                               headers: [String] = [], close: Bool = false) -> String {
        "HTTP/1.1 \(status) X\r\nContent-Type: \(contentType)\r\nContent-Length: \(body.utf8.count)\r\n"
            + headers.map { "\($0)\r\n" }.joined() + (close ? "Connection: close\r\n" : "") + "\r\n\(body)"
    }

    /// What a misbehaving Directus does with each request, as steps (each on a connection of its own).
    package enum Misbehaviour {
        /// Reads the request, closes without answering.
        package static let closeAfterRequest: [Step] = [.close]
        /// Answers `HELLO\r\n\r\n`, which is not HTTP, and closes.
        package static let garbage: [Step] = [.send("HELLO\r\n\r\n"), .close]
        /// Answers 200 with an HTML page.
        package static let notJSON: [Step] = status(200, "<html><body>Directus is down for maintenance</body></html>",
                                                    contentType: "text/html")
        /// Answers 200 with JSON of the wrong shape: `{"data":"x"}`.
        package static let wrongShape: [Step] = status(200, #"{"data":"x"}"#)

        /// Answers with this status, JSON body and extra header lines, then closes.
        package static func status(_ status: Int, _ body: String, contentType: String = "application/json",
                                   headers: [String] = []) -> [Step] {
            [.send(answer(body, status: status, contentType: contentType, headers: headers, close: true)), .close]
        }
    }
}
