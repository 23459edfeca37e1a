import FoundationEssentials
import PosternIO

/// The in-process cache of live sessions in front of the store.
///
/// - A hit (`hit`) takes one of 64 shard locks, chosen by the token digest, and nothing else: no
///   process-wide lock on the hot path.
/// - `keyByID` (session id → token digest) lets a revocation, rotation or Directus refresh find a
///   session's entry in O(1); it and `generation` sit behind `indexLock`, which only writers and
///   cache fills take (index lock first, then a shard lock; never the other way round).
/// - No store I/O runs under either lock.
/// - It holds at most `capacity` sessions: a fill into a full shard evicts one of its entries (the first
///   in hash order, which is random), so memory does not grow with the number of live sessions; an evicted
///   session is read from the store again on its next use. An entry costs about 1.2 KB with a typical
///   Directus JWT (`make bench-sessions`, SQLite store): the Directus tokens are half of it, the `Session`
///   value (digests as raw bytes) and the two indexes the rest. Over the memory store about 0.5 KB: the
///   cached copy shares the stored one's strings.
///
/// Revocations cannot be undone by a concurrent read. Every write that makes a cached copy wrong
/// (revocation, rotation, Directus refresh) first writes the store, then bumps `generation` and removes
/// or patches the entry. A reader notes `generation` before it reads the store and fills the cache only
/// if it has not moved: a write whose store part the read may have missed has either bumped it already
/// (the fill is refused) or will remove the filled entry when it gets to the cache.
final class SessionCache: @unchecked Sendable {
    /// One cached session and when it was last used (for the per-user cap's least-recently-used order); a
    /// reference, so that a shard's dictionary buckets stay small (a shard's table is up to twice its entries).
    final class Entry {
        var session: Session
        var lastUse: Date
        init(session: Session, lastUse: Date) {
            self.session = session
            self.lastUse = lastUse
        }
    }

    private final class Shard: @unchecked Sendable {
        let lock = FastLock()
        var entries: [TokenKey: Entry] = [:]
        /// Session id → last used, waiting for `drainTouches`.
        var touches: [String: Date] = [:]
    }

    private static let shardCount = 64
    private static let maxInternedRoles = 1024
    private let shards: [Shard]
    private let perShard: Int
    private let indexLock = PlainLock()
    private var keyByID: [String: TokenKey] = [:]
    private var generation: UInt64 = 0
    /// Role ids are shared by many sessions: one copy of each.
    private var roles: [String: String] = [:]
    /// User agents too (one app version, many phones): one copy of each, at most `maxInternedAgents`.
    private var agents: [String: String] = [:]
    private static let maxInternedAgents = 1024

    /// An empty cache for at most `capacity` sessions.
    init(capacity: Int) {
        shards = (0..<SessionCache.shardCount).map { _ in Shard() }
        perShard = max(1, capacity / SessionCache.shardCount)
    }

    private func shard(_ key: TokenKey) -> Shard {
        shards[Int(truncatingIfNeeded: key.w1) & (SessionCache.shardCount - 1)]
    }

    // MARK: Hot path

    /// The cached session of `key`, marked used at `now`; its `lastUsedAt` moves (and a touch is queued
    /// for the store) at most once per `touchInterval`. An expired session is returned untouched.
    func hit(_ key: TokenKey, now: Date, idleTTL: TimeInterval, touchInterval: TimeInterval) -> Session? {
        let shard = shard(key)
        return shard.lock.withLock { () -> Session? in
            guard let index = shard.entries.index(forKey: key) else { return nil }
            if shard.entries.values[index].session.isExpired(now: now, idleTTL: idleTTL) {
                return shard.entries.values[index].session
            }
            shard.entries.values[index].lastUse = now
            if now.timeIntervalSince(shard.entries.values[index].session.lastUsedAt) >= touchInterval {
                shard.entries.values[index].session.lastUsedAt = now
                shard.touches[shard.entries.values[index].session.id] = now
            }
            return shard.entries.values[index].session
        }
    }

    // MARK: Fills (only from a store read or a new session)

    /// The current generation: note it before a store read whose result may be cached.
    var currentGeneration: UInt64 {
        indexLock.withLock { generation }
    }

    /// Caches `session` under `key` unless a write invalidated entries since `seen`; says whether it did.
    @discardableResult
    func fill(_ key: TokenKey, _ session: Session, ifUnchangedSince seen: UInt64, now: Date) -> Bool {
        indexLock.withLock {
            guard generation == seen else { return false }
            insertLocked(key, Entry(session: session, lastUse: now))
            return true
        }
    }

