import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

/// A clock the test moves by hand (seconds).
private final class StatsClock: @unchecked Sendable {
    private let lock = NSLock()
    private var seconds = 1000.0
    var now: Double { lock.withLock { seconds } }
    func advance(_ by: Double) { lock.withLock { seconds += by } }
}

/// The operator console's figures (docs/api.md, Operator console): percentiles from the histogram buckets, the
/// window and the 5-minute history of the sampler, with a clock moved by hand.
@Suite struct StatsSamplerTests {
    @Test func quantilesAreInterpolatedInsideTheirBucket() {
        var buckets = LatencyBuckets()
        #expect(buckets.quantile(0.5) == nil)
        // 100 observations in (1 ms, 2.5 ms]: the median is halfway through that bucket.
        buckets.counts[2] = 100
        buckets.count = 100
        #expect(abs(buckets.quantile(0.5)! - 0.00175) < 1e-9)
        #expect(abs(buckets.quantile(0.99)! - (0.001 + 0.0015 * 0.99)) < 1e-9)
        // 98 fast ones in the first bucket, 2 slow ones in (100 ms, 250 ms]: p50 is fast, p99 in the slow bucket.
        var mixed = LatencyBuckets()
        mixed.counts[0] = 98
        mixed.counts[8] = 2
        mixed.count = 100
        #expect(mixed.quantile(0.5)! < 0.0005)
        #expect(mixed.quantile(0.99)! > 0.1 && mixed.quantile(0.99)! <= 0.25)
        // Above the last bound: the last bound.
        var slow = LatencyBuckets()
        slow.count = 3
        #expect(slow.quantile(0.99) == 10)
    }

    @Test func theWindowAndTheHistoryFollowTheCounts() {
        let metrics = Metrics()
        let clock = StatsClock()
        let sampler = StatsSampler(metrics: metrics, counted: RouteTable.countedInStats, clock: { clock.now })
        for _ in 0..<20 { metrics.request(route: "/api/v1/books", method: "GET", status: 200, seconds: 0.002) }
        metrics.request(route: "/api/v1/books", method: "GET", status: 404, seconds: 0.002)
        metrics.request(route: "/api/v1/books", method: "POST", status: 201, seconds: 0.2)
        // The admin listener's own routes are not counted.
        for route in ["/admin/stats", "/", "/metrics"] { metrics.request(route: route, method: "GET", status: 200, seconds: 0.001) }
        clock.advance(2)
        sampler.sample()
        var report = sampler.report()
        #expect(report.all.total == 22)
        #expect(abs(report.all.perSecond - 11) < 1e-9)
        #expect(report.routes.map { "\($0.key.method) \($0.key.route)" } == ["GET /api/v1/books", "POST /api/v1/books"])
        let get = report.routes[0]
        #expect(get.total == 21 && get.classes["2xx"] == 20 && get.classes["4xx"] == 1)
        #expect(get.p99! > 0.001 && get.p99! <= 0.0025, "GET has its own latency, not POST's 200 ms")
        #expect(report.routes[1].p50! > 0.1 && report.routes[1].p50! <= 0.25)
        #expect(report.classes.map(\.name) == ["2xx", "3xx", "4xx", "5xx"])
        #expect(report.classes.map(\.total) == [21, 0, 1, 0])
        #expect(report.history.count == 1 && abs(report.history[0].requestsPerSecond - 11) < 1e-9)

        // Twelve quiet seconds later the window no longer holds those requests; the totals do.
        for _ in 0..<6 {
            clock.advance(2)
            sampler.sample()
        }
        report = sampler.report()
        #expect(report.all.total == 22 && report.all.perSecond == 0 && report.all.p99 == nil)
        #expect(abs(report.window - 10) < 1e-9)
        #expect(report.history.count == 7 && report.history.last?.requestsPerSecond == 0 && report.history.last?.p99 == nil)

        // The history keeps 5 minutes: 150 points.
        for _ in 0..<200 {
            clock.advance(2)
            sampler.sample()
        }
        report = sampler.report()
        #expect(report.history.count == 150)
        #expect(abs(report.history.last!.at - report.history.first!.at - 298) < 1e-9)
    }

