import FoundationEssentials
import PosternIO

/// Token buckets by key (an IP, an email, a session id): `capacity` tokens, refilled evenly over `window`.
/// A bucket is keyed by the key's 16-byte digest (`RateLimitKey`), never the key's text, and at most
/// `maxBuckets` are held: past it, taking for a new key first drops the least recently used bucket of its
/// shard (a dropped bucket reads as full again), so no input grows this beyond a fixed size.
/// Process-wide, in shards by key, each behind its own lock: requests of different loops rarely meet on
/// one lock (the per-token limit is taken on every request). No lock is held across an await.
final class TokenBuckets: @unchecked Sendable {
    /// One key's bucket, linked into its shard's recency list.
    private struct Entry {
        var key: RateLimitKey
        var tokens: Double
        var updated: TimeInterval
        /// The slot of the next less recently used entry (-1: none); a free slot's next free slot.
        var older: Int32
        /// The slot of the next more recently used entry (-1: none).
        var newer: Int32
    }

    /// One shard of the buckets: entries in slots, a doubly linked list from the most to the least recently
    /// used, and a free list of the slots that pruning emptied. Every operation is O(1) but `prune`.
    private final class Shard: @unchecked Sendable {
        let lock = PlainLock()
        /// Entries this shard holds at most.
        let limit: Int
        var slots: [RateLimitKey: Int32] = [:]
        var entries: [Entry] = []
        var newest: Int32 = -1
        var oldest: Int32 = -1
        var free: Int32 = -1

        init(limit: Int) {
            self.limit = limit
        }

        /// The slot of `key`'s entry, made the most recently used, or nil when it has none.
        func touch(_ key: RateLimitKey) -> Int? {
            guard let slot = slots[key] else { return nil }
            if slot != newest {
                unlink(slot)
                pushNewest(slot)
            }
            return Int(slot)
        }

        /// Adds an entry for `key` (which has none) as the most recently used, dropping the least recently
        /// used one first when the shard is full; returns its slot.
        func insert(_ key: RateLimitKey, tokens: Double, now: TimeInterval) -> Int {
            let entry = Entry(key: key, tokens: tokens, updated: now, older: -1, newer: -1)
            let slot: Int32
            if slots.count >= limit {
                slot = oldest
                slots[entries[Int(slot)].key] = nil
                unlink(slot)
                entries[Int(slot)] = entry
            } else if free >= 0 {
                slot = free
                free = entries[Int(slot)].older
                entries[Int(slot)] = entry
            } else {
                slot = Int32(entries.count)  // below `limit`, which `TokenBuckets.init` keeps within Int32
                // Grows by doubling as usual, but never past the limit.
                if entries.count == entries.capacity { entries.reserveCapacity(min(limit, max(16, entries.count * 2))) }
                entries.append(entry)
            }
            slots[key] = slot
            pushNewest(slot)
            return Int(slot)
        }

        /// Drops the entry in `slot` and frees the slot.
        func remove(_ slot: Int32) {
            slots[entries[Int(slot)].key] = nil
            unlink(slot)
            entries[Int(slot)].older = free
            free = slot
        }

        /// Rebuilds the storage around the live entries, in the same order, once pruning left most slots free.
        func compactIfSparse() {
            guard entries.count > 64, slots.count * 4 < entries.count else { return }
            var live: [Entry] = []
            live.reserveCapacity(slots.count)
            var slot = oldest
            while slot >= 0 {
                live.append(entries[Int(slot)])
                slot = entries[Int(slot)].newer
            }
            entries = []
            slots = [:]
            newest = -1
            oldest = -1
            free = -1
            for entry in live {
                let slot = Int32(entries.count)
                entries.append(entry)
                slots[entry.key] = slot
                pushNewest(slot)
            }
        }

