import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

/// The admin listener as a browser on the operator's machine meets it (docs/api.md, Operator console; issue 34):
/// no CORS at all (no `Access-Control-*` header on any answer, every preflight 403), whatever the public
/// listener's `cors` says; failed admin authentications limited per client IP (429 with `Retry-After` past 10 a
/// minute) and logged at `notice` with the IP and the path, never the token.
@Suite struct AdminListenerExposureTests {
    static let token = "test-admin-token-0123456789"
    static let evil = "https://evil.example"

    /// No header of the answer is a CORS one.
    static func corsHeaders(_ r: RawHTTPClient.Response) -> [String] {
        r.headers.fields.map(\.name).filter { $0.lowercased().hasPrefix("access-control-") }
    }

    @Test func aCrossOriginPageGetsNoCORSHeadersFromTheAdminListener() throws {
        // The shipped default: any origin on the public listener.
        let gw = try TestGateway { $0.admin.token = Self.token; $0.cors.allowedOrigins = ["*"] }
        defer { gw.stop() }
        let admin = RawHTTPClient(port: gw.app.adminPort)
        let origin = ["Origin": Self.evil]
        // What a page's fetch() sends: the answers come, but a browser lets the page read none of them.
        for (path, headers) in [("/metrics", origin), ("/readyz", origin), ("/healthz", origin), ("/", origin),
                                ("/admin/stats", origin.merging(["Authorization": "Bearer \(Self.token)"]) { $1 }),
                                ("/admin/sessions?user=x@y.com", origin.merging(["Authorization": "Bearer \(Self.token)"]) { $1 }),
                                ("/admin/stats", origin), ("/nope", origin)] {
            let r = try admin.request("GET", path, headers: headers)
            #expect(r.status != 0, "\(path)")
            #expect(Self.corsHeaders(r).isEmpty, "\(path): \(r.headers.fields)")
        }
        // Preflights, for what a page would need one for (a DELETE with Authorization), are refused.
        let preflights: [(String, [String: String])] = [
            ("/admin/sessions/abcdefgh", ["Access-Control-Request-Method": "DELETE", "Access-Control-Request-Headers": "authorization"]),
            ("/admin/users/u1/sessions", ["Access-Control-Request-Method": "DELETE"]),
            ("/admin/stats", ["Access-Control-Request-Method": "GET", "Access-Control-Request-Headers": "authorization"]),
            ("/metrics", ["Access-Control-Request-Method": "GET"]),
            ("/readyz", ["Access-Control-Request-Method": "GET"]),
        ]
        for (path, headers) in preflights {
            let r = try admin.request("OPTIONS", path, headers: headers.merging(origin) { $1 })
            #expect(r.status == 403, "\(path): \(r.status)")
            #expect(Self.corsHeaders(r).isEmpty, "\(path): \(r.headers.fields)")
        }
        // The public listener keeps its CORS as configured.
        let open = try gw.client().request("OPTIONS", "/api/v1/books",
                                           headers: ["Origin": Self.evil, "Access-Control-Request-Method": "GET"])
        #expect(open.status == 204 && open.headers["Access-Control-Allow-Origin"] == "*", "\(open.status) \(open.headers.fields)")
        let read = try gw.client().request("GET", "/healthz", headers: origin)
        #expect(read.headers["Access-Control-Allow-Origin"] == "*")
    }

    @Test func theEleventhWrongTokenOfAMinuteIs429AndTheRightOneWaitsToo() throws {
        let clock = TestClock()
        let gw = try TestGateway(clock: clock.gatewayClock) { $0.admin.token = Self.token }
        defer { gw.stop() }
        let admin = RawHTTPClient(port: gw.app.adminPort)
        let right = ["Authorization": "Bearer \(Self.token)"]
        // Right tokens do not count.
        for _ in 0..<15 { #expect(try admin.request("GET", "/admin/stats", headers: right).status == 200) }
        for i in 0..<AdminAuthFailures.perMinute {
            let wrong = ["Authorization": "Bearer guess-\(i)-0123456789abcdef"]
            let r = try admin.request(i % 2 == 0 ? "GET" : "DELETE", i % 2 == 0 ? "/admin/stats" : "/admin/users/u\(i)/sessions",
                                      headers: i == 3 ? [:] : wrong)
            #expect(r.status == 401, "attempt \(i + 1): \(r.status) \(r.text)")
        }
        let limited = try admin.request("GET", "/admin/stats", headers: ["Authorization": "Bearer guess-11-0123456789abcdef"])
        #expect(limited.status == 429 && limited.json?["code"]?.stringValue == "rate_limited", "\(limited.status) \(limited.text)")
        let retryAfter = Int(limited.headers["Retry-After"] ?? "") ?? 0
        #expect((1...60).contains(retryAfter), "\(limited.headers.fields)")
        // While limited, the right token too (guesses must not learn which one was right), and every admin path.
        #expect(try admin.request("GET", "/admin/stats", headers: right).status == 429)
        #expect(try admin.request("DELETE", "/admin/sessions/abcdefgh", headers: right).status == 429)
        // The paths outside /admin/ are not behind the guard.
        #expect(try admin.request("GET", "/metrics").status == 200)
        // A minute later the bucket has refilled.
        clock.advance(60)
        #expect(try admin.request("GET", "/admin/stats", headers: right).status == 200)

        // One notice line per failure, with the IP and the path, never the token or a guess.
        let failures = try gw.logLines.all.compactMap { line -> JSONValue? in
            let json = try JSONValue.parse(Data(line.utf8))
            return json["msg"]?.stringValue == "admin authentication failed" ? json : nil
        }
        #expect(failures.count == AdminAuthFailures.perMinute, "\(failures.map(\.text))")
        for line in failures {
            #expect(line["level"]?.stringValue == "notice", "\(line.text)")
            #expect(line["client_ip"]?.stringValue == "127.0.0.1", "\(line.text)")
            #expect(line["path"]?.stringValue?.hasPrefix("/admin/") == true, "\(line.text)")
        }
        #expect(failures.contains { $0["path"]?.stringValue == "/admin/users/u1/sessions" })
        #expect(failures.filter { $0["reason"]?.stringValue == "missing_token" }.count == 1)
        let log = gw.logLines.all.joined(separator: "\n")
        #expect(!log.contains(Self.token) && !log.contains("guess-"), "no token in the log")
        // The refusals past the limit are counted.
        let metrics = try admin.request("GET", "/metrics").text
        #expect(metrics.contains(#"postern_rate_limited_total{limit="admin_auth"} 3"#), "\(metrics)")
    }

    @Test func checkWarnsAboutAWildcardAdminListenerAndLouderWithoutAToken() {
        func warnings(_ listen: String, token: String) -> [String] {
            var config = PosternConfig()
            config.adminListen = listen
            config.admin.token = token
            return config.warnings()
        }
        #expect(warnings("127.0.0.1:9180", token: "").isEmpty)
        #expect(warnings("10.0.0.5:9180", token: "").isEmpty)
        #expect(warnings("localhost:9180", token: "").isEmpty)
        for listen in ["0.0.0.0:9180", "[::]:9180", "[0:0:0:0:0:0:0:0]:9180"] {
            let quiet = warnings(listen, token: Self.token)
            #expect(quiet.count == 1 && quiet[0].hasPrefix("warning: admin_listen"), "\(listen): \(quiet)")
            #expect(!quiet[0].contains(Self.token))
            let loud = warnings(listen, token: "")
            #expect(loud.count == 1 && loud[0].hasPrefix("WARNING: admin_listen") && loud[0].contains("admin.token is not set"),
                    "\(listen): \(loud)")
        }
    }
}
