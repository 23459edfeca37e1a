import FoundationEssentials
import PosternHTTP

/// The limit on failed admin authentications (docs/api.md, Operator console): every request under `/admin/`
/// takes a token from its client IP's bucket before the admin token is compared, and gives it back when the token
/// was right, so that only failures (a missing or wrong token) count, parallel guesses included. Past
/// `perMinute` failures in a minute, every request of that IP under `/admin/` is 429 `rate_limited` with
/// `Retry-After`, the right token too, until the bucket refills. Counted in this process (the admin listener has
/// one loop; instances do not share the count). Each failure within the limit is logged at `notice` with the
/// client IP and the path, never the presented token; the refusals past it are counted in
/// `postern_rate_limited_total{limit="admin_auth"}`, not logged one by one.
struct AdminAuthFailures: Sendable {
    /// Failed authentications allowed per client IP and minute.
    static let perMinute = 10

    /// One bucket per client IP (at most 10,000, the least recently used dropped first).
    private let buckets: TokenBuckets
    private let log: AccessLog
    private let metrics: Metrics

    /// Failures counted on `clock` (seconds on a monotonic clock: the gateway's, which tests move).
    init(log: AccessLog, metrics: Metrics, clock: @escaping @Sendable () -> TimeInterval) {
        buckets = TokenBuckets(capacity: AdminAuthFailures.perMinute, window: 60, maxBuckets: 10_000, clock: clock)
        self.log = log
        self.metrics = metrics
    }

    /// Takes `ip`'s token for one authentication, or throws 429 when its failures are past the limit.
    func claim(ip: String) throws(GatewayError) {
        if let retryAfter = buckets.take(ip) {
            metrics.rateLimited("admin_auth")
            throw .rateLimited(retryAfter: retryAfter)
        }
    }

    /// The authentication succeeded: `ip`'s token comes back.
    func succeeded(ip: String) {
        buckets.giveBack(ip)
    }

    /// The longest path a failure's log line shows, in UTF-8 bytes.
    static let loggedPathBytes = 256

    /// The authentication failed (`reason`: `missing_token` or `wrong_token`): the token stays taken, and a
    /// `notice` line says who and where (the path cut to `loggedPathBytes`).
    func failed(ip: String, path: String, reason: String, requestID: String) {
        let shown = path.utf8.count > AdminAuthFailures.loggedPathBytes
            ? String(decoding: path.utf8.prefix(AdminAuthFailures.loggedPathBytes), as: UTF8.self) : path
        log.event(.notice, "admin authentication failed", [
            ("client_ip", .string(ip)), ("path", .string(shown)), ("reason", .string(reason)),
            ("request_id", .string(requestID)),
        ])
    }
}
