import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternCoreTesting

/// The Grafana dashboard of the compose profile `observability` (deploy/grafana/postern.json, docs/docker.md)
/// against what a live gateway really exports: a query that names a metric Postern does not export draws
/// an empty panel without any error in Grafana, so the names are checked here.
@Suite struct ObservabilityDashboardTests {
    /// Every `expr` of every panel target of the dashboard, nested rows included.
    static func dashboardQueries() throws -> [String] {
        let url = repositoryRoot.appendingPathComponent("deploy/grafana/postern.json")
        let json = try JSONSerialization.jsonObject(with: try Data(contentsOf: url))
        var queries: [String] = []
        func walk(_ value: Any) {
            if let object = value as? [String: Any] {
                if let expr = object["expr"] as? String { queries.append(expr) }
                object.values.forEach(walk)
            } else if let array = value as? [Any] {
                array.forEach(walk)
            }
        }
        walk(json)
        return queries
    }

    /// The `postern_…` identifiers of a PromQL query (metric names; no label or function of PromQL starts so).
    static func metricNames(in query: String) -> Set<String> {
        let pattern = try! NSRegularExpression(pattern: "postern_[a-z_]+")  // a constant, valid pattern
        let range = NSRange(query.startIndex..., in: query)
        return Set(pattern.matches(in: query, range: range).compactMap { match in
            Range(match.range, in: query).map { String(query[$0]) }
        })
    }

    /// The names of the samples in a Prometheus text exposition: what stands before `{` or a space on
    /// each line that is not a comment (`…_bucket`, `…_sum` and `…_count` for a histogram, as exported).
    static func sampleNames(in exposition: String) -> Set<String> {
        Set(exposition.split(separator: "\n").compactMap { line in
            guard !line.hasPrefix("#") else { return nil }
            let name = line.prefix { $0 != "{" && $0 != " " }
            return name.isEmpty ? nil : String(name)
        })
    }

    @Test func everyMetricTheDashboardQueriesIsExportedAfterTraffic() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let client = gw.client()
        let token = try gw.login()
        #expect(try client.json("GET", "/api/v1/books", token: token).status == 200)
        #expect(try client.json("GET", "/api/v1/nope", token: token).status == 404)
        #expect(try client.json("GET", "/api/v1/books").status == 401)

        let metrics = try RawHTTPClient(port: gw.app.adminPort).request("GET", "/metrics")
        #expect(metrics.status == 200)
        let exported = Self.sampleNames(in: metrics.text)
        let queries = try Self.dashboardQueries()
        let named = queries.reduce(into: Set<String>()) { $0.formUnion(Self.metricNames(in: $1)) }
        // The figures docs/docker.md (Prometheus and Grafana) lists: a dashboard that lost its queries fails here.
        for figure in ["postern_requests_total", "postern_request_duration_seconds_bucket", "postern_upstream_errors_total",
                       "postern_circuit_state", "postern_cache_hits_total", "postern_cache_misses_total",
                       "postern_active_sessions"] {
            #expect(named.contains(figure), "the dashboard has no query on \(figure)")
        }
        for name in named.sorted() {
            #expect(exported.contains(name), "deploy/grafana/postern.json queries \(name), which /metrics does not export")
        }
    }

    @Test func theQueriesNameThePrometheusJobOfTheShippedConfig() throws {
        let url = repositoryRoot.appendingPathComponent("deploy/prometheus/prometheus.yml")
        let config = try String(contentsOf: url, encoding: .utf8)
        #expect(config.contains("job_name: postern\n"))
        for query in try Self.dashboardQueries() {
            #expect(query.contains(#"job="postern""#), "a query without the job's selector: \(query)")
        }
    }
}
