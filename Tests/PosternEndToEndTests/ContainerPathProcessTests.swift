import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP

/// `postern check` and `postern standin` as the container path uses them (docs/docker.md).
@Suite(.serialized)
struct ContainerPathProcessTests {
    @Test func checkNamesWhatTheEnvironmentSetAndWhichValueWon() throws {
        let path = try PosternProcess.scratchFile("mounted.json", #"{"listen": "nope", "workers": 2}"#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        // An ENV over a bad file value: the file's value is not used, and check says so.
        let over = try PosternProcess(["check", "--config", path],
                                      environment: ["POSTERN_LISTEN": "0.0.0.0:8080", "POSTERN_SESSION_STORE": "memory"])
        defer { over.cleanUp() }
        #expect(over.waitForExit(seconds: 5) == 0, "\(over.stdout)\(over.stderr)")
        let lines = over.stdout.split(separator: "\n").map(String.init)
        #expect(lines.contains("listen: from POSTERN_LISTEN (the file's value is not used)"), "\(lines)")
        #expect(lines.contains("sessions.store: from POSTERN_SESSION_STORE"), "\(lines)")
        #expect(!lines.contains { $0.hasPrefix("workers:") }, "the file's own values are not listed: \(lines)")

        // Without the ENV, the file's bad value is the one checked.
        let alone = try PosternProcess(["check", "--config", path], environment: ["POSTERN_SESSION_STORE": "memory"])
        defer { alone.cleanUp() }
        #expect(alone.waitForExit(seconds: 5) == 1)
        #expect(alone.stdout.contains(#"listen: must be host:port"#), "\(alone.stdout)")

        // A bad value from the environment is named by its variable, and the origin line says it won.
        let bad = try PosternProcess(["check", "--config", path], environment: ["POSTERN_LISTEN": "nowhere"])
        defer { bad.cleanUp() }
        #expect(bad.waitForExit(seconds: 5) == 1)
        let badLines = bad.stdout.split(separator: "\n").map(String.init)
        #expect(badLines.contains { $0.hasPrefix("POSTERN_LISTEN: must be host:port") }, "\(badLines)")
        #expect(badLines.contains("listen: from POSTERN_LISTEN (the file's value is not used)"), "\(badLines)")
    }

    /// The port the stand-in printed on its first line, waiting up to `seconds`.
    static func standInPort(_ p: PosternProcess, seconds: Double) -> UInt16? {
        var port: UInt16?
        _ = try? eventually("the stand-in printed its port", timeout: seconds) {
            // "Directus stand-in on http://127.0.0.1:PORT (…)"
            if let line = p.stdout.split(separator: "\n").first, let url = line.split(separator: " ").first(where: { $0.hasPrefix("http://") }),
               let colon = url.lastIndex(of: ":"), let printed = UInt16(url[url.index(after: colon)...]) {
                port = printed
                return true
            }
            return !p.process.isRunning
        }
        return port
    }

    @Test func unbootstrappedStandInIsMadeReadyByBootstrap() throws {
        let standIn = try PosternProcess(["standin", "0", "--unbootstrapped",
                                          "--admin-email", "root@example.com", "--admin-password", "smoke-admin-1"])
        defer { standIn.cleanUp() }
        let port = try #require(Self.standInPort(standIn, seconds: 10), "\(standIn.stdout)\(standIn.stderr)")
        #expect(standIn.stdout.contains("unbootstrapped"))
        let client = RawHTTPClient(port: port)
        // Only the admin exists: the tutorial user of the seeded stand-in does not.
        #expect(try client.json("POST", "/auth/login", #"{"email":"x@y.com","password":"123456"}"#).status == 401)
        let login = try client.json("POST", "/auth/login", #"{"email":"root@example.com","password":"smoke-admin-1"}"#)
        let token = try #require(login.json?["data"]?["access_token"]?.stringValue, "\(login.text)")
        #expect(try client.json("GET", "/items/posts", token: token).status == 403, "no posts collection yet")

        let bootstrap = try PosternProcess(["bootstrap"], environment: [
            "POSTERN_DIRECTUS_URL": "http://127.0.0.1:\(port)",
            "POSTERN_DIRECTUS_ADMIN_EMAIL": "root@example.com", "POSTERN_DIRECTUS_ADMIN_PASSWORD": "smoke-admin-1",
        ])
        defer { bootstrap.cleanUp() }
        #expect(bootstrap.waitForExit(seconds: 30) == 0, "\(bootstrap.stdout)\(bootstrap.stderr)")
        #expect(bootstrap.stdout.contains("created"), "\(bootstrap.stdout)")
        #expect(try client.json("GET", "/items/posts", token: token).status == 200)

        standIn.send(SIGTERM)
        #expect(standIn.waitForExit(seconds: 5) == 0)
    }

    @Test func standInRefusesABadArgument() throws {
        let p = try PosternProcess(["standin", "0", "--host"])
        defer { p.cleanUp() }
        #expect(p.waitForExit(seconds: 5) == 2)
        #expect(p.stderr.contains("--host needs a value"), "\(p.stderr)")
    }
}
