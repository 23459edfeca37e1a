import Foundation
import Testing
@testable import PosternCore
import PosternTesting

@Suite(.serialized, .enabled(if: FileManager.default.isExecutableFile(atPath: "/usr/bin/prlimit")))
struct ResourceExhaustionTests {
    /// CPU time (user + system, in clock ticks) a process has used.
    static func cpuTicks(_ pid: Int32) -> Int? {
        guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 13, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
        return user + system
    }

    /// How many descriptors a process has open.
    static func openDescriptors(_ pid: Int32) -> Int {
        (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fd").count) ?? 0
    }

    @Test func runningOutOfFileDescriptorsNeitherCrashesNorSpins() throws {
        let port = try SocketTools.freePort()
        let admin = try SocketTools.freePort()
        let gateway = try PosternProcess(["serve"], environment: [
            "POSTERN_LISTEN": "127.0.0.1:\(port)", "POSTERN_ADMIN_LISTEN": "127.0.0.1:\(admin)",
            "POSTERN_SESSION_STORE": "memory", "POSTERN_WORKERS": "1", "POSTERN_LOG_LEVEL": "error",
            "POSTERN_DIRECTUS_URL": "http://127.0.0.1:9",
        ])
        defer {
            gateway.send(SIGKILL)
            _ = gateway.waitForExit(seconds: 5)
            gateway.cleanUp()
        }
        #expect(PosternProcess.waitUntilServing(port: port, seconds: 10))
        let pid = gateway.process.processIdentifier
        let limit = Process()
        limit.executableURL = URL(fileURLWithPath: "/usr/bin/prlimit")
        limit.arguments = ["--pid", String(pid), "--nofile=48:48"]
        try limit.run()
        limit.waitUntilExit()
        #expect(limit.terminationStatus == 0)

        // Far more idle connections than descriptors left: accept() starts failing with EMFILE.
        var clients: [RawHTTPClient] = []
        for _ in 0..<120 {
            let c = RawHTTPClient(port: port)
            if (try? c.connect()) != nil { clients.append(c) }
        }
        // Out of descriptors: every one up to the limit is open (the rest of the clients wait in the backlog).
        try eventually("the gateway holds all 48 descriptors") { Self.openDescriptors(pid) >= 48 }
        let before = try #require(ResourceExhaustionTests.cpuTicks(pid))
        // The window the CPU time is measured over (what is measured, not a wait for something).
        Thread.sleep(forTimeInterval: 1.0)
        let after = try #require(ResourceExhaustionTests.cpuTicks(pid))
        // A loop spinning on a readable listener burns a whole core (about 100 ticks a second).
        #expect(after - before < 40, "gateway used \(after - before) ticks in 1 s while out of descriptors")
        #expect(gateway.process.isRunning)

        // Once descriptors are free again, it serves again.
        for c in clients { c.close() }
        clients.removeAll()
        #expect(PosternProcess.waitUntilServing(port: port, seconds: 5))
    }
}