        private func unlink(_ slot: Int32) {
            let older = entries[Int(slot)].older, newer = entries[Int(slot)].newer
            if older >= 0 { entries[Int(older)].newer = newer } else { oldest = newer }
            if newer >= 0 { entries[Int(newer)].older = older } else { newest = older }
        }

        private func pushNewest(_ slot: Int32) {
            entries[Int(slot)].older = newest
            entries[Int(slot)].newer = -1
            if newest >= 0 { entries[Int(newest)].newer = slot } else { oldest = slot }
            newest = slot
        }
    }

    /// Tokens a full bucket holds (0 disables the limit).
    let capacity: Int
    /// Seconds to refill a bucket from empty.
    let window: TimeInterval
    /// Buckets held at most, over all shards.
    let maxBuckets: Int
    private let shards: [Shard]
    private let shardMask: Int
    private let clock: @Sendable () -> TimeInterval

    /// Creates buckets of `capacity` per `window` seconds, at most `maxBuckets` of them (at least 1), in
    /// `shardCount` shards (a power of two; by default 16, fewer when `maxBuckets` is smaller).
    init(capacity: Int, window: TimeInterval, maxBuckets: Int = RateLimitsConfig.defaultMaxBuckets,
                shardCount: Int? = nil,
                clock: @escaping @Sendable () -> TimeInterval = { ProcessInfo.processInfo.systemUptime }) {
        self.capacity = capacity
        self.window = window
        // Config validation keeps it within 1...RateLimitsConfig.maxBucketsCeiling; slots are Int32.
        let maxBuckets = min(max(1, maxBuckets), Int(Int32.max))
        self.maxBuckets = maxBuckets
        // Every shard holds at least one bucket: a shard of none would leave its keys unlimited.
        var count = 1
        while count * 2 <= min(shardCount ?? 16, maxBuckets) { count *= 2 }
        shards = (0..<count).map { i in Shard(limit: maxBuckets / count + (i < maxBuckets % count ? 1 : 0)) }
        shardMask = count - 1
        self.clock = clock
    }

    private var rate: Double { Double(capacity) / window }

    private func shard(_ key: RateLimitKey) -> Shard {
        shards[Int(truncatingIfNeeded: key.w1) & shardMask]
    }

    /// Takes one token for `key`: nil when taken, else the seconds until one is available.
    func take(_ key: String) -> Int? {
        guard capacity > 0 else { return nil }
        return take(RateLimitKey(key))
    }

    /// Takes one token for the key whose digest is `key` (see `take(_:)`).
    func take(_ key: RateLimitKey) -> Int? {
        guard capacity > 0 else { return nil }
        let now = clock()
        let shard = shard(key)
        return shard.lock.withLock {
            let slot: Int
            if let found = shard.touch(key) {
                slot = found
                refill(&shard.entries[slot], now)
            } else {
                slot = shard.insert(key, tokens: Double(capacity), now: now)
            }
            let tokens = shard.entries[slot].tokens
            if tokens >= 1 {
                shard.entries[slot].tokens = tokens - 1
                return nil
            }
            return max(1, Int(((1 - tokens) / rate).rounded(.up)))
        }
    }

    /// Gives back a token taken for `key` (a successful login does not count).
    func giveBack(_ key: String) {
        guard capacity > 0 else { return }
        giveBack(RateLimitKey(key))
    }

    /// Gives back a token taken for the key whose digest is `key`. A key without a bucket is full already.
    func giveBack(_ key: RateLimitKey) {
        guard capacity > 0 else { return }
        let now = clock()
        let shard = shard(key)
        shard.lock.withLock {
            guard let slot = shard.touch(key) else { return }
            refill(&shard.entries[slot], now)
            shard.entries[slot].tokens = min(Double(capacity), shard.entries[slot].tokens + 1)
        }
    }

