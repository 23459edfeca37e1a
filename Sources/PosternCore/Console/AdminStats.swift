import FoundationEssentials
import PosternHTTP

/// The body of `GET /admin/stats` (docs/api.md, Operator console): the sampler's figures, milliseconds for
/// latencies, with the live sessions, Redis, the breaker, the version and the redacted config.
enum AdminStats {
    /// The JSON of one report.
    static func json(_ report: StatsSampler.Report, config: JSONValue, generation: Int = 1, liveSessions: Int,
                     redisConnected: Bool?, circuit: CircuitBreaker.State) -> JSONValue {
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
            ("generation", int(generation)),
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
