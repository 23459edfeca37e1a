import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

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

@Suite(.serialized) struct LiveRateLimitTests {
    @Test func parallelGuessesAreCounted() throws {
        let denied = #"{"errors":[{"message":"Invalid user credentials.","extensions":{"code":"INVALID_CREDENTIALS"}}]}"#
        let fake = try ScriptedUpstream(every: [.wait(0.3)] + ScriptedUpstream.Misbehaviour.status(401, denied))
        defer { fake.stop() }
        let gw = try TestGateway { $0.directus.url = fake.url }
        defer { gw.stop() }
        let statuses = gw.concurrently(10) { client in
            try client.json("POST", "/api/v1/user/login", #"{"email":"victim@example.com","password":"guess"}"#)
        }
        // All ten guesses were in flight together; only the per-email budget of five reached Directus.
        #expect(statuses.filter { $0 == 401 }.count == 5)
        #expect(statuses.filter { $0 == 429 }.count == 5)
        #expect(fake.requests.count == 5)
    }
}