    /// Drops full buckets (they hold no information), and gives back the storage pruning left empty.
    func prune() {
        let now = clock()
        for shard in shards {
            shard.lock.withLock {
                var slot = shard.oldest
                while slot >= 0 {
                    let next = shard.entries[Int(slot)].newer
                    refill(&shard.entries[Int(slot)], now)
                    if shard.entries[Int(slot)].tokens >= Double(capacity) { shard.remove(slot) }
                    slot = next
                }
                shard.compactIfSparse()
            }
        }
    }

    /// Keys currently tracked.
    var trackedKeys: Int { shards.reduce(0) { total, shard in total + shard.lock.withLock { shard.slots.count } } }

    private func refill(_ entry: inout Entry, _ now: TimeInterval) {
        entry.tokens = min(Double(capacity), entry.tokens + (now - entry.updated) * rate)
        entry.updated = now
    }
}

/// The gateway's rate limits (docs/api.md, Limits and defaults), each counted before the upstream call,
/// through one `RateLimitCounter` per budget (in process, or shared between instances).
final class RateLimits: Sendable {
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
    convenience init(_ config: RateLimitsConfig, metrics: Metrics,
                            clock: @escaping @Sendable () -> TimeInterval = { ProcessInfo.processInfo.systemUptime }) {
        self.init(config, metrics: metrics, counters: { budget in
            TokenBuckets(capacity: budget.capacity, window: budget.window, maxBuckets: budget.maxBuckets, clock: clock)
        })
    }

    /// Builds the limits from config, each budget counted by the counter `counters` makes for it.
    init(_ config: RateLimitsConfig, metrics: Metrics, counters: RateLimitCounterFactory) {
        func budget(_ name: String, _ capacity: Int, _ window: TimeInterval) -> any RateLimitCounter {
            counters(RateLimitBudget(name: name, capacity: capacity, window: window, maxBuckets: config.maxBuckets))
        }
        failedLoginsPerIP = budget("login_ip", config.failedLoginsPerIPPerMinute, 60)
        failedLoginsPerEmail = budget("login_email", config.failedLoginsPerEmailPerMinute, 60)
        failedLoginsPerEmailPerDay = budget("login_email_day", config.failedLoginsPerEmailPerDay, 86_400)
        registrationsPerIP = budget("registration_ip", config.registrationsPerIPPerMinute, 60)
        requestsPerToken = budget("token", config.requestsPerTokenPerMinute, 60)
        limitsRequestsPerToken = config.requestsPerTokenPerMinute > 0
        self.metrics = metrics
    }

    /// A login attempt's claim on the failed-login budgets; give it back when the login succeeds.
    struct LoginClaim: Sendable {
        fileprivate let ip: String
        fileprivate let email: String
    }

    /// Takes a token from every failed-login budget of this IP and email (compared case-insensitively),
    /// or throws 429 without taking any when one of them is exhausted.
    func claimLogin(ip: String, email: String) async throws(GatewayError) -> LoginClaim {
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
    func release(_ claim: LoginClaim) async {
        await failedLoginsPerIP.giveBack(claim.ip)
        await failedLoginsPerEmail.giveBack(claim.email)
        await failedLoginsPerEmailPerDay.giveBack(claim.email)
    }

    /// Counts a registration attempt from `ip`, or throws 429.
    func claimRegistration(ip: String) async throws(GatewayError) {
        if let retryAfter = await registrationsPerIP.take(ip) {
            metrics.rateLimited("registration_ip")
            throw .rateLimited(retryAfter: retryAfter)
        }
    }

    /// Counts an API request for a session, or throws 429 (when the per-token limit is on).
    func claimRequest(sessionID: String) async throws(GatewayError) {
        if let retryAfter = await requestsPerToken.take(sessionID) {
            metrics.rateLimited("token")
            throw .rateLimited(retryAfter: retryAfter)
        }
    }

    /// Drops idle buckets (from the maintenance timer).
    func prune() {
        for counter in [failedLoginsPerIP, failedLoginsPerEmail, failedLoginsPerEmailPerDay, registrationsPerIP, requestsPerToken] {
            counter.prune()
        }
    }
}
