import FoundationEssentials
import Dispatch
import Glibc
import PosternIO

/// The operator console's view of the metrics (docs/api.md, Operator console): every 2 s it snapshots the
/// registry (no work on any request: the counts and histograms are the ones `/metrics` renders) and keeps
/// 5 minutes of points (requests/s, p50, p99 of each 2 s); a report compares the registry now with the
/// sample about 10 s old for the current figures.
final class StatsSampler: @unchecked Sendable {
    /// Seconds between two samples.
    static let intervalSeconds = 2.0
    /// Seconds of history kept (150 points).
    static let historySeconds = 300.0
    /// Seconds the current figures (rates, percentiles) cover, once the process has run that long.
    static let windowSeconds = 10.0

    /// One point of the history: what the 2 s before `at` saw.
    struct Point: Sendable, Equatable {
        /// Seconds since the sampler started.
        let at: Double
        /// Requests per second.
        let requestsPerSecond: Double
        /// Median latency in seconds (nil without requests).
        let p50: Double?
        /// 99th percentile latency in seconds (nil without requests).
        let p99: Double?
    }

    /// One route pattern and method in a report.
    struct RouteFigures: Sendable {
        /// The route pattern and method.
        let key: MetricsSnapshot.RouteKey
        /// Answers since start.
        let total: Int
        /// Answers per second over the window.
        let perSecond: Double
        /// Median latency over the window, seconds.
        let p50: Double?
        /// 99th percentile latency over the window, seconds.
        let p99: Double?
        /// Answers since start by status class (`2xx` …).
        let classes: [String: Int]
    }

    /// The figures of one report.
    struct Report: Sendable {
        /// Seconds since the sampler started.
        let uptime: Double
        /// Seconds the window figures cover (up to `windowSeconds`).
        let window: Double
        /// Per route pattern and method, busiest first.
        let routes: [RouteFigures]
        /// Every counted route together.
        let all: RouteFigures
        /// Answers by status class: since start, and in the window.
        let classes: [(name: String, total: Int, window: Int)]
        /// Upstream failures by kind since start, and in the window (all kinds).
        let upstreamErrors: [String: Int]
        /// Upstream failures in the window.
        let upstreamErrorsInWindow: Int
        /// The micro-cache's hits and misses since start, and in the window.
        let cacheHits: Int, cacheMisses: Int, cacheHitsInWindow: Int, cacheMissesInWindow: Int
        /// The history, oldest first.
        let history: [Point]
    }

    private let metrics: Metrics
    private let clock: @Sendable () -> Double
    /// Which route patterns count (the admin listener's own are left out).
    private let counted: @Sendable (String) -> Bool
    /// When the sampler started, on `clock`.
    private let startedAt: Double
    private let lock = PlainLock()
    /// The samples still needed for the window, oldest first (the first one is the baseline).
    private var recent: [(at: Double, snapshot: MetricsSnapshot)] = []
    /// The history, oldest first, at most `historySeconds / intervalSeconds` points.
    private var history: [Point] = []
    private var timer: DispatchSourceTimer?

    /// A sampler of `metrics`, counting the routes `counted` accepts; `clock` gives monotonic seconds (tests
    /// pass their own). Takes the first sample at once (the baseline of the first reports).
    init(metrics: Metrics, counted: @escaping @Sendable (String) -> Bool,
         clock: @escaping @Sendable () -> Double = StatsSampler.monotonicSeconds) {
        self.metrics = metrics
        self.counted = counted
        self.clock = clock
        startedAt = clock()
        recent = [(startedAt, metrics.snapshot())]
    }

    /// Seconds on `CLOCK_MONOTONIC`.
    static func monotonicSeconds() -> Double { Double(MonotonicInstant.now.nanoseconds) / 1e9 }

    /// Takes a sample every `intervalSeconds` on a queue of its own, until `stop()`.
    func start() {
        let timer = DispatchSource.makeTimerSource(queue: DispatchQueue(label: "postern.stats"))
        timer.schedule(deadline: .now() + StatsSampler.intervalSeconds, repeating: StatsSampler.intervalSeconds)
        timer.setEventHandler { [weak self] in self?.sample() }
        timer.resume()
        lock.withLock { self.timer = timer }
    }

    /// Stops the samples.
    func stop() {
        let timer = lock.withLock { () -> DispatchSourceTimer? in
            defer { self.timer = nil }
            return self.timer
        }
        timer?.cancel()
    }