    /// After a rotation written to the store: the session's old entry goes, and `session` (read back from
    /// the store by the rotation) is cached under `key` unless another write came in since `seen`.
    func replace(sessionID: String, with session: Session, key: TokenKey, ifUnchangedSince seen: UInt64, now: Date) {
        indexLock.withLock {
            let unchanged = generation == seen
            generation &+= 1
            removeLocked(sessionID)
            if unchanged { insertLocked(key, Entry(session: session, lastUse: now)) }
        }
    }

    // MARK: Invalidation (after the store write)

    /// Forgets a session (revoked, expired, purged): its token misses from now on.
    func remove(sessionID: String) {
        indexLock.withLock {
            generation &+= 1
            removeLocked(sessionID)
        }
    }

    /// Forgets every session (their queued touches stay queued: the store still wants them).
    func removeAll() {
        indexLock.withLock {
            generation &+= 1
            keyByID.removeAll()
            for shard in shards {
                shard.lock.withLock { shard.entries.removeAll() }
            }
        }
    }

    /// Changes the cached copy of a session in place, if it is cached (never adds one); returns the result.
    func patch(sessionID: String, _ change: (inout Session) -> Void) -> Session? {
        indexLock.withLock {
            generation &+= 1
            guard let key = keyByID[sessionID] else { return nil }
            let shard = shard(key)
            return shard.lock.withLock { () -> Session? in
                guard let index = shard.entries.index(forKey: key) else { return nil }
                change(&shard.entries.values[index].session)
                return shard.entries.values[index].session
            }
        }
    }

    // MARK: Reads for writers

    /// The cached copy of a session, by id.
    func session(id: String) -> Session? {
        indexLock.withLock {
            guard let key = keyByID[id] else { return nil }
            let shard = shard(key)
            return shard.lock.withLock { shard.entries[key]?.session }
        }
    }

    /// When each of `ids` that is cached was last used (fresher than the store's batched `last_used`).
    func lastUse(of ids: [String]) -> [String: Date] {
        indexLock.withLock {
            var out: [String: Date] = [:]
            for id in ids {
                guard let key = keyByID[id] else { continue }
                let shard = shard(key)
                if let use = shard.lock.withLock({ shard.entries[key]?.lastUse }) { out[id] = use }
            }
            return out
        }
    }

    /// Takes the queued `last_used` values (session id → date) for a batched store write.
    func drainTouches() -> [String: Date] {
        var all: [String: Date] = [:]
        for shard in shards {
            let touches = shard.lock.withLock { () -> [String: Date] in
                defer { shard.touches.removeAll() }
                return shard.touches
            }
            all.merge(touches) { max($0, $1) }
        }
        return all
    }

    /// The number of cached sessions.
    var count: Int {
        indexLock.withLock { keyByID.count }
    }

    // MARK: Helpers (index lock held)

    private func insertLocked(_ key: TokenKey, _ entry: Entry) {
        let id = entry.session.id
        if let role = entry.session.role {
            if let shared = roles[role] {
                entry.session.role = shared
            } else if roles.count < SessionCache.maxInternedRoles {
                roles[role] = role
            }
        }
        let agent = entry.session.userAgent
        if !agent.isEmpty {
            if let shared = agents[agent] {
                entry.session.userAgent = shared
            } else if agents.count < SessionCache.maxInternedAgents {
                agents[agent] = agent
            }
        }
        if let old = keyByID[id], old != key { removeLocked(id) }
        keyByID[id] = key
        let shard = shard(key)
        let evicted = shard.lock.withLock { () -> String? in
            var evicted: String?
            // The first entry in hash order: a random one, since digests are random (O(1), unlike randomElement()).
            if shard.entries.count >= perShard, shard.entries[key] == nil, let victim = shard.entries.first {
                shard.entries[victim.key] = nil
                evicted = victim.value.session.id
            }
            shard.entries[key] = entry
            return evicted
        }
        // Its queued touch stays queued: the store still wants it.
        if let evicted { keyByID[evicted] = nil }
    }

    private func removeLocked(_ id: String) {
        guard let key = keyByID.removeValue(forKey: id) else { return }
        let shard = shard(key)
        shard.lock.withLock {
            shard.entries[key] = nil
            shard.touches[id] = nil
        }
    }
}
