import Foundation
import Testing
@testable import PosternCore

/// A failed start stops event loops that have only just started (issue: `postern serve` with a store it
/// cannot open sometimes never exited). Under CPU load a loop thread can be preempted between announcing
/// that it runs and entering `event_base_loop`; a stop requested in that window must still end the loop.
@Suite(.serialized) struct EventLoopStopTests {
    /// Threads that keep every core busy until `stop()`.
    final class Spinners: @unchecked Sendable {
        private let lock = NSLock()
        private var running = true
        private let done = DispatchGroup()

        init(count: Int) {
            for _ in 0..<count {
                done.enter()
                Thread { [self] in
                    var x: UInt64 = 0
                    while lock.withLock({ running }) {
                        for i in 0..<10_000 { x &+= UInt64(i) &* 31 }
                    }
                    if x == 42 { print("") }  // keeps the loop from being optimised away
                    done.leave()
                }.start()
            }
        }

        func stop() {
            lock.withLock { running = false }
            done.wait()
        }
    }

    @Test func startAndStopUnderLoadNeverHangs() throws {
        let spinners = Spinners(count: 2 * ProcessInfo.processInfo.activeProcessorCount)
        defer { spinners.stop() }
        var hung = 0
        for _ in 0..<200 {
            let finished = DispatchSemaphore(value: 0)
            // Create and stop on a helper thread, as `Application.build` does when the store cannot be opened;
            // the wait below only detects a hang (a stuck helper is abandoned, the test fails).
            Thread {
                let group = EventLoopGroup(count: 2, name: "stop-test")
                group.shutdown()
                finished.signal()
            }.start()
            if finished.wait(timeout: .now() + 10) == .timedOut {
                hung += 1
                break
            }
        }
        #expect(hung == 0, "an event loop never stopped")
    }

    @Test(.enabled(if: PosternProcess.binaryExists, "needs .build/debug/postern"))
    func serveWithAnUnopenableStoreExitsWithOneLineUnderLoad() throws {
        let spinners = Spinners(count: 2 * ProcessInfo.processInfo.activeProcessorCount)
        defer { spinners.stop() }
        // A regular file where the store's directory should be: the store cannot be opened, even as root.
        let blocker = try PosternProcess.scratchFile("not-a-directory", "x")
        defer { try? FileManager.default.removeItem(atPath: blocker) }
        for _ in 0..<10 {
            let port = try SocketTools.freePort()
            let adminPort = try SocketTools.freePort()
            let p = try PosternProcess(["serve"], environment: [
                "POSTERN_LISTEN": "127.0.0.1:\(port)", "POSTERN_ADMIN_LISTEN": "127.0.0.1:\(adminPort)",
                "POSTERN_SESSION_STORE": "sqlite:\(blocker)/sessions.db",
                "POSTERN_DIRECTUS_URL": "http://127.0.0.1:9", "POSTERN_WORKERS": "4",
            ])
            defer { p.cleanUp() }
            // A hang detector, not a speed assertion: a start that fails must end.
            let status = p.waitForExit(seconds: 30)
            #expect(status != nil && status != 0, "exit status \(String(describing: status))")
            let message = p.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(!message.isEmpty && !message.contains("\n"), "one line: \(message)")
        }
    }
}
