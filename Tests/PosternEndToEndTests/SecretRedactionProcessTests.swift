import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP

/// Every secret the config holds, written with the characters that end a URL's parts elsewhere (`?`, `#`, `@`, `/`,
/// `%`, `:`), run through every place a config shows up (docs/api.md, Operator console; issue 34): `postern check`,
/// the start-up log, `/metrics` and `GET /admin/stats` of the real binary. None of them shows a secret or a piece
/// of one; the Redis password still connects (the redaction cuts where `RedisURL`, the parse that connects, does).
@Suite(.serialized)
struct SecretRedactionProcessTests {
    /// Each piece is distinctive, so that a secret cut anywhere still shows up in a search.
    static let redisPieces = ["Rq1", "Rq2", "Rq3", "Rq4", "Rq5", "Rq6"]
    static let redisPasswordText = "Rq1?Rq2#Rq3@Rq4%zzRq5:Rq6"
    static let adminToken = "Tk1?Tk2#Tk3@Tk4/Tk5%Tk6:Tk7"
    static let adminPieces = ["Tk1", "Tk2", "Tk3", "Tk4", "Tk5", "Tk6", "Tk7"]
    /// 32 bytes whose base64 holds `/` and `+`.
    static let secretKey = Data([0xFB, 0xFF, 0xBF] + Array("secret-key-material-012345678".utf8)).base64EncodedString()
    static let bootstrapPassword = "Bp1?Bp2#Bp3@Bp4/Bp5%Bp6:Bp7"

    /// The pieces no output may hold.
    static var forbidden: [String] {
        redisPieces + adminPieces + [String(secretKey.prefix(12)), String(secretKey.suffix(12)), "Bp1", "Bp4", "Bp7"]
    }

    static func leaks(_ text: String) -> [String] { forbidden.filter { text.contains($0) } }

    /// The port in the `postern started` line's `field` (`listen` or `admin_listen`), once it is logged.
    static func startedPort(_ p: PosternProcess, _ field: String) throws -> UInt16 {
        var port: UInt16?
        _ = try eventually("postern started", timeout: 20) {
            for line in p.stdout.split(separator: "\n") {
                guard let json = try? JSONValue.parse(Data(line.utf8)), json["msg"]?.stringValue == "postern started",
                      let address = json[field]?.stringValue, let colon = address.lastIndex(of: ":") else { continue }
                port = UInt16(address[address.index(after: colon)...])
            }
            return port != nil || !p.process.isRunning
        }
        guard let port else { throw TestFailure("postern did not start: \(p.stdout)\(p.stderr)") }
        return port
    }

    @Test func noSecretShowsInCheckTheStartUpLogMetricsOrAdminStats() throws {
        // The password Redis is given is what the gateway's parse reads from the URL, whatever it decodes.
        let placeholder = "redis://:\(Self.redisPasswordText)@127.0.0.1:6379/0"
        let parsed = try #require(RedisURL(placeholder)?.password, "the store URL parses")
        let redis = try RedisServer(password: parsed)
        defer { redis.stop() }
        let store = "redis://:\(Self.redisPasswordText)@127.0.0.1:\(redis.port)/0"
        let environment = [
            "POSTERN_LISTEN": "127.0.0.1:0", "POSTERN_ADMIN_LISTEN": "127.0.0.1:0", "POSTERN_WORKERS": "1",
            "POSTERN_DIRECTUS_URL": "http://127.0.0.1:9", "POSTERN_SESSION_STORE": store,
            "POSTERN_ADMIN_TOKEN": Self.adminToken, "POSTERN_SECRET_KEY": Self.secretKey,
            "POSTERN_DIRECTUS_ADMIN_EMAIL": "admin@example.com", "POSTERN_DIRECTUS_ADMIN_PASSWORD": Self.bootstrapPassword,
            "POSTERN_LOG_LEVEL": "debug",
        ]

        let check = try PosternProcess(["check"], environment: environment)
        defer { check.cleanUp() }
        #expect(check.waitForExit(seconds: 10) == 0, "\(check.stdout)\(check.stderr)")
        #expect(check.stdout.contains("sessions.store: from POSTERN_SESSION_STORE"), "\(check.stdout)")
        #expect(Self.leaks(check.stdout + check.stderr).isEmpty, "check: \(check.stdout)\(check.stderr)")

        let serve = try PosternProcess(["serve"], environment: environment)
        defer { serve.cleanUp() }
        let adminPort = try Self.startedPort(serve, "admin_listen")
        let admin = RawHTTPClient(port: adminPort)
        let auth = ["Authorization": "Bearer \(Self.adminToken)"]
        // Connected with the password, so the parse that connects read it whole.
        var stats = RawHTTPClient.Response(status: 0, headers: HTTPHeaders(), body: Data())
        _ = try eventually("redis connected", timeout: 15) {
            stats = try admin.request("GET", "/admin/stats", headers: auth)
            return stats.json?["redis"]?["connected"] == .bool(true)
        }
        #expect(stats.status == 200)
        let config = try #require(stats.json?["config"])
        #expect(config["sessions"]?["store"]?.stringValue == "redis://<redacted>@127.0.0.1:\(redis.port)/0", "\(config.text)")
        #expect(config["admin"]?["token"]?.stringValue == "<redacted>")
        #expect(config["secret_key"]?.stringValue == "<redacted>")
        #expect(Self.leaks(stats.text).isEmpty, "/admin/stats: \(stats.text)")
        let metrics = try admin.request("GET", "/metrics")
        #expect(metrics.status == 200)
        #expect(Self.leaks(metrics.text).isEmpty, "/metrics")
        serve.send(SIGTERM)
        #expect(serve.waitForExit(seconds: 15) == 0)
        #expect(serve.stdout.contains("postern started"))
        #expect(Self.leaks(serve.stdout + serve.stderr).isEmpty, "log: \(serve.stdout)\(serve.stderr)")
    }

    @Test func aStoreURLThatDoesNotParseIsNotEchoedByCheck() throws {
        // A `/` ends the host part before the `@`: no parse, so a problem, which must not quote the URL.
        for store in ["redis://:Rq1/Rq2@127.0.0.1:6379/0", "redis://:Rq1?Rq2#Rq3@127.0.0.1:notaport"] {
            let check = try PosternProcess(["check"], environment: ["POSTERN_SESSION_STORE": store,
                                                                     "POSTERN_DIRECTUS_URL": "http://Rq4:Rq5%2F@cms:8055"])
            defer { check.cleanUp() }
            #expect(check.waitForExit(seconds: 10) == 1, "\(check.stdout)\(check.stderr)")
            #expect(check.stdout.contains("POSTERN_SESSION_STORE:"), "\(check.stdout)")
            #expect(check.stdout.contains("POSTERN_DIRECTUS_URL:"), "\(check.stdout)")
            #expect(Self.leaks(check.stdout + check.stderr).isEmpty, "\(store): \(check.stdout)\(check.stderr)")
        }
    }
}