    @Test func upstreamErrorsAndCacheCountsAreReported() {
        let metrics = Metrics()
        let clock = StatsClock()
        let hits = LockedBox(0.0)
        metrics.counter("postern_cache_hits_total", help: "") { hits.withLock { $0 } }
        metrics.counter("postern_cache_misses_total", help: "") { 1 }
        let sampler = StatsSampler(metrics: metrics, counted: RouteTable.countedInStats, clock: { clock.now })
        metrics.upstreamError("timeout")
        metrics.upstreamError("timeout")
        metrics.upstreamError("unreachable")
        hits.withLock { $0 = 3 }
        clock.advance(1)
        let report = sampler.report()
        #expect(report.upstreamErrors == ["timeout": 2, "unreachable": 1] && report.upstreamErrorsInWindow == 3)
        #expect(report.cacheHits == 3 && report.cacheMisses == 1 && report.cacheHitsInWindow == 3)
        let json = AdminStats.json(report, config: .object([]), liveSessions: 4, redisConnected: nil, circuit: .open)
        #expect(json["upstream"]?["errors_total"]?.intValue == 3)
        #expect(json["upstream"]?["circuit"]?.stringValue == "open")
        #expect(json["cache"]?["hit_ratio"] == .double(0.75))
        #expect(json["sessions"]?["live"]?.intValue == 4)
        #expect(json["redis"]?.isNull == true)
    }
}

/// `GET /admin/stats` and the dashboard page through a live admin listener.
@Suite struct AdminConsoleLiveTests {
    static let token = "console-test-token-0123456789"
    static let auth = ["Authorization": "Bearer \(token)"]

