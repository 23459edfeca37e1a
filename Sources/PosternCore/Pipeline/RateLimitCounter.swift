import Foundation

/// One rate-limit budget: `capacity` tokens per key, refilled evenly over `window` seconds (0 disables it).
public struct RateLimitBudget: Sendable, Hashable {
    /// A stable name: the `limit` label of `postern_rate_limited_total`, and a key prefix for a shared counter
    /// (`login_ip`, `login_email`, `login_email_day`, `registration_ip`, `token`).
    public var name: String
    /// Tokens a full bucket holds (0 disables the limit).
    public var capacity: Int
    /// Seconds to refill a bucket from empty.
    public var window: TimeInterval

    /// Builds a budget.
    public init(name: String, capacity: Int, window: TimeInterval) {
        self.name = name
        self.capacity = capacity
        self.window = window
    }
}

/// Counts one budget's tokens per key (an IP, an email, a session id). The in-process counter is
/// `TokenBuckets`; a shared one (Redis) counts for every instance at once (docs/api.md, Several instances
/// (Redis)). A shared counter that cannot reach its store counts in process meanwhile rather than refuse
/// or admit everyone.
public protocol RateLimitCounter: Sendable {
    /// Takes one token for `key`: nil when taken, else the whole seconds (at least 1) until one is available.
    /// Takes nothing when it answers non-nil.
    func take(_ key: String) async -> Int?
    /// Gives back one token taken for `key` (never above the capacity).
    func giveBack(_ key: String) async
    /// Drops in-process state that holds no information (from the maintenance timer; a no-op for a store
    /// that expires its keys itself).
    func prune()
}

/// Makes the counter of each budget (in process by default; the Redis store's counters when it is used).
public typealias RateLimitCounterFactory = @Sendable (RateLimitBudget) -> any RateLimitCounter

extension TokenBuckets: RateLimitCounter {
    /// The in-process counters, one `TokenBuckets` per budget.
    public static let inProcess: RateLimitCounterFactory = { budget in
        TokenBuckets(capacity: budget.capacity, window: budget.window)
    }
}
