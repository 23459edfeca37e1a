import Foundation
import Testing
@testable import PosternCore
import PosternTesting

/// Reloading the config of the real `postern serve` (docs/api.md, Reloading the config): SIGHUP, the file watch
/// over a Kubernetes ConfigMap's symlink swap, and `postern reload` with its exit codes. What is served is read
/// from `/api/v1/openapi.json` (the `Books` schema names `title` or `name`), so no Directus is needed.
@Suite(.serialized)
struct ReloadProcessTests {
    static let adminToken = "reload-process-token-0123456789"

    /// A config whose only resource is `books` with its title under `titleKey`.
    static func file(titleKey: String, extra: String = "") -> String {
        """
        {\(extra)"resources": [
          {"name": "books", "collection": "posts",
           "fields": {"id": "id", "\(titleKey)": "title", "subtitle": "content", "user": "user_created"},
           "required": ["\(titleKey)"], "writable": ["\(titleKey)", "subtitle"], "owner": "user_created"}]}
        """
    }

    /// `postern serve --config path` on free ports with the admin token, Directus nowhere.
    final class Server {
        let process: PosternProcess
        let port: UInt16
        let adminPort: UInt16

        /// Without `workersFromEnvironment`, `workers` comes from the file.
        init(config path: String, watch: Bool = false, workersFromEnvironment: Bool = true) throws {
            port = try SocketTools.freePort()
            adminPort = try SocketTools.freePort()
            var environment = ["POSTERN_LISTEN": "127.0.0.1:\(port)", "POSTERN_ADMIN_LISTEN": "127.0.0.1:\(adminPort)",
                               "POSTERN_SESSION_STORE": "memory", "POSTERN_DIRECTUS_URL": "http://127.0.0.1:9",
                               "POSTERN_WORKERS": "2", "POSTERN_ADMIN_TOKEN": ReloadProcessTests.adminToken]
            if watch { environment["POSTERN_CONFIG_WATCH"] = "1" }
            if !workersFromEnvironment { environment["POSTERN_WORKERS"] = nil }
            process = try PosternProcess(["serve", "--config", path], environment: environment)
            guard PosternProcess.waitUntilServing(port: port, seconds: 10),
                  PosternProcess.waitUntilServing(port: adminPort, seconds: 10) else {
                throw TestFailure("not serving: \(process.stderr)")
            }
        }

        /// The title key the served OpenAPI document's `Books` schema has ("title" or "name"), read on `client`.
        func titleKey(_ client: RawHTTPClient? = nil) throws -> String? {
            let document = try (client ?? RawHTTPClient(port: port)).request("GET", "/api/v1/openapi.json").json
            let properties = document?["components"]?["schemas"]?["Books"]?["properties"]
            if properties?["title"] != nil { return "title" }
            if properties?["name"] != nil { return "name" }
            return nil
        }

        /// `/metrics` of the admin listener.
        func metrics() throws -> String { try RawHTTPClient(port: adminPort).request("GET", "/metrics").text }

        /// What the process wrote to standard output, kept by `stop`.
        private(set) var output = ""

        /// Stops with SIGTERM; the exit status.
        func stop() -> Int32? {
            process.send(SIGTERM)
            defer { process.cleanUp() }
            let status = process.waitForExit(seconds: 15)
            output = process.stdout
            return status
        }
    }

