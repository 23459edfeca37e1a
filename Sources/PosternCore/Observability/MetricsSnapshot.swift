/// Every count of the metrics registry at one moment (`Metrics.snapshot()`), for the operator console.
struct MetricsSnapshot: Sendable {
    /// One route pattern and method.
    struct RouteKey: Hashable, Sendable {
        /// The route pattern (`/api/v1/books/{id}`, `unmatched`).
        let route: String
        /// The method label (`GET`, `OTHER`).
        let method: String
    }

    /// What one route pattern and method answered.
    struct RouteCounts: Sendable {
        /// Answers by status.
        var statuses: [Int: Int] = [:]
        /// The latency histogram.
        var latency = LatencyBuckets()

        /// Answers in all.
        var total: Int { statuses.values.reduce(0, +) }

        /// The answers and latencies counted since `earlier`.
        func subtracting(_ earlier: RouteCounts?) -> RouteCounts {
            guard let earlier else { return self }
            var delta = self
            for (status, count) in earlier.statuses { delta.statuses[status, default: 0] -= count }
            delta.latency = latency.subtracting(earlier.latency)
            return delta
        }
    }

    /// Per route pattern and method.
    var routes: [RouteKey: RouteCounts] = [:]
    /// Upstream failures by kind (`unreachable`, `timeout`, …).
    var upstreamErrors: [String: Int] = [:]
    /// The counters kept elsewhere, by metric name (`postern_cache_hits_total`, …).
    var counters: [String: Double] = [:]
}

/// A latency histogram on `Metrics.buckets`, with quantiles read from it.
struct LatencyBuckets: Sendable, Equatable {
    /// Observations per bucket (not cumulative); an observation above the last bound is in `count` only.
    var counts = [Int](repeating: 0, count: Metrics.buckets.count)
    /// Observations in all.
    var count = 0

    /// Adds a histogram's counts.
    mutating func add(buckets: [Int], count: Int) {
        for i in counts.indices where i < buckets.count { counts[i] += buckets[i] }
        self.count += count
    }

    /// The observations made since `earlier` (a snapshot of the same histogram).
    func subtracting(_ earlier: LatencyBuckets) -> LatencyBuckets {
        var delta = self
        for i in counts.indices { delta.counts[i] -= earlier.counts[i] }
        delta.count -= earlier.count
        return delta
    }

    /// The `q` quantile (0…1) in seconds, interpolated linearly inside the bucket that holds it (as Prometheus's
    /// `histogram_quantile` does; the first bucket starts at 0); the last bound (10 s) when it lies above it;
    /// nil without observations.
    func quantile(_ q: Double) -> Double? {
        guard count > 0 else { return nil }
        let rank = q * Double(count)
        var below = 0
        for (i, bound) in Metrics.buckets.enumerated() {
            let inBucket = counts[i]
            if inBucket > 0 && Double(below + inBucket) >= rank {
                let lower = i == 0 ? 0 : Metrics.buckets[i - 1]
                let fraction = min(1, max(0, (rank - Double(below)) / Double(inBucket)))
                return lower + (bound - lower) * fraction
            }
            below += inBucket
        }
        return Metrics.buckets[Metrics.buckets.count - 1]
    }
}
