import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP

/// The `postern` executable as an operator runs it (docs/api.md, Configuration): exit codes, messages, signals.
/// Needs `.build/debug/postern` (`make test` builds it); without it every test here fails.
@Suite(.serialized)
struct ProcessTests {
    /// Environment for `postern serve` on free loopback ports, memory sessions, Directus at `directus`.
    static func serveEnvironment(port: UInt16, adminPort: UInt16, directus: String) -> [String: String] {
        ["POSTERN_LISTEN": "127.0.0.1:\(port)", "POSTERN_ADMIN_LISTEN": "127.0.0.1:\(adminPort)",
         "POSTERN_SESSION_STORE": "memory", "POSTERN_DIRECTUS_URL": directus, "POSTERN_WORKERS": "2"]
    }

    @Test func versionPrintsAVersion() throws {
        let p = try PosternProcess(["version"])
        defer { p.cleanUp() }
        #expect(p.waitForExit(seconds: 5) == 0)
        let line = p.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(line.hasPrefix("postern "))
        #expect(line.contains { $0.isNumber }, "\(line)")
    }

    @Test func checkNamesEveryBadKeyAndExits1() throws {
        let path = try PosternProcess.scratchFile("bad.json", """
            {"listen": "nowhere", "workers": -1, "colour": 1,
             "directus": {"url": "ftp://x", "timout_ms": 5}, "limits": {"max_body_bytes": "big"}}
            """)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let p = try PosternProcess(["check", "--config", path])
        defer { p.cleanUp() }
        #expect(p.waitForExit(seconds: 5) == 1)
        let lines = (p.stdout + p.stderr).split(separator: "\n").map(String.init)
        for key in ["listen", "workers", "colour", "directus.url", "directus.timout_ms", "limits.max_body_bytes"] {
            #expect(lines.contains { $0.hasPrefix("\(key):") }, "no line names \(key): \(lines)")
        }
    }

    @Test func checkAcceptsAGoodFile() throws {
        let path = try PosternProcess.scratchFile("good.json", #"{"listen": "127.0.0.1:8081", "directus": {"timeout_ms": 2000}}"#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let p = try PosternProcess(["check", "--config", path])
        defer { p.cleanUp() }
        #expect(p.waitForExit(seconds: 5) == 0, "\(p.stdout)\(p.stderr)")
    }

    @Test(arguments: ["public", "admin"])
    func serveWithAPortInUseExitsWithOneLine(_ which: String) throws {
        let (held, heldPort) = try SocketTools.bindLoopback(listening: true)
        defer { close(held) }
        let other = try SocketTools.freePort()
        let env = which == "public"
            ? Self.serveEnvironment(port: heldPort, adminPort: other, directus: "http://127.0.0.1:9")
            : Self.serveEnvironment(port: other, adminPort: heldPort, directus: "http://127.0.0.1:9")
        let started = Date()
        let p = try PosternProcess(["serve"], environment: env)
        defer { p.cleanUp() }
        let status = p.waitForExit(seconds: 5)
        // waitForExit kills the process after 5 s (status nil, a signal): an exit of its own has a status.
        #expect(p.process.terminationReason == .exit, "exited by itself, not killed after \(Date().timeIntervalSince(started)) s")
        #expect(status != nil && status != 0, "exit status \(String(describing: status))")
        let message = p.stderr.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!message.isEmpty && !message.contains("\n"), "one line: \(message)")
        #expect(message.contains("\(heldPort)"), "\(message)")
    }

    @Test func serveAnswersAndExits0OnSIGTERM() throws {
        let port = try SocketTools.freePort()
        let adminPort = try SocketTools.freePort()
        let p = try PosternProcess(["serve"], environment: Self.serveEnvironment(port: port, adminPort: adminPort,
                                                                                 directus: "http://127.0.0.1:9"))
        defer { p.cleanUp() }
        try #require(PosternProcess.waitUntilServing(port: port, seconds: 5), "not serving: \(p.stderr)")
        // The admin listener starts after the public one.
        try #require(PosternProcess.waitUntilServing(port: adminPort, seconds: 5), "admin not serving: \(p.stderr)")
        #expect(try RawHTTPClient(port: adminPort).request("GET", "/healthz").status == 200)
        // The access log goes to stdout as JSON lines.
        p.send(SIGTERM)
        // With nothing in flight it does not wait out the shutdown grace (10 s by default); the margin below that
        // is for a loaded machine, not a speed check.
        #expect(p.waitForExit(seconds: 9) == 0, "\(p.stderr)")
        let logLines = p.stdout.split(separator: "\n")
        #expect(!logLines.isEmpty)
        #expect(logLines.allSatisfy { (try? JSONValue.parse(String($0))) != nil }, "\(p.stdout)")
        // Nothing listens any more.
        #expect((try? RawHTTPClient(port: port).request("GET", "/healthz")) == nil)
    }

