import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

@Suite(.serialized) struct ObservabilityTests {
    @Test func metricsOnTheAdminPortOnly() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = try gw.login()
        _ = try gw.client().json("GET", "/api/v1/books", token: token)
        _ = try gw.client().json("GET", "/api/v1/books/99999", token: token)
        let pub = try gw.client().request("GET", "/metrics")
        #expect(pub.status == 404)
        let admin = try RawHTTPClient(port: gw.app.adminPort).request("GET", "/metrics")
        #expect(admin.status == 200)
        #expect(admin.headers["Content-Type"]?.hasPrefix("text/plain") == true)
        let text = admin.text
        #expect(text.contains(#"postern_requests_total{route="/api/v1/books",method="GET",status="200"} 1"#))
        #expect(text.contains(#"postern_requests_total{route="/api/v1/books/{id}",method="GET",status="404"} 1"#))
        #expect(text.contains(#"postern_request_duration_seconds_bucket{route="/api/v1/books",le="+Inf"} 1"#))
        #expect(text.contains("postern_upstream_duration_seconds_count{method=\"GET\"}"))
        #expect(text.contains("postern_active_sessions 1"))
        #expect(text.contains("postern_circuit_state 0"))
        #expect(text.contains("# TYPE postern_rate_limited_total counter"))
        // Raw ids never become labels.
        #expect(!text.contains("/api/v1/books/99999"))
        let open = text.split(separator: "\n").first { $0.hasPrefix("postern_open_connections ") }
        #expect(open != nil)
        #expect(text.contains("# HELP postern_open_connections Client connections open on the public listener."))
    }

    @Test func accessLogHasOneLinePerRequestAndNoSecrets() throws {
        let gw = try TestGateway { $0.logLevel = "info" }
        defer { gw.stop() }
        let login = try gw.client().json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
        let token = try #require(login.json?["user"]?["token"]?.stringValue)
        let refresh = try #require(login.json?["data"]?["refreshToken"]?.stringValue)
        _ = try gw.client().json("GET", "/api/v1/books", token: token, headers: ["X-Request-Id": "trace-1"])
        _ = try gw.client().json("POST", "/api/v1/books", #"{"title":"secret title"}"#, token: token)
        let rotated = try gw.client().json("POST", "/api/v1/user/refresh", #"{"refreshToken":"\#(refresh)"}"#)
        let token2 = try #require(rotated.json?["user"]?["token"]?.stringValue)
        _ = try gw.client().json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"wrong-password"}"#)
        _ = try gw.client().json("POST", "/api/v1/user/logout", token: token2)
        let lines = gw.logLines.all.filter { $0.contains("\"msg\":\"request\"") }
        #expect(lines.count == 6)
        let all = gw.logLines.all.joined(separator: "\n")
        for secret in [token, refresh, token2, "123456", "wrong-password", "eyJ", "secret title", "psr_", "pst_"] {
            #expect(!all.contains(secret), "log leaks \(secret.prefix(8))")
        }
        let books = try #require(lines.first { $0.contains("trace-1") }.flatMap { try? JSONValue.parse($0) })
        #expect(books["route"] == .string("/api/v1/books"))
        #expect(books["status"] == .int(200))
        #expect(books["user_id"]?.stringValue == gw.standIn.userID(email: "x@y.com"))
        #expect(books["duration_ms"] != nil && books["upstream_ms"] != nil)
    }

    @Test func overlongRequestTargetIs414() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let r = try gw.client().request("GET", "/api/v1/books?search=" + String(repeating: "a", count: 9000))
        #expect(r.status == 414)
        #expect(r.json?["code"] == .string("uri_too_long"))
        #expect(r.json?["total"] == .int(0))
        #expect(gw.standIn.received.isEmpty)
    }
}
