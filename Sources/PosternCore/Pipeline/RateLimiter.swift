import Foundation

/// Token buckets by key (an IP, an email, a token digest): `capacity` tokens, refilled evenly over `window`.
/// Process-wide and lock-protected; the lock is never held across an await.
public final class TokenBuckets: @unchecked Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: TimeInterval
    }

    /// Tokens a full bucket holds (0 disables the limit).
    public let capacity: Int
    /// Seconds to refill a bucket from empty.
    public let window: TimeInterval
    private let lock = NSLock()
    private var buckets: [String: Bucket] = [:]
    private let clock: @Sendable () -> TimeInterval

    /// Creates buckets of `capacity` per `window` seconds.
    public init(capacity: Int, window: TimeInterval, clock: @escaping @Sendable () -> TimeInterval = { ProcessInfo.processInfo.systemUptime }) {
        self.capacity = capacity
        self.window = window
        self.clock = clock
    }

    private var rate: Double { Double(capacity) / window }

    /// Takes one token for `key`: nil when taken, else the seconds until one is available.
    public func take(_ key: String) -> Int? {
        guard capacity > 0 else { return nil }
        let now = clock()
        return lock.withLock {
            var bucket = refilled(key, now)
            defer { buckets[key] = bucket }
            if bucket.tokens >= 1 {
                bucket.tokens -= 1
                return nil
            }
            return max(1, Int(((1 - bucket.tokens) / rate).rounded(.up)))
        }
    }

    /// Gives back a token taken for `key` (a successful login does not count).
    public func giveBack(_ key: String) {
        guard capacity > 0 else { return }
        let now = clock()
        lock.withLock {
            var bucket = refilled(key, now)
            bucket.tokens = min(Double(capacity), bucket.tokens + 1)
            buckets[key] = bucket
        }
    }

    /// Drops full buckets (they hold no information), bounding memory.
    public func prune() {
        let now = clock()
        lock.withLock {
            for (key, _) in buckets where refilled(key, now).tokens >= Double(capacity) { buckets[key] = nil }
        }
    }

    /// Keys currently tracked.
    public var trackedKeys: Int { lock.withLock { buckets.count } }

    private func refilled(_ key: String, _ now: TimeInterval) -> Bucket {
        guard var bucket = buckets[key] else { return Bucket(tokens: Double(capacity), updated: now) }
        bucket.tokens = min(Double(capacity), bucket.tokens + (now - bucket.updated) * rate)
        bucket.updated = now
        return bucket
    }
}

/// The gateway's rate limits (docs/api.md, Limits and defaults), each counted before the upstream call,
/// through one `RateLimitCounter` per budget (in process, or shared between instances).
public final class RateLimits: Sendable {
    let failedLoginsPerIP: any RateLimitCounter
    let failedLoginsPerEmail: any RateLimitCounter
    let failedLoginsPerEmailPerDay: any RateLimitCounter
    let registrationsPerIP: any RateLimitCounter
    let requestsPerToken: any RateLimitCounter
    let metrics: Metrics

    /// Builds the limits from config, with in-process counters on `clock`.
    public convenience init(_ config: RateLimitsConfig, metrics: Metrics,
                            clock: @escaping @Sendable () -> TimeInterval = { ProcessInfo.processInfo.systemUptime }) {
        self.init(config, metrics: metrics, counters: { budget in
            TokenBuckets(capacity: budget.capacity, window: budget.window, clock: clock)
        })
    }

    /// Builds the limits from config, each budget counted by the counter `counters` makes for it.
    public init(_ config: RateLimitsConfig, metrics: Metrics, counters: RateLimitCounterFactory) {
        failedLoginsPerIP = counters(RateLimitBudget(name: "login_ip", capacity: config.failedLoginsPerIPPerMinute, window: 60))
        failedLoginsPerEmail = counters(RateLimitBudget(name: "login_email", capacity: config.failedLoginsPerEmailPerMinute, window: 60))
        failedLoginsPerEmailPerDay = counters(RateLimitBudget(name: "login_email_day", capacity: config.failedLoginsPerEmailPerDay,
                                                              window: 86_400))
        registrationsPerIP = counters(RateLimitBudget(name: "registration_ip", capacity: config.registrationsPerIPPerMinute, window: 60))
        requestsPerToken = counters(RateLimitBudget(name: "token", capacity: config.requestsPerTokenPerMinute, window: 60))
        self.metrics = metrics
    }

    /// A login attempt's claim on the failed-login budgets; give it back when the login succeeds.
    public struct LoginClaim: Sendable {
        fileprivate let ip: String
        fileprivate let email: String
    }

    /// Takes a token from every failed-login budget of this IP and email (compared case-insensitively),
    /// or throws 429 without taking any when one of them is exhausted.
    public func claimLogin(ip: String, email: String) async throws(GatewayError) -> LoginClaim {
        let email = email.lowercased()
        let budgets: [(any RateLimitCounter, String, String)] = [
            (failedLoginsPerIP, ip, "login_ip"), (failedLoginsPerEmail, email, "login_email"),
            (failedLoginsPerEmailPerDay, email, "login_email_day"),
        ]
        var taken: [(any RateLimitCounter, String)] = []
        for (counter, key, name) in budgets {
            if let retryAfter = await counter.take(key) {
                for (c, k) in taken { await c.giveBack(k) }
                metrics.rateLimited(name)
                throw .rateLimited(retryAfter: retryAfter)
            }
            taken.append((counter, key))
        }
        return LoginClaim(ip: ip, email: email)
    }

    /// Returns a login's tokens: it succeeded, or failed for a reason that is not a wrong guess.
    public func release(_ claim: LoginClaim) async {
        await failedLoginsPerIP.giveBack(claim.ip)
        await failedLoginsPerEmail.giveBack(claim.email)
        await failedLoginsPerEmailPerDay.giveBack(claim.email)
    }

    /// Counts a registration attempt from `ip`, or throws 429.
    public func claimRegistration(ip: String) async throws(GatewayError) {
        if let retryAfter = await registrationsPerIP.take(ip) {
            metrics.rateLimited("registration_ip")
            throw .rateLimited(retryAfter: retryAfter)
        }
    }

    /// Counts an API request for a session, or throws 429 (when the per-token limit is on).
    public func claimRequest(sessionID: String) async throws(GatewayError) {
        if let retryAfter = await requestsPerToken.take(sessionID) {
            metrics.rateLimited("token")
            throw .rateLimited(retryAfter: retryAfter)
        }
    }

    /// Drops idle buckets (from the maintenance timer).
    public func prune() {
        for counter in [failedLoginsPerIP, failedLoginsPerEmail, failedLoginsPerEmailPerDay, registrationsPerIP, requestsPerToken] {
            counter.prune()
        }
    }
}