    @Test func requestInFlightIsAnsweredBeforeExit() throws {
        let fake = try ScriptedUpstream(every: [.wait(0.5)] + ScriptedUpstream.Misbehaviour.notJSON)
        defer { fake.stop() }
        let port = try SocketTools.freePort()
        let adminPort = try SocketTools.freePort()
        let p = try PosternProcess(["serve"], environment: Self.serveEnvironment(port: port, adminPort: adminPort, directus: fake.url))
        defer { p.cleanUp() }
        try #require(PosternProcess.waitUntilServing(port: port, seconds: 5), "not serving: \(p.stderr)")

        let answer = AnswerBox()
        let thread = Thread {
            let r = try? RawHTTPClient(port: port).json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
            answer.set(r?.status, r?.json?["code"]?.stringValue)
        }
        thread.start()
        // Wait until the login is waiting on Directus, then ask the gateway to stop.
        try eventually("the login reached the fake upstream") { !fake.requests.isEmpty }
        p.send(SIGTERM)

        let (status, code) = answer.wait(seconds: 5)
        #expect(status == 502, "the request in flight still got its answer")
        #expect(code == "upstream_error")
        #expect(p.waitForExit(seconds: 5) == 0, "\(p.stderr)")
    }

    @Test func requestOutlivingTheGracePeriodDoesNotCrashTheExit() throws {
        // Directus never answers; the upstream timeout (5 s) is longer than the grace period (1 s).
        let fake = try ScriptedUpstream(every: [.silent])
        defer { fake.stop() }
        let config = try PosternProcess.scratchFile("grace.json", #"{"limits": {"shutdown_grace_s": 1}, "directus": {"timeout_ms": 5000}}"#)
        defer { try? FileManager.default.removeItem(atPath: config) }
        let port = try SocketTools.freePort()
        let adminPort = try SocketTools.freePort()
        let p = try PosternProcess(["serve", "--config", config],
                                   environment: Self.serveEnvironment(port: port, adminPort: adminPort, directus: fake.url))
        defer { p.cleanUp() }
        try #require(PosternProcess.waitUntilServing(port: port, seconds: 5), "not serving: \(p.stderr)")
        let answer = AnswerBox()
        Thread {
            let r = try? RawHTTPClient(port: port).json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
            answer.set(r?.status, r?.json?["code"]?.stringValue)
        }.start()
        try eventually("the login reached the fake upstream") { !fake.requests.isEmpty }
        let started = Date()
        p.send(SIGTERM)
        // A hang detector well past the grace: the held request never ends by itself, so only the grace ends it.
        let status = p.waitForExit(seconds: 15)
        #expect(status == 0, "exit status \(String(describing: status)) (\(p.process.terminationReason == .uncaughtSignal ? "signal" : "exit")), stderr: \(p.stderr)")
        #expect(Date().timeIntervalSince(started) < 4, "exits soon after the grace period")
        _ = answer.wait(seconds: 2)  // the client gets whatever it gets (an answer or a closed connection)
    }

    @Test func healthcheckExits0WhenServingAnd1WhenNot() throws {
        let port = try SocketTools.freePort()
        let adminPort = try SocketTools.freePort()
        let env = Self.serveEnvironment(port: port, adminPort: adminPort, directus: "http://127.0.0.1:9")
        let p = try PosternProcess(["serve"], environment: env)
        defer { p.cleanUp() }
        try #require(PosternProcess.waitUntilServing(port: port, seconds: 5), "not serving: \(p.stderr)")

        let up = try PosternProcess(["healthcheck"], environment: env)
        defer { up.cleanUp() }
        #expect(up.waitForExit(seconds: 5) == 0, "\(up.stderr)")

        p.send(SIGTERM)
        #expect(p.waitForExit(seconds: 5) == 0)

        let down = try PosternProcess(["healthcheck"], environment: env)
        defer { down.cleanUp() }
        #expect(down.waitForExit(seconds: 5) == 1)
    }
}

/// The answer of a request made on another thread.
private final class AnswerBox: @unchecked Sendable {
    private let lock = NSLock()
    private let done = DispatchSemaphore(value: 0)
    private var status: Int?
    private var code: String?

    func set(_ status: Int?, _ code: String?) {
        lock.withLock {
            self.status = status
            self.code = code
        }
        done.signal()
    }

    func wait(seconds: Double) -> (Int?, String?) {
        _ = done.wait(timeout: .now() + seconds)
        return lock.withLock { (status, code) }
    }
}
