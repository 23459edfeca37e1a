import COpenSSL
import FoundationEssentials

/// One rate-limit budget: `capacity` tokens per key, refilled evenly over `window` seconds (0 disables it).
struct RateLimitBudget: Sendable, Hashable {
    /// A stable name: the `limit` label of `postern_rate_limited_total`, and a key prefix for a shared counter
    /// (`login_ip`, `login_email`, `login_email_day`, `registration_ip`, `token`).
    var name: String
    /// Tokens a full bucket holds (0 disables the limit).
    var capacity: Int
    /// Seconds to refill a bucket from empty.
    var window: TimeInterval
    /// Buckets held in process at most (`rate_limits.max_buckets`); past it the least recently used goes first.
    var maxBuckets: Int

    /// Builds a budget.
    init(name: String, capacity: Int, window: TimeInterval, maxBuckets: Int = RateLimitsConfig.defaultMaxBuckets) {
        self.name = name
        self.capacity = capacity
        self.window = window
        self.maxBuckets = maxBuckets
    }
}

/// The fixed-size form of a rate-limit key (an IP, an email, a session id): the first 16 bytes of the SHA-256
/// of its UTF-8, held inline. Buckets are keyed by it, so a key of any length costs the same 16 bytes.
struct RateLimitKey: Hashable, Sendable {
    /// The digest's bytes 0–7 and 8–15, in memory order.
    var w0: UInt64, w1: UInt64

    /// The key of `text` (hashed in place when its UTF-8 is contiguous, as native strings' is; no allocation).
    init(_ text: String) {
        var digest: (UInt64, UInt64, UInt64, UInt64) = (0, 0, 0, 0)
        withUnsafeMutableBytes(of: &digest) { out in
            let bytes = out.baseAddress?.assumingMemoryBound(to: UInt8.self)
            let hashed: Bool? = text.utf8.withContiguousStorageIfAvailable { utf8 in
                postern_sha256(utf8.baseAddress, utf8.count, bytes) == 1
            }
            if hashed == nil {
                let utf8 = Array(text.utf8)
                _ = postern_sha256(utf8, utf8.count, bytes)
            }
        }
        w0 = digest.0
        w1 = digest.1
    }

    /// Lower-case hex of the 16 bytes (32 digits): the prefix of `Crypto.sha256Hex` of the key's text.
    var hex: String { Hex.lowercase((w0, w1)) }

    /// A SHA-256 digest is uniformly distributed: one word, through the per-process seeded hasher, is enough.
    func hash(into hasher: inout Hasher) {
        hasher.combine(w0)
    }
}

/// Counts one budget's tokens per key (an IP, an email, a session id). The in-process counter is
/// `TokenBuckets`; a shared one (Redis) counts for every instance at once (docs/api.md, Several instances
/// (Redis)). A shared counter that cannot reach its store counts in process meanwhile rather than refuse
/// or admit everyone. Either keeps a digest of the key, never the key itself.
protocol RateLimitCounter: Sendable {
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
typealias RateLimitCounterFactory = @Sendable (RateLimitBudget) -> any RateLimitCounter

extension TokenBuckets: RateLimitCounter {
    /// The in-process counters, one `TokenBuckets` per budget.
    static let inProcess: RateLimitCounterFactory = { budget in
        TokenBuckets(capacity: budget.capacity, window: budget.window, maxBuckets: budget.maxBuckets)
    }
}
