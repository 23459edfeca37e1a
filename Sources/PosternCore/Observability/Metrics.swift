import FoundationEssentials
import PosternIO

/// Counters and histograms, rendered in the Prometheus text format on the admin port. Each event loop
/// records into its own shard; a scrape sums the shards.
/// Labels are route patterns and fixed words, never raw paths, so the label set cannot explode.
package final class Metrics: @unchecked Sendable {
    /// Histogram bucket bounds in seconds.
    static let buckets: [Double] = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

    private struct Histogram {
        var counts = [Int](repeating: 0, count: Metrics.buckets.count)
        var sum: Double = 0
        var count = 0

        mutating func observe(_ seconds: Double) {
            if let i = Metrics.buckets.firstIndex(where: { seconds <= $0 }) { counts[i] += 1 }
            sum += seconds
            count += 1
        }

        /// The two histograms' counts added (shards summed at scrape time).
        func adding(_ other: Histogram) -> Histogram {
            var total = self
            for i in counts.indices { total.counts[i] += other.counts[i] }
            total.sum += other.sum
            total.count += other.count
            return total
        }
    }

    private struct RequestKey: Hashable {
        let route: String
        let method: String
        let status: Int
    }

    /// A latency slot's series: one route pattern and method (`/metrics` sums a route's methods; the operator
    /// console shows each). The slot is chosen when a series is first seen, so this costs no request anything.
    private struct LatencyKey: Hashable {
        let route: String
        let method: String
    }

    /// One loop's share of the counters. Only its loop records into it; the lock is there for the
    /// scrape, so it is never contended by another loop (no lock shared by the loops).
    private final class Shard: @unchecked Sendable {
        let lock = FastLock()
        /// Request counts, by series index (`requestIndex`).
        var requestCounts: [Int] = []
        /// Each request series' key and its route's latency slot, by series index.
        var requestSeries: [(key: RequestKey, latency: Int)] = []
        /// The series index of each key seen (consulted only when the hint below misses).
        var requestIndex: [RequestKey: Int] = [:]
        /// The series recorded last: a request of the same route, method and status (the usual case
        /// under load) is counted without hashing its strings.
        var hint: (route: String, method: String, status: Int, index: Int)?
        /// Request latency histograms, by latency slot (`latencyIndex`).
        var requestLatency: [Histogram] = []
        /// The latency slot of each route pattern and method seen.
        var latencyIndex: [LatencyKey: Int] = [:]
        var upstreamLatency: [String: Histogram] = [:]
        /// The method of the upstream call recorded last (under load, one method repeats): its histogram
        /// is kept aside here and merged into `upstreamLatency` when the method changes or on a scrape.
        var upstreamHint: (method: String, histogram: Histogram)?
        var upstreamErrors: [String: Int] = [:]
        var rateLimits: [String: Int] = [:]

        /// Moves the upstream hint's histogram into `upstreamLatency`.
        func flushUpstreamHint() {
            guard let hint = upstreamHint else { return }
            upstreamLatency[hint.method] = upstreamLatency[hint.method].map { $0.adding(hint.histogram) } ?? hint.histogram
            upstreamHint = nil
        }

        /// The series index of (route, method, status): the hint when it matches (string equality of the same
        /// pattern and label storage is a bitwise compare, no hashing), else looked up and made the hint.
        @inline(__always)
        func series(route: String, method: String, status: Int) -> Int {
            if let hint, hint.status == status, hint.route == route, hint.method == method { return hint.index }
            return lookUp(route: route, method: method, status: status)
        }

        /// The slow path of `series`: the dictionary, a new series when unseen.
        @inline(never)
        private func lookUp(route: String, method: String, status: Int) -> Int {
            let key = RequestKey(route: route, method: method, status: status)
            let index: Int
            if let known = requestIndex[key] {
                index = known
            } else {
                let latency: Int
                let latencyKey = LatencyKey(route: route, method: method)
                if let slot = latencyIndex[latencyKey] {
                    latency = slot
                } else {
                    latency = requestLatency.count
                    requestLatency.append(Histogram())
                    latencyIndex[latencyKey] = latency
                }
                index = requestCounts.count
                requestCounts.append(0)
                requestSeries.append((key, latency))
                requestIndex[key] = index
            }
            hint = (route, method, status, index)
            return index
        }
    }

    /// The key of each loop's shard.
    private let shardKey = EventLoop.LocalKey()
    /// Every shard made so far (locked when a loop makes its shard, and on a scrape).
    private let shards = LockedBox<[Shard]>([])
    /// The shard of code running off the event loops (tests, in-process calls).
    private let offLoop = Shard()
    /// Guards `gauges` and `counters` (registered at start, read on a scrape).
    private let gaugeLock = PlainLock()
    /// Gauges read at scrape time.
    private var gauges: [(name: String, help: String, read: @Sendable () -> Double)] = []
    /// Counters kept by their owner (e.g. the micro-cache), read at scrape time.
    private var counters: [(name: String, help: String, read: @Sendable () -> Double)] = []
    /// Counters kept by their owner with one label (e.g. the config reloads by result), read at scrape time.
    private var labeledCounters: [(name: String, help: String, label: String, values: [String],
                                   read: @Sendable (String) -> Double)] = []

    /// An empty registry.
    init() {
        shards.withLock { $0.append(offLoop) }
    }

    /// The shard of the calling thread: its loop's own, or the off-loop one.
    private func record(_ body: (Shard) -> Void) {
        let shard = EventLoop.currentLocal(shardKey) {
            let made = Shard()
            shards.withLock { $0.append(made) }
            return made
        } ?? offLoop
        shard.lock.withLock { body(shard) }
    }

    /// Records a finished request.
    func request(route: String, method: String, status: Int, seconds: Double) {
        record { shard in
            let index = shard.series(route: route, method: method, status: status)
            shard.requestCounts[index] += 1
            shard.requestLatency[shard.requestSeries[index].latency].observe(seconds)
        }
    }

    /// Records an upstream call that got an HTTP answer.
    func upstream(method: String, seconds: Double) {
        record { shard in
            if shard.upstreamHint?.method == method {
                shard.upstreamHint?.histogram.observe(seconds)
            } else {
                shard.flushUpstreamHint()
                var histogram = Histogram()
                histogram.observe(seconds)
                shard.upstreamHint = (method, histogram)
            }
        }
    }

    /// Records an upstream failure by kind (`unreachable`, `timeout`, `closed`, `bad_response`, `circuit_open`).
    func upstreamError(_ kind: String) {
        record { $0.upstreamErrors[kind, default: 0] += 1 }
    }

    /// Records a rate-limit rejection by limit name.
    func rateLimited(_ limit: String) {
        record { $0.rateLimits[limit, default: 0] += 1 }
    }

    /// Registers a gauge read at scrape time (set up once at start).
    func gauge(_ name: String, help: String, _ read: @escaping @Sendable () -> Double) {
        gaugeLock.withLock { gauges.append((name, help, read)) }
    }

    /// The sum of every shard, taken one shard at a time.
    private func summed() -> (requests: [RequestKey: Int], requestLatency: [String: Histogram],
                              upstreamLatency: [String: Histogram], upstreamErrors: [String: Int], rateLimits: [String: Int]) {
        var requests: [RequestKey: Int] = [:]
        var requestLatency: [String: Histogram] = [:]
        var upstreamLatency: [String: Histogram] = [:]
        var upstreamErrors: [String: Int] = [:]
        var rateLimits: [String: Int] = [:]
        for shard in shards.withLock({ $0 }) {
            shard.lock.withLock {
                for (index, series) in shard.requestSeries.enumerated() {
                    requests[series.key, default: 0] += shard.requestCounts[index]
                }
                for (key, slot) in shard.latencyIndex {
                    let h = shard.requestLatency[slot]
                    requestLatency[key.route] = requestLatency[key.route].map { $0.adding(h) } ?? h
                }
                shard.flushUpstreamHint()
                upstreamLatency.merge(shard.upstreamLatency, uniquingKeysWith: { $0.adding($1) })
                upstreamErrors.merge(shard.upstreamErrors, uniquingKeysWith: +)
                rateLimits.merge(shard.rateLimits, uniquingKeysWith: +)
            }
        }
        return (requests, requestLatency, upstreamLatency, upstreamErrors, rateLimits)
    }

    /// Registers a counter kept elsewhere and read at scrape time (set up once at start).
    func counter(_ name: String, help: String, _ read: @escaping @Sendable () -> Double) {
        gaugeLock.withLock { counters.append((name, help, read)) }
    }

    /// Registers a counter kept elsewhere with one label taking `values`, read at scrape time (set up once at start).
    func counter(_ name: String, help: String, label: String, values: [String], _ read: @escaping @Sendable (String) -> Double) {
        gaugeLock.withLock { labeledCounters.append((name, help, label, values, read)) }
    }

    /// Every count so far, summed over the shards, for the operator console's sampler (`StatsSampler`): per route
    /// pattern and method, the answers by status and the latency histogram; upstream errors by kind; the counters
    /// kept elsewhere (the micro-cache's) by name. Taken one shard at a time, as a scrape is.
    func snapshot() -> MetricsSnapshot {
        var routes: [MetricsSnapshot.RouteKey: MetricsSnapshot.RouteCounts] = [:]
        var upstreamErrors: [String: Int] = [:]
        for shard in shards.withLock({ $0 }) {
            shard.lock.withLock {
                for (index, series) in shard.requestSeries.enumerated() {
                    let key = MetricsSnapshot.RouteKey(route: series.key.route, method: series.key.method)
                    routes[key, default: MetricsSnapshot.RouteCounts()].statuses[series.key.status, default: 0]
                        += shard.requestCounts[index]
                }
                for (key, slot) in shard.latencyIndex {
                    let h = shard.requestLatency[slot]
                    routes[MetricsSnapshot.RouteKey(route: key.route, method: key.method), default: MetricsSnapshot.RouteCounts()]
                        .latency.add(buckets: h.counts, count: h.count)
                }
                upstreamErrors.merge(shard.upstreamErrors, uniquingKeysWith: +)
            }
        }
        let counters = gaugeLock.withLock { self.counters }
        var values: [String: Double] = [:]
        for counter in counters { values[counter.name, default: 0] += counter.read() }
        return MetricsSnapshot(routes: routes, upstreamErrors: upstreamErrors, counters: values)
    }

    /// The Prometheus text exposition (version 0.0.4).
    func render() -> String {
        let (requests, requestLatency, upstreamLatency, upstreamErrors, rateLimits) = summed()
        let (gauges, counters, labeled) = gaugeLock.withLock { (self.gauges, self.counters, self.labeledCounters) }
        var out = ""
        out += "# HELP postern_requests_total Requests answered, by route pattern, method and status.\n"
        out += "# TYPE postern_requests_total counter\n"
        for (key, count) in requests.sorted(by: { ($0.key.route, $0.key.method, $0.key.status) < ($1.key.route, $1.key.method, $1.key.status) }) {
            out += "postern_requests_total{route=\"\(Metrics.escape(key.route))\",method=\"\(key.method)\",status=\"\(key.status)\"} \(count)\n"
        }
        out += histogram("postern_request_duration_seconds", "Request latency, by route pattern.", label: "route", requestLatency)
        out += histogram("postern_upstream_duration_seconds", "Directus call latency, by method.", label: "method", upstreamLatency)
        out += "# HELP postern_upstream_errors_total Directus calls that got no usable HTTP answer, by kind.\n"
        out += "# TYPE postern_upstream_errors_total counter\n"
        for kind in ["unreachable", "timeout", "closed", "bad_response", "circuit_open", "queue_full"] {
            out += "postern_upstream_errors_total{kind=\"\(kind)\"} \(upstreamErrors[kind] ?? 0)\n"
        }
        out += "# HELP postern_rate_limited_total Requests refused by a rate limit, by limit.\n"
        out += "# TYPE postern_rate_limited_total counter\n"
        for limit in ["login_ip", "login_email", "login_email_day", "registration_ip", "token", "admin_auth"] {
            out += "postern_rate_limited_total{limit=\"\(limit)\"} \(rateLimits[limit] ?? 0)\n"
        }
        for counter in counters {
            out += "# HELP \(counter.name) \(counter.help)\n# TYPE \(counter.name) counter\n\(counter.name) \(Metrics.number(counter.read()))\n"
        }
        for counter in labeled {
            out += "# HELP \(counter.name) \(counter.help)\n# TYPE \(counter.name) counter\n"
            for value in counter.values {
                out += "\(counter.name){\(counter.label)=\"\(value)\"} \(Metrics.number(counter.read(value)))\n"
            }
        }
        for gauge in gauges {
            out += "# HELP \(gauge.name) \(gauge.help)\n# TYPE \(gauge.name) gauge\n\(gauge.name) \(Metrics.number(gauge.read()))\n"
        }
        return out
    }

    private func histogram(_ name: String, _ help: String, label: String, _ series: [String: Histogram]) -> String {
        var out = "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
        for (value, h) in series.sorted(by: { $0.key < $1.key }) {
            let l = "\(label)=\"\(Metrics.escape(value))\""
            var cumulative = 0
            for (i, bound) in Metrics.buckets.enumerated() {
                cumulative += h.counts[i]
                out += "\(name)_bucket{\(l),le=\"\(Metrics.number(bound))\"} \(cumulative)\n"
            }
            out += "\(name)_bucket{\(l),le=\"+Inf\"} \(h.count)\n"
            out += "\(name)_sum{\(l)} \(Metrics.number(h.sum))\n"
            out += "\(name)_count{\(l)} \(h.count)\n"
        }
        return out
    }

    private static func escape(_ s: String) -> String {
        s.replacingBytes(of: "\\", with: "\\\\").replacingBytes(of: "\"", with: "\\\"")
            .replacingBytes(of: "\n", with: "\\n")
    }

    private static func number(_ d: Double) -> String {
        d == d.rounded() && abs(d) < 1e15 ? String(Int64(d)) : String(d)
    }
}
