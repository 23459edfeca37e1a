import FoundationEssentials
import PosternHTTP

extension RouteTable {
    /// True for a route pattern counted in the console's figures: the admin listener's own routes (`/`,
    /// `/metrics`, `/admin/…`) are left out, so that watching the dashboard does not move it.
    static func countedInStats(_ route: String) -> Bool {
        route != "/" && route != "/metrics" && !AdminGuard.covers(route)
    }

    /// The operator console's routes on the admin listener (docs/api.md, Operator console): the page at `/` and
    /// `GET /admin/stats` (behind the admin guard, as every path under `/admin/`).
    static func consoleRoutes(config: PosternConfig, sampler: StatsSampler, sessions: SessionManager,
                              breaker: CircuitBreaker?) -> [Route] {
        let page = DashboardPage.response()
        let redactedConfig = config.redactedJSON()
        let redis = config.sessions.storeKind.map { if case .redis = $0 { true } else { false } } ?? false
        return [
            Route("/", methods: [(.get, Endpoint { _, _ in page })]),
            Route("/admin/stats", methods: [(.get, Endpoint { _, _ in
                let live = await sessions.activeSessions()
                let redisConnected: Bool? = redis ? await sessions.storeIsAvailable() : nil
                let body = AdminStats.json(sampler.report(), config: redactedConfig, liveSessions: live,
                                           redisConnected: redisConnected, circuit: breaker?.state ?? .closed)
                var response = HTTPResponse.json(200, body)
                response.headers.set("Cache-Control", "no-store")
                return response
            })]),
        ]
    }
}

/// The body of `GET /admin/stats` (docs/api.md, Operator console): the sampler's figures, milliseconds for
/// latencies, with the live sessions, Redis, the breaker, the version and the redacted config.
enum AdminStats {
    /// The JSON of one report.
    static func json(_ report: StatsSampler.Report, config: JSONValue, liveSessions: Int, redisConnected: Bool?,
                     circuit: CircuitBreaker.State) -> JSONValue {
        func number(_ value: Double, _ places: Double = 1000) -> JSONValue { .double((value * places).rounded() / places) }
        func ms(_ seconds: Double?) -> JSONValue { seconds.map { number($0 * 1000) } ?? .null }
        func int(_ value: Int) -> JSONValue { .int(Int64(value)) }
        func ratio(_ hits: Int, _ misses: Int) -> JSONValue { hits + misses > 0 ? number(Double(hits) / Double(hits + misses)) : .null }
        let window = report.window
        let routes: [JSONValue] = report.routes.map { route in
            .object([
                ("method", .string(route.key.method)), ("route", .string(route.key.route)),
                ("total", int(route.total)), ("per_s", number(route.perSecond, 100)),
                ("p50_ms", ms(route.p50)), ("p99_ms", ms(route.p99)),
                ("status", .object(StatsSampler.classNames.dropFirst().map { ($0, int(route.classes[$0] ?? 0)) })),
            ])
        }
        let kinds = ["unreachable", "timeout", "closed", "bad_response", "circuit_open", "queue_full"]
        let circuitName: String
        switch circuit {
        case .closed: circuitName = "closed"
        case .open: circuitName = "open"
        case .halfOpen: circuitName = "half_open"
        }
        return .object([
            ("version", .string(PosternVersion.current)),
            ("uptime_s", number(report.uptime, 10)),
            ("window_s", number(window, 10)),
            ("requests", .object([
                ("total", int(report.all.total)), ("per_s", number(report.all.perSecond, 100)),
                ("p50_ms", ms(report.all.p50)), ("p99_ms", ms(report.all.p99)),
            ])),
            ("status", .object(report.classes.map { item in
                (item.name, .object([("total", int(item.total)), ("per_s", number(Double(item.window) / window, 100))]))
            })),
            ("routes", .array(routes)),
            ("upstream", .object([
                ("errors_total", int(report.upstreamErrors.values.reduce(0, +))),
                ("errors_per_s", number(Double(report.upstreamErrorsInWindow) / window, 100)),
                ("errors", .object(kinds.map { ($0, int(report.upstreamErrors[$0] ?? 0)) })),
                ("circuit", .string(circuitName)),
            ])),
            ("cache", .object([
                ("hits", int(report.cacheHits)), ("misses", int(report.cacheMisses)),
                ("hit_ratio", ratio(report.cacheHits, report.cacheMisses)),
                ("window_hit_ratio", ratio(report.cacheHitsInWindow, report.cacheMissesInWindow)),
            ])),
            ("sessions", .object([("live", int(liveSessions))])),
            ("redis", redisConnected.map { .object([("connected", .bool($0))]) } ?? .null),
            ("history", .object([
                ("interval_s", number(StatsSampler.intervalSeconds)),
                ("points", .array(report.history.map { point in
                    .object([("t", number(point.at, 10)), ("per_s", number(point.requestsPerSecond, 100)),
                             ("p50_ms", ms(point.p50)), ("p99_ms", ms(point.p99))])
                })),
            ])),
            ("config", config),
        ])
    }
}

extension DashboardPage {
    /// The whole document.
    static var html: String {
        "<!doctype html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            + "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n"
            + "<title>Postern · operator console</title>\n<link rel=\"icon\" href=\"data:,\">\n"
            + "<style>\(style)</style>\n</head>\n<body>\n\(body)\n<script>\(script)</script>\n</body>\n</html>\n"
    }

    /// The policy of the page: nothing but its own style and script (by their SHA-256), calls to its own
    /// origin, `data:` images; no frame may hold it, no form posts anywhere, no `<base>`.
    static var contentSecurityPolicy: String {
        func hash(_ text: String) -> String { "'sha256-\(Data(Crypto.sha256(text)).base64EncodedString())'" }
        return "default-src 'none'; script-src \(hash(script)); style-src \(hash(style)); connect-src 'self'; "
            + "img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
    }

    /// The answer to `GET /`, built once: the page with its headers (`text/html`, the policy, `DENY` framing,
    /// `no-store`, no referrer).
    static func response() -> HTTPResponse {
        HTTPResponse(status: 200, headers: [
            "Content-Type": "text/html; charset=utf-8",
            "Content-Security-Policy": contentSecurityPolicy,
            "X-Frame-Options": "DENY",
            "Cache-Control": "no-store",
            "Referrer-Policy": "no-referrer",
        ], body: Data(html.utf8))
    }
}