    @Test func statsCountTheTrafficAndRedactTheConfig() throws {
        let gw = try TestGateway {
            $0.admin.token = Self.token
            $0.secretKey = "MDEyMzQ1Njc4OWFiY2RlZjAxMjM0NTY3ODlhYmNkZWY="
        }
        defer { gw.stop() }
        let admin = RawHTTPClient(port: gw.app.adminPort)
        let before = try admin.request("GET", "/admin/stats", headers: Self.auth)
        #expect(before.status == 200, "\(before.text)")
        #expect(before.headers["Content-Type"] == "application/json; charset=utf-8")
        #expect(before.headers["Cache-Control"] == "no-store")
        let json = try #require(before.json)
        #expect(json["version"]?.stringValue == PosternVersion.current)
        #expect(json["requests"]?["total"]?.intValue == 0)
        #expect(json["upstream"]?["circuit"]?.stringValue == "closed")
        #expect(json["redis"]?.isNull == true, "memory store: no Redis")
        #expect(json["config"]?["admin"]?["token"]?.stringValue == "<redacted>")
        #expect(json["config"]?["secret_key"]?.stringValue == "<redacted>")
        #expect(!before.text.contains(Self.token) && !before.text.contains("MDEyMzQ1Njc4"), "no secret in the stats")

        let token = try gw.login()
        let client = gw.client()
        for _ in 0..<5 { #expect(try client.json("GET", "/api/v1/books", token: token).status == 200) }
        #expect(try client.json("GET", "/api/v1/books/999", token: token).status == 404)
        #expect(try client.json("GET", "/api/v1/books").status == 401)

        let after = try #require(try admin.request("GET", "/admin/stats", headers: Self.auth).json)
        #expect(after["requests"]?["total"]?.intValue == 8, "\(after.text)")  // login + 5 + 404 + 401; the admin's own calls not counted
        #expect(after["status"]?["2xx"]?["total"]?.intValue == 6)
        #expect(after["status"]?["4xx"]?["total"]?.intValue == 2)
        #expect(after["sessions"]?["live"]?.intValue == 1)
        let routes = try #require(after["routes"]?.arrayValue)
        let books = try #require(routes.first { $0["route"]?.stringValue == "/api/v1/books" && $0["method"]?.stringValue == "GET" })
        #expect(books["total"]?.intValue == 6)
        #expect(books["status"]?["4xx"]?.intValue == 1)
        guard case .double(let p99)? = books["p99_ms"] else {
            Issue.record("no p99 for GET /api/v1/books: \(books.text)")
            return
        }
        #expect(p99 > 0)
        #expect(!routes.contains { $0["route"]?.stringValue?.hasPrefix("/admin/") == true })
    }

    @Test func thePageIsStaticAndLockedDown() throws {
        let gw = try TestGateway { $0.admin.token = Self.token }
        defer { gw.stop() }
        let page = try RawHTTPClient(port: gw.app.adminPort).request("GET", "/")
        #expect(page.status == 200)
        #expect(page.headers["Content-Type"] == "text/html; charset=utf-8")
        #expect(page.headers["X-Frame-Options"] == "DENY")
        #expect(page.headers["Cache-Control"] == "no-store")
        let policy = try #require(page.headers["Content-Security-Policy"])
        #expect(policy.hasPrefix("default-src 'none';") && policy.contains("connect-src 'self'")
                && policy.contains("img-src data:") && !policy.contains("unsafe"))
        // The inline script and style are the ones the policy names by hash.
        let html = page.text
        for (tag, directive) in [("script", "script-src"), ("style", "style-src")] {
            let open = try #require(html.range(of: "<\(tag)>"))
            let close = try #require(html.range(of: "</\(tag)>", range: open.upperBound..<html.endIndex))
            let digest = Data(Crypto.sha256(String(html[open.upperBound..<close.lowerBound]))).base64EncodedString()
            #expect(policy.contains("\(directive) 'sha256-\(digest)'"), "\(tag) hash not in the policy")
        }
        // Nothing from elsewhere, no data in the page, no storage of the token.
        #expect(!html.contains("http://") || html.components(separatedBy: "http://").dropFirst().allSatisfy { $0.hasPrefix("www.w3.org/2000/svg") })
        #expect(!html.contains("https://") && !html.contains("localStorage") && !html.contains("sessionStorage")
                && !html.contains("document.cookie"))
        #expect(!html.contains(Self.token))
        #expect(html.contains("/admin/stats") && html.contains("/admin/sessions?user="))
        // The public listener does not serve it.
        #expect(try gw.client().request("GET", "/").status == 404)
    }
}

/// `redis` in `GET /admin/stats` with a Redis session store: connected while Redis answers, not when it is down,
/// and its password redacted in the config shown.
@Suite(.serialized) struct AdminStatsRedisTests {
    @Test func redisStateFollowsTheServer() throws {
        let redis = try RedisServer(password: "statsRedisPw42")
        let gw = try TestGateway {
            $0.admin.token = AdminConsoleLiveTests.token
            $0.sessions.store = redis.url(password: "statsRedisPw42")
        }
        defer { gw.stop() }
        let admin = RawHTTPClient(port: gw.app.adminPort)
        func stats() throws -> JSONValue {
            let r = try admin.request("GET", "/admin/stats", headers: AdminConsoleLiveTests.auth)
            guard r.status == 200, let json = r.json else { throw TestFailure("stats: \(r.status) \(r.text)") }
            return json
        }
        _ = try eventually("redis connected", timeout: 10) { try stats()["redis"]?["connected"] == .bool(true) }
        let text = try stats().text
        #expect(!text.contains("statsRedisPw42"), "the Redis password is redacted")
        #expect(text.contains(#""store":"redis://<redacted>@127.0.0.1:\#(redis.port)/0""#), "\(text)")
        redis.stop()
        _ = try eventually("redis down", timeout: 10) { try stats()["redis"]?["connected"] == .bool(false) }
    }
}
