import Foundation
import Testing
@testable import PosternCore
import PosternTesting

/// A failed start of `postern serve` ends the process with one line, even under CPU load (the event loops that had only
/// just started are stopped: EventLoopStopTests has the loop's side).
@Suite(.serialized) struct ServeStartFailureTests {
    @Test func serveWithAnUnopenableStoreExitsWithOneLineUnderLoad() throws {
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
