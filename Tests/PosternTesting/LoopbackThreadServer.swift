import Foundation

/// A listening socket on 127.0.0.1 with a free port that serves each accepted connection on a thread of its own
/// (`serve`, then the socket is closed): the accept loop of `ScriptedUpstream`.
package final class LoopbackThreadServer: @unchecked Sendable {
    /// The port it listens on.
    package let port: UInt16
    private let listenFD: Int32
    private let serve: @Sendable (Int32) -> Void
    private let lock = NSLock()
    private var stopped = false
    private var connectionCount = 0
    private var closeCount = 0
    private let finished = DispatchGroup()

    /// The connections accepted.
    package var connections: Int { lock.withLock { connectionCount } }
    /// The connections it has closed (after `serve` returned).
    package var closes: Int { lock.withLock { closeCount } }
    /// True once `stop()` was called: `serve` should then return soon.
    package var isStopped: Bool { lock.withLock { stopped } }

    /// Starts listening; `serve` runs on its own thread for each connection.
    package init(serve: @escaping @Sendable (Int32) -> Void) throws {
        self.serve = serve
        let (fd, port) = try SocketTools.bindLoopback(listening: true)
        listenFD = fd
        self.port = port
        finished.enter()
        Thread { [self] in acceptLoop() }.start()
    }

    /// Stops accepting and waits (at most `seconds`) for the connection threads to end; once.
    package func stop(waiting seconds: Double) {
        let was = lock.withLock { () -> Bool in
            defer { stopped = true }
            return stopped
        }
        if !was { _ = finished.wait(timeout: .now() + seconds) }
    }

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
}
