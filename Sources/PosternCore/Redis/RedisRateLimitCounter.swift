import FoundationEssentials
import PosternRedis

/// A rate-limit budget counted in Redis for every gateway instance at once (docs/api.md, Several instances
/// (Redis)): a fixed window per key, `capacity` takes per `window` (INCR, and PEXPIRE on the first take, in
/// one script). Keys are 16-byte digests of the IP, email or session id (hex), never the value itself. While Redis cannot
/// answer, this instance counts in process (`fallback`) rather than refuse or admit everyone.
final class RedisRateLimitCounter: RateLimitCounter {
    private let budget: RateLimitBudget
    private let clients: RedisClientGroup
    private let prefix: String
    private let fallback: TokenBuckets

    /// A counter of `budget` in Redis through `clients`.
    init(budget: RateLimitBudget, clients: RedisClientGroup, prefix: String = "postern:") {
        self.budget = budget
        self.clients = clients
        self.prefix = prefix + "rl:" + budget.name + ":"
        fallback = TokenBuckets(capacity: budget.capacity, window: budget.window, maxBuckets: budget.maxBuckets)
    }

    /// Takes one from `key`'s window: nil when taken, else whole seconds until the window ends.
    /// ARGV: capacity, window in ms; returns 0 when taken, else the window's remaining milliseconds.
    static let takeScript = RedisScript("""
    local n = redis.call('INCR', KEYS[1])
    if n == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) end
    if n <= tonumber(ARGV[1]) then return 0 end
    redis.call('DECR', KEYS[1])
    local left = redis.call('PTTL', KEYS[1])
    if left < 0 then redis.call('PEXPIRE', KEYS[1], ARGV[2]) left = tonumber(ARGV[2]) end
    return math.max(left, 1)
    """)

    /// Gives one back unless the window already ended.
    static let giveBackScript = RedisScript("""
    local n = tonumber(redis.call('GET', KEYS[1]) or '0')
    if n > 0 then redis.call('DECR', KEYS[1]) end
    return 0
    """)

    /// Takes one for `key`; nil when allowed.
    func take(_ key: String) async -> Int? {
        guard budget.capacity > 0 else { return nil }
        let digest = RateLimitKey(key)
        do {
            let reply = try await clients.evaluate(Self.takeScript, keys: [.string(redisKey(digest))],
                                                   arguments: [.integer(budget.capacity), .integer(Int(budget.window * 1000))])
            let left = reply.integer ?? 0
            return left == 0 ? nil : max(1, Int((left + 999) / 1000))
        } catch {
            return fallback.take(digest)
        }
    }

    /// Gives back one taken for `key`.
    func giveBack(_ key: String) async {
        guard budget.capacity > 0 else { return }
        let digest = RateLimitKey(key)
        do {
            _ = try await clients.evaluate(Self.giveBackScript, keys: [.string(redisKey(digest))])
        } catch {
            fallback.giveBack(digest)
        }
    }

    /// Prunes the in-process fallback (Redis expires its own keys).
    func prune() { fallback.prune() }

    private func redisKey(_ key: RateLimitKey) -> String {
        // The same 16-byte digest the in-process buckets are keyed by: a key of fixed length, whatever `key`'s.
        prefix + key.hex
    }
}
