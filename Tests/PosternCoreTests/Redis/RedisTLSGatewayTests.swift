import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternCoreTesting

/// Gateways on a TLS Redis (`rediss://` as an ACL user, the CA made by the test), through real sockets: sessions
/// shared, an outage answered 503 and healed, a refusing Redis failing the start with a clear line, and no
/// password in a log line, a page or `/admin/stats`.
@Suite(.serialized) struct RedisTLSGatewayTests {
    static let password = "gw-tls-Secret-99"
    static let adminToken = "tls-admin-token-0123456789"

    /// Persistent when the test restarts it: sessions written before an outage are there after it.
    static func server(_ certificates: TestCertificates, persistent: Bool = false) throws -> RedisServer {
        try RedisServer(persistent: persistent, tls: RedisServer.TLS(certificates: certificates),
                        users: ["app on >\(password) ~* &* +@all"])
    }

    @Test func twoGatewaysShareSessionsOverTLSAnOutageIs503AndServiceComesBack() throws {
        let certificates = try TestCertificates()
        let server = try Self.server(certificates, persistent: true)
        let gw = try TwoGateways(server: server) {
            $0.sessions.store = server.tlsURL(user: "app", password: Self.password)
            $0.sessions.redisCAFile = certificates.caFile
            $0.admin.token = Self.adminToken
        }
        defer { gw.stop() }
        // Signed in on A, used on B; signed out on B, refused on A.
        let first = try gw.login(gw.a)
        #expect(try gw.me(gw.b, first.token) == 200)
        #expect(try gw.me(gw.a, first.token) == 200)
        let logout = try gw.client(gw.b).json("POST", "/api/v1/user/logout", #"{"refreshToken":"\#(first.refresh)"}"#,
                                              token: first.token)
        #expect(logout.status == 200 || logout.status == 204, "\(logout.text)")
        _ = try eventually("the logout on B reaches A", timeout: 5) { try gw.me(gw.a, first.token) == 401 }
        let second = try gw.login(gw.a)  // a token B has never seen, so B must ask Redis

        gw.redis.stop()
        _ = try eventually("B is not ready while Redis is away", timeout: 10) {
            try gw.client(gw.b).json("GET", "/readyz").status == 503
        }
        let ready = try gw.client(gw.b).json("GET", "/readyz")
        #expect(ready.status == 503 && ready.text.contains("session_store_unavailable"), "\(ready.text)")
        #expect(try gw.me(gw.b, second.token) == 503)
        let login = try gw.client(gw.b).json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
        #expect(login.status == 503 && login.text.contains("session_store_unavailable"), "\(login.text)")

        try gw.redis.restart()
        try gw.waitUntilReady(gw.a)
        try gw.waitUntilReady(gw.b)
        #expect(try gw.me(gw.b, second.token) == 200)
        #expect(try gw.login(gw.b).token.isEmpty == false)

        // Refused at run time (the ACL password rotated under the gateways): 503 and /readyz 503 like an
        // outage, and service comes back once Redis accepts them again.
        try server.cli(["ACL", "SETUSER", "app", "resetpass", ">rotated-Secret-55"])
        try server.cli(["CLIENT", "KILL", "USER", "app"])
        _ = try eventually("B is not ready while Redis refuses it", timeout: 10) {
            try gw.client(gw.b).json("GET", "/readyz").status == 503
        }
        let refusedLogin = try gw.client(gw.b).json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
        #expect(refusedLogin.status == 503 && refusedLogin.text.contains("session_store_unavailable"), "\(refusedLogin.text)")
        try server.cli(["ACL", "SETUSER", "app", "resetpass", ">\(Self.password)"])
        try gw.waitUntilReady(gw.a)
        try gw.waitUntilReady(gw.b)
        #expect(try gw.me(gw.b, second.token) == 200)

        // The password is nowhere: not in the pages (either listener), /admin/stats, /metrics, nor the log.
        var shown: [String] = []
        for app in [gw.a, gw.b] {
            let admin = RawHTTPClient(port: app.adminPort)
            let stats = try admin.request("GET", "/admin/stats", headers: ["Authorization": "Bearer \(Self.adminToken)"])
            #expect(stats.status == 200)
            #expect(stats.text.contains("rediss://<redacted>@localhost:\(server.tlsPort ?? 0)/0"), "\(stats.text)")
            #expect(stats.json?["redis"]?["connected"] == .bool(true), "\(stats.text)")
            shown.append(stats.text)
            for target in ["/", "/metrics", "/readyz", "/healthz"] { shown.append(try admin.request("GET", target).text) }
            for target in ["/readyz", "/healthz"] { shown.append(try gw.client(app).json("GET", target).text) }
        }
        shown.append(ready.text)
        shown.append(login.text)
        shown.append(refusedLogin.text)
        let log = gw.logLines.all.joined(separator: "\n")
        #expect(log.contains("rediss://app:***@localhost:\(server.tlsPort ?? 0)/0"), "the store is named in the log")
        for text in shown + [log] {
            #expect(!text.contains(Self.password), "the Redis password was shown: \(text.prefix(300))")
        }
    }

    @Test func aRedisThatRefusesTheGatewayFailsTheStartWithAClearLine() throws {
        let certificates = try TestCertificates()
        let server = try Self.server(certificates)
        var config = PosternConfig.testing
        config.directus.url = "http://127.0.0.1:9"
        let log = LogCapture()
        func startFailure(_ configure: (inout PosternConfig) -> Void) -> String? {
            var changed = config
            configure(&changed)
            do {
                let app = try Application.build(config: changed, logSink: { log.append($0) })
                app.shutdown()
                return nil
            } catch {
                return error.description
            }
        }
        let url = server.tlsURL(user: "app", password: Self.password)
        let wrongCA = startFailure {
            $0.sessions.store = url
            $0.sessions.redisCAFile = certificates.otherCAFile
        }
        #expect(wrongCA?.contains("sessions.store: Redis at rediss://app:***@localhost:\(server.tlsPort ?? 0)/0 refused this client") == true,
                "\(wrongCA ?? "started")")
        #expect(wrongCA?.contains("certificate verify failed") == true, "\(wrongCA ?? "started")")
        let wrongPassword = startFailure {
            $0.sessions.store = server.tlsURL(user: "app", password: "Wrong-pass-123")
            $0.sessions.redisCAFile = certificates.caFile
        }
        #expect(wrongPassword?.contains("Redis refused AUTH: WRONGPASS") == true, "\(wrongPassword ?? "started")")
        #expect(startFailure {
            $0.sessions.store = url
            $0.sessions.redisCAFile = certificates.caFile
        } == nil)
        // A Redis out of reach is no reason not to start: it is 503 until Redis comes.
        server.stop()
        #expect(startFailure {
            $0.sessions.store = url
            $0.sessions.redisCAFile = certificates.caFile
        } == nil)
        for text in [wrongCA ?? "", wrongPassword ?? "", log.all.joined(separator: "\n")] {
            #expect(!text.contains(Self.password) && !text.contains("Wrong-pass-123"))
        }
    }
}