    /// Takes one sample: a history point for the time since the last one, and a new window sample.
    func sample() {
        let snapshot = metrics.snapshot()
        let now = clock()
        lock.withLock {
            guard let last = recent.last, now > last.at else { return }
            let (requests, latency) = totals(snapshot, since: last.snapshot)
            let seconds = now - last.at
            history.append(Point(at: now - startedAt, requestsPerSecond: Double(requests) / seconds,
                                 p50: latency.quantile(0.5), p99: latency.quantile(0.99)))
            let keep = Int((StatsSampler.historySeconds / StatsSampler.intervalSeconds).rounded())
            if history.count > keep { history.removeFirst(history.count - keep) }
            recent.append((now, snapshot))
            // The baseline is the newest sample at least a window old; older ones are no longer needed.
            while recent.count > 1 && recent[1].at <= now - StatsSampler.windowSeconds { recent.removeFirst() }
        }
    }

    /// The counted requests and their merged latency between two snapshots.
    private func totals(_ now: MetricsSnapshot, since earlier: MetricsSnapshot) -> (Int, LatencyBuckets) {
        var requests = 0
        var latency = LatencyBuckets()
        for (key, counts) in now.routes where counted(key.route) {
            let delta = counts.subtracting(earlier.routes[key])
            requests += delta.total
            latency.add(buckets: delta.latency.counts, count: delta.latency.count)
        }
        return (requests, latency)
    }

    /// The figures now: totals since start, rates and percentiles over the last `windowSeconds` (or since start
    /// when younger), and the history.
    func report() -> Report {
        let current = metrics.snapshot()
        let now = clock()
        let (baseline, history) = lock.withLock { () -> ((at: Double, snapshot: MetricsSnapshot), [Point]) in
            let base = recent.last { $0.at <= now - StatsSampler.windowSeconds } ?? recent[0]  // never empty
            return (base, self.history)
        }
        let window = max(now - baseline.at, 0.001)
        var routes: [RouteFigures] = []
        var allLatency = LatencyBuckets()
        var allTotal = 0
        var allWindow = 0
        var classTotals = [0, 0, 0, 0, 0]
        var classWindow = [0, 0, 0, 0, 0]
        for (key, counts) in current.routes where counted(key.route) {
            let delta = counts.subtracting(baseline.snapshot.routes[key])
            var classes: [String: Int] = [:]
            for (status, count) in counts.statuses {
                let index = StatsSampler.classIndex(status)
                classTotals[index] += count
                classes[StatsSampler.classNames[index], default: 0] += count
            }
            for (status, count) in delta.statuses { classWindow[StatsSampler.classIndex(status)] += count }
            routes.append(RouteFigures(key: key, total: counts.total, perSecond: Double(delta.total) / window,
                                       p50: delta.latency.quantile(0.5), p99: delta.latency.quantile(0.99), classes: classes))
            allLatency.add(buckets: delta.latency.counts, count: delta.latency.count)
            allTotal += counts.total
            allWindow += delta.total
        }
        routes.sort { ($0.perSecond, $0.total, $1.key.route, $1.key.method) > ($1.perSecond, $1.total, $0.key.route, $0.key.method) }
        let all = RouteFigures(key: MetricsSnapshot.RouteKey(route: "*", method: "*"), total: allTotal,
                               perSecond: Double(allWindow) / window, p50: allLatency.quantile(0.5),
                               p99: allLatency.quantile(0.99), classes: [:])
        let errorsInWindow = current.upstreamErrors.reduce(0) { $0 + $1.value - (baseline.snapshot.upstreamErrors[$1.key] ?? 0) }
        func counter(_ name: String, _ snapshot: MetricsSnapshot) -> Int { Int(snapshot.counters[name] ?? 0) }
        let hits = counter("postern_cache_hits_total", current)
        let misses = counter("postern_cache_misses_total", current)
        return Report(uptime: now - startedAt, window: window, routes: routes, all: all,
                      classes: (1...4).map { (StatsSampler.classNames[$0], classTotals[$0], classWindow[$0]) },
                      upstreamErrors: current.upstreamErrors, upstreamErrorsInWindow: errorsInWindow,
                      cacheHits: hits, cacheMisses: misses,
                      cacheHitsInWindow: hits - counter("postern_cache_hits_total", baseline.snapshot),
                      cacheMissesInWindow: misses - counter("postern_cache_misses_total", baseline.snapshot),
                      history: history)
    }

    /// The status class names by index (`other` for a status outside 200…599).
    static let classNames = ["other", "2xx", "3xx", "4xx", "5xx"]

    /// The index in `classNames` of `status`'s class.
    static func classIndex(_ status: Int) -> Int {
        (200...599).contains(status) ? status / 100 - 1 : 0
    }
}
