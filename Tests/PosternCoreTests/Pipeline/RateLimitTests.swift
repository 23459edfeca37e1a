import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting

@Suite struct RateLimitTests {
    func login(_ gw: InProcessGateway, _ email: String, _ password: String, from ip: String? = nil) async -> InProcessGateway.Answer {
        var headers = HTTPHeaders()
        if let ip { headers.add("X-Forwarded-For", ip) }
        return await gw.send(.post, "/api/v1/user/login", #"{"email":"\#(email)","password":"\#(password)"}"#, headers: headers)
    }

    func directusLogins(_ gw: InProcessGateway) -> Int { gw.standIn.received.filter { $0.path == "/auth/login" }.count }

    @Test func failedLoginsPerEmailAreLimitedEvenForTheRightPassword() async {
        let gw = InProcessGateway()
        for _ in 0..<5 { #expect(await login(gw, "x@y.com", "wrong").status == 401) }
        let limited = await login(gw, "X@Y.com", "wrong")
        #expect(limited.status == 429)
        #expect(limited.code == "rate_limited")
        #expect(Int(limited.response.headers["Retry-After"] ?? "") ?? 0 >= 1)
        let right = await login(gw, "x@y.com", "123456")
        #expect(right.status == 429)
        #expect(directusLogins(gw) == 5)
        // Another email from the same IP is not limited yet (10 per IP).
        #expect(await login(gw, "second@example.com", "password2").status == 200)
    }

    @Test func failedLoginsPerIPAreLimited() async {
        let gw = InProcessGateway()
        for i in 0..<10 { #expect(await login(gw, "user\(i)@example.com", "wrong").status == 401) }
        #expect(await login(gw, "someone@example.com", "wrong").status == 429)
        #expect(directusLogins(gw) == 10)
    }

    @Test func successfulLoginsDoNotCount() async {
        let gw = InProcessGateway()
        for _ in 0..<25 { #expect(await login(gw, "x@y.com", "123456").status == 200) }
    }

    @Test func dailyCapPerEmail() async {
        let gw = InProcessGateway { config in
            config.rateLimits.failedLoginsPerEmailPerMinute = 100
            config.rateLimits.failedLoginsPerIPPerMinute = 100
            config.rateLimits.failedLoginsPerEmailPerDay = 3
        }
        for _ in 0..<3 { #expect(await login(gw, "x@y.com", "wrong").status == 401) }
        let capped = await login(gw, "x@y.com", "wrong")
        #expect(capped.status == 429)
        #expect(Int(capped.response.headers["Retry-After"] ?? "") ?? 0 > 60)
    }

    @Test func upstreamFailuresAreNotGuesses() async {
        // Registration disabled answers 403 upstream; a login against a broken upstream is not a failed guess either.
        let gw = InProcessGateway { $0.rateLimits.failedLoginsPerEmailPerMinute = 1 }
        #expect(await login(gw, "x@y.com", "123456").status == 200)
        #expect(await login(gw, "x@y.com", "123456").status == 200)
    }

    @Test func registrationsPerIP() async {
        let gw = InProcessGateway { $0.rateLimits.registrationsPerIPPerMinute = 2 }
        for i in 0..<2 {
            #expect(await gw.send(.post, "/api/v1/user", #"{"email":"r\#(i)@example.com","password":"pw-123456"}"#).status == 200)
        }
        let limited = await gw.send(.post, "/api/v1/user", #"{"email":"r9@example.com","password":"pw-123456"}"#)
        #expect(limited.status == 429)
        #expect(!gw.standIn.received.contains { $0.path == "/users" && String(decoding: $0.body, as: UTF8.self).contains("r9@") })
    }

    @Test func perTokenLimitIsOptional() async throws {
        let gw = InProcessGateway { $0.rateLimits.requestsPerTokenPerMinute = 3 }
        let token = try await gw.login()
        for _ in 0..<3 { #expect(await gw.send(.get, "/api/v1/books", token: token).status == 200) }
        let limited = await gw.send(.get, "/api/v1/books", token: token)
        #expect(limited.status == 429)
        #expect(limited.json?["total"] == .int(0))
    }

    @Test func forwardedForIsBelievedOnlyFromTrustedProxies() async {
        // The in-process gateway's peer is 10.1.2.3.
        let untrusted = InProcessGateway()
        for _ in 0..<5 { _ = await login(untrusted, "x@y.com", "wrong", from: "1.1.1.\(Int.random(in: 1...200))") }
        #expect(untrusted.standIn.received.allSatisfy { $0.headers["X-Forwarded-For"] == "10.1.2.3" })

        let trusted = InProcessGateway { $0.rateLimits.trustedProxies = ["10.1.2.3"] }
        // Ten failures spread over ten client IPs behind the proxy: no per-IP limit is hit.
        for i in 0..<10 { #expect(await login(trusted, "u\(i)@example.com", "wrong", from: "203.0.113.\(i)").status == 401) }
        #expect(await login(trusted, "u@example.com", "wrong", from: "203.0.113.99").status == 401)
        let forwarded = trusted.standIn.received.compactMap { $0.headers["X-Forwarded-For"] }
        #expect(forwarded.first == "203.0.113.0")
        // A spoofed first hop is ignored: the proxy-appended (last untrusted) entry is the client.
        _ = await login(trusted, "v@example.com", "wrong", from: "6.6.6.6, 198.51.100.7")
        #expect(trusted.standIn.received.last?.headers["X-Forwarded-For"] == "198.51.100.7")
    }

    @Test func bucketsRefillOverTime() {
        let clock = LockedBox<TimeInterval>(0)
        let buckets = TokenBuckets(capacity: 2, window: 60) { clock.withLock { $0 } }
        #expect(buckets.take("k") == nil)
        #expect(buckets.take("k") == nil)
        #expect(buckets.take("k") == 30)
        clock.withLock { $0 = 30 }
        #expect(buckets.take("k") == nil)
        buckets.giveBack("k")
        #expect(buckets.take("k") == nil)
        clock.withLock { $0 = 1000 }
        buckets.prune()
        #expect(buckets.trackedKeys == 0)
    }
}

/// A transport whose behaviour tests switch at will, counting calls.
final class SwitchableTransport: UpstreamTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var failing: UpstreamFailure?
    private var count = 0
    let standIn = DirectusStandIn()

    func fail(with failure: UpstreamFailure?) { lock.withLock { failing = failure } }
    var calls: Int { lock.withLock { count } }

    func send(_ request: UpstreamRequest, timeout: Double) async throws(UpstreamFailure) -> UpstreamResponse {
        let failure = lock.withLock { () -> UpstreamFailure? in
            count += 1
            return failing
        }
        if let failure { throw failure }
        return standIn.handle(HTTPRequest(method: request.method, target: request.target, headers: request.headers, body: request.body))
    }
}

@Suite(.serialized) struct CircuitBreakerTests {
    @Test func opensAfterConsecutiveFailuresFailsFastAndProbesBack() async throws {
        var config = PosternConfig.testing
        config.circuitBreaker.failures = 3
        config.circuitBreaker.openSeconds = 1
        let transport = SwitchableTransport()
        let app = try Application.build(config: config, transport: transport, store: MemorySessionStore(), logSink: { _ in })
        defer { app.shutdown() }
        func get(_ path: String) async -> HTTPResponse {
            await app.gateway.handle(HTTPRequest(method: .get, target: path))
        }
        transport.fail(with: .unreachable("refused"))
        for _ in 0..<3 { #expect(await get("/readyz").status == 503) }
        #expect(transport.calls == 3)
        // Open: fail fast, nothing reaches the upstream.
        let login = await app.gateway.handle(HTTPRequest(method: .post, target: "/api/v1/user/login",
                                                         headers: ["Content-Type": "application/json"],
                                                         body: Data(#"{"email":"x@y.com","password":"123456"}"#.utf8)))
        #expect(login.status == 503)
        #expect(await get("/readyz").status == 503)
        #expect(transport.calls == 3)
        let metrics = app.gateway.metrics.render()
        #expect(metrics.contains("postern_circuit_state 1"))
        #expect(metrics.contains(#"postern_upstream_errors_total{kind="circuit_open"} 2"#))
        // After the open period, one probe goes through; it succeeds and closes the circuit.
        transport.fail(with: nil)
        try await Task.sleep(for: .milliseconds(1100))
        #expect(await get("/readyz").status == 200)
        #expect(transport.calls == 4)
        #expect(app.gateway.metrics.render().contains("postern_circuit_state 0"))
    }

    @Test func aFailedProbeReopens() async throws {
        let clock = LockedBox<TimeInterval>(0)
        let breaker = CircuitBreaker(threshold: 2, openSeconds: 5) { clock.withLock { $0 } }
        breaker.failed(); breaker.failed()
        #expect(breaker.state == .open)
        #expect(!breaker.allow())
        clock.withLock { $0 = 5 }
        #expect(breaker.allow())
        #expect(!breaker.allow())  // only one probe
        breaker.failed()
        #expect(breaker.state == .open)
        clock.withLock { $0 = 9 }
        #expect(!breaker.allow())
        clock.withLock { $0 = 10 }
        #expect(breaker.allow())
        breaker.succeeded()
        #expect(breaker.state == .closed)
    }
}

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

@Suite(.serialized) struct LiveRateLimitTests {
    @Test func parallelGuessesAreCounted() throws {
        let denied = #"{"errors":[{"message":"Invalid user credentials.","extensions":{"code":"INVALID_CREDENTIALS"}}]}"#
        let fake = try FakeUpstream(.delayed(0.3, then: .status(401, denied)))
        defer { fake.stop() }
        let gw = try TestGateway { $0.directus.url = fake.url }
        defer { gw.stop() }
        let statuses = gw.concurrently(10) { client in
            try client.json("POST", "/api/v1/user/login", #"{"email":"victim@example.com","password":"guess"}"#)
        }
        // All ten guesses were in flight together; only the per-email budget of five reached Directus.
        #expect(statuses.filter { $0 == 401 }.count == 5)
        #expect(statuses.filter { $0 == 429 }.count == 5)
        #expect(fake.received.count == 5)
    }
}