    @Test func fiveSIGHUPsWithinFiftyMillisecondsLeaveOneNewGenerationAndNoConnectionDropped() throws {
        let path = try PosternProcess.scratchFile("hup.json", Self.file(titleKey: "title"))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let server = try Server(config: path)
        let keepAlive = RawHTTPClient(port: server.port)
        #expect(try server.titleKey(keepAlive) == "title")
        try Self.file(titleKey: "name").write(toFile: path, atomically: true, encoding: .utf8)
        let start = Date()
        for _ in 0..<5 { server.process.send(SIGHUP) }
        #expect(Date().timeIntervalSince(start) < 0.05)
        try eventually("the new config serves") { try server.titleKey() == "name" }
        #expect(server.process.process.isRunning, "SIGHUP must not end the process: \(server.process.stderr)")
        // The same keep-alive connection, opened before the signals, goes on with the new generation.
        #expect(try server.titleKey(keepAlive) == "name")
        // Coalesced or not, every reload after the first finds nothing new: one new generation.
        try eventually("the reloads are counted") {
            let metrics = try server.metrics()
            return metrics.contains("postern_config_generation 2") && !metrics.contains(#"postern_config_reloads_total{result="ok"} 0"#)
        }
        let metrics = try server.metrics()
        #expect(metrics.contains(#"postern_config_reloads_total{result="invalid"} 0"#), "\(metrics)")
        #expect(server.stop() == 0)
        #expect(server.output.contains(#""msg":"config reloaded""#) && server.output.contains(#""trigger":"SIGHUP""#))
    }

    @Test func theWatchFollowsAConfigMapSymlinkSwapAndAnInPlaceEdit() throws {
        // The layout kubelet makes: dir/postern.json -> ..data/postern.json, ..data -> ..2026_01_01_00_00_00.1
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("postern-configmap-\(UUID().uuidString)").path
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let first = "\(dir)/..2026_01_01_00_00_00.1"
        try FileManager.default.createDirectory(atPath: first, withIntermediateDirectories: true)
        try Self.file(titleKey: "title").write(toFile: "\(first)/postern.json", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: "\(dir)/..data", withDestinationPath: "..2026_01_01_00_00_00.1")
        try FileManager.default.createSymbolicLink(atPath: "\(dir)/postern.json", withDestinationPath: "..data/postern.json")
        let server = try Server(config: "\(dir)/postern.json", watch: true)
        #expect(try server.titleKey() == "title")

        // The update: a new timestamped directory, a new link beside ..data, renamed over it (atomic).
        let second = "\(dir)/..2026_01_01_00_01_00.2"
        try FileManager.default.createDirectory(atPath: second, withIntermediateDirectories: true)
        try Self.file(titleKey: "name").write(toFile: "\(second)/postern.json", atomically: true, encoding: .utf8)
        try FileManager.default.createSymbolicLink(atPath: "\(dir)/..data_tmp", withDestinationPath: "..2026_01_01_00_01_00.2")
        #expect(rename("\(dir)/..data_tmp", "\(dir)/..data") == 0)
        try FileManager.default.removeItem(atPath: first)
        try eventually("the watch reloads the swapped file", timeout: 15) { try server.titleKey() == "name" }

        // An edit of the file itself (its modification time and size change), as outside Kubernetes.
        let edited = Self.file(titleKey: "title")
        let handle = try #require(FileHandle(forWritingAtPath: "\(second)/postern.json"))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data(edited.utf8))
        try handle.close()
        try eventually("the watch reloads the edited file", timeout: 15) { try server.titleKey() == "title" }
        #expect(try server.metrics().contains("postern_config_generation 3"))
        #expect(server.stop() == 0)
        #expect(server.output.contains(#""trigger":"watch""#))
    }

    /// Runs `postern reload <arguments>` to its end.
    static func reload(_ arguments: [String], _ server: Server?, token: String? = adminToken,
                       config: String? = nil) throws -> (status: Int32?, stdout: String, stderr: String) {
        var environment: [String: String] = [:]
        if let server { environment["POSTERN_ADMIN_LISTEN"] = "127.0.0.1:\(server.adminPort)" }
        if let token { environment["POSTERN_ADMIN_TOKEN"] = token }
        let p = try PosternProcess(["reload"] + arguments + (config.map { ["--config", $0] } ?? []), environment: environment)
        defer { p.cleanUp() }
        let status = p.waitForExit(seconds: 20)
        return (status, p.stdout, p.stderr)
    }

    @Test func posternReloadSaysWhatHappenedWithExitCodes() throws {
        let path = try PosternProcess.scratchFile("cli.json", Self.file(titleKey: "title"))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let server = try Server(config: path)
        defer { _ = server.stop() }

        let same = try Self.reload([], server)
        #expect(same.status == 0 && same.stdout == "unchanged: config generation 1 keeps serving\n", "\(same)")

        try Self.file(titleKey: "name").write(toFile: path, atomically: true, encoding: .utf8)
        let changed = try Self.reload([], server)
        #expect(changed.status == 0 && changed.stdout == "reloaded: config generation 2\n", "\(changed)")
        #expect(try server.titleKey() == "name")

        let json = try Self.reload(["--json"], server)
        #expect(json.status == 0 && json.stdout == #"{"generation":2,"changed":false}"# + "\n", "\(json)")

        try Self.file(titleKey: "title").replacingOccurrences(of: #""collection": "posts""#, with: #""collection": """#)
            .write(toFile: path, atomically: true, encoding: .utf8)
        let invalid = try Self.reload([], server)
        #expect(invalid.status == 1, "\(invalid)")
        #expect(invalid.stderr.contains("the config is invalid") && invalid.stderr.contains("resources[0].collection"), "\(invalid)")
        #expect(try server.titleKey() == "name", "the old config keeps serving")

        // --admin instead of POSTERN_ADMIN_LISTEN.
        try Self.file(titleKey: "title", extra: #""cors": {"max_age_s": 5}, "#).write(toFile: path, atomically: true, encoding: .utf8)
        let admin = try Self.reload(["--admin", "http://127.0.0.1:\(server.adminPort)"], nil)
        #expect(admin.status == 0 && admin.stdout == "reloaded: config generation 3\n", "\(admin)")

        let noToken = try Self.reload([], server, token: nil)
        #expect(noToken.status == 2 && noToken.stderr.contains("POSTERN_ADMIN_TOKEN"), "\(noToken)")
        let wrongToken = try Self.reload([], server, token: "wrong-token-0123456789")
        #expect(wrongToken.status == 1 && wrongToken.stderr.contains("401"), "\(wrongToken)")
        let unknown = try Self.reload(["--colour"], server)
        #expect(unknown.status == 2 && unknown.stderr.contains("usage: postern reload"), "\(unknown)")
        let help = try Self.reload(["--help"], nil, token: nil)
        #expect(help.status == 0 && help.stdout.contains("usage: postern reload"), "\(help)")
        let unreachable = try Self.reload(["--admin", "http://127.0.0.1:9"], nil)
        #expect(unreachable.status == 1 && unreachable.stderr.contains("cannot reach"), "\(unreachable)")
    }

    @Test func aRestartOnlyKeyInTheFileIsRefusedWith409AndExit1() throws {
        let path = try PosternProcess.scratchFile("restart.json", Self.file(titleKey: "title", extra: #""workers": 2, "#))
        defer { try? FileManager.default.removeItem(atPath: path) }
        let server = try Server(config: path, workersFromEnvironment: false)
        defer { _ = server.stop() }
        // A new shape beside a new worker count: the whole reload is refused, the old shape keeps serving.
        try Self.file(titleKey: "name", extra: #""workers": 3, "#).write(toFile: path, atomically: true, encoding: .utf8)
        let answer = try RawHTTPClient(port: server.adminPort).request("POST", "/admin/reload",
                                                                       headers: ["Authorization": "Bearer \(Self.adminToken)"])
        #expect(answer.status == 409 && answer.json?["code"]?.stringValue == "restart_required", "\(answer.text)")
        #expect(answer.json?["keys"] == .array([.string("workers")]))
        let refused = try Self.reload([], server)
        #expect(refused.status == 1 && refused.stderr.contains("only a restart can change workers"), "\(refused)")
        #expect(try server.titleKey() == "title")
        #expect(try server.metrics().contains(#"postern_config_reloads_total{result="restart_required"} 2"#))
    }
}
