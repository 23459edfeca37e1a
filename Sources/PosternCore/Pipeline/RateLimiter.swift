import Foundation

/// Token buckets by key (an IP, an email, a token digest): `capacity` tokens, refilled evenly over `window`.
/// Process-wide, in shards by key, each behind its own lock: requests of different loops rarely meet on
/// one lock (the per-token limit is taken on every request). No lock is held across an await.
public final class TokenBuckets: @unchecked Sendable {
    private struct Bucket {
        var tokens: Double
        var updated: TimeInterval
    }

    /// One shard of the buckets.
    private final class Shard: @unchecked Sendable {
        let lock = NSLock()
        var buckets: [String: Bucket] = [:]
    }

    /// Shards (a power of two).
    private static let shardCount = 16
    /// Tokens a full bucket holds (0 disables the limit).
    public let capacity: Int
    /// Seconds to refill a bucket from empty.
    public let window: TimeInterval
    private let shards: [Shard] = (0..<TokenBuckets.shardCount).map { _ in Shard() }
    private let clock: @Sendable () -> TimeInterval

    /// Creates buckets of `capacity` per `window` seconds.
    public init(capacity: Int, window: TimeInterval, clock: @escaping @Sendable () -> TimeInterval = { ProcessInfo.processInfo.systemUptime }) {
        self.capacity = capacity
        self.window = window
        self.clock = clock
    }

    private var rate: Double { Double(capacity) / window }

    private func shard(_ key: String) -> Shard {
        shards[key.hashValue & (TokenBuckets.shardCount - 1)]
    }

    /// Takes one token for `key`: nil when taken, else the seconds until one is available.
    public func take(_ key: String) -> Int? {
        guard capacity > 0 else { return nil }
        let now = clock()
        let shard = shard(key)
        return shard.lock.withLock {
            var bucket = refilled(shard.buckets[key], now)
            defer { shard.buckets[key] = bucket }
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
        let shard = shard(key)
        shard.lock.withLock {
            var bucket = refilled(shard.buckets[key], now)
            bucket.tokens = min(Double(capacity), bucket.tokens + 1)
            shard.buckets[key] = bucket
        }
    }

    /// Drops full buckets (they hold no information), bounding memory.
    public func prune() {
        let now = clock()
        for shard in shards {
            shard.lock.withLock {
                for (key, bucket) in shard.buckets where refilled(bucket, now).tokens >= Double(capacity) {
                    shard.buckets[key] = nil
                }
            }
        }
    }

    /// Keys currently tracked.
    public var trackedKeys: Int { shards.reduce(0) { total, shard in total + shard.lock.withLock { shard.buckets.count } } }

    private func refilled(_ stored: Bucket?, _ now: TimeInterval) -> Bucket {
        guard var bucket = stored else { return Bucket(tokens: Double(capacity), updated: now) }
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
    /// Whether the per-token request limit is on (a budget of 0 disables it): when off, `claimRequest` is not
    /// called at all (no `await` per request).
    let limitsRequestsPerToken: Bool

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
        limitsRequestsPerToken = config.requestsPerTokenPerMinute > 0
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
