import FoundationEssentials
import PosternIO

/// An in-process session store (tests, single instance without persistence).
///
/// Indexed like the SQLite store: by id, token digest, refresh digest, used refresh digest (both ways),
/// user, and the two expiry times, so that no call scans every session.
///
/// Memory (sessions are many): the sessions sit in fixed-size pages of numbered slots (`SlotPages`), and the
/// id and digest indexes hold 4-byte slot numbers (`SlotIndex`), not keys. A session holds its digests as 32
/// raw bytes (`SessionDigest`); the strings many sessions repeat (the user id and email of one user, role ids,
/// user agents) are stored once and shared, and a session read out (or returned by `insertReturningStored`)
/// shares its strings with the stored one, so the `SessionCache` in front of this store holds no second copy.
/// About 0.85 KB a session with a typical Directus JWT, most of it the Directus tokens (`make bench-sessions`).
package final class MemorySessionStore: SessionStore, @unchecked Sendable {
    /// The sessions of one user, and the one copy of the email's bytes they share.
    private struct UserSessions {
        var slots: Set<Int32> = []
        var email: String
    }

    private static let maxInternedRoles = 1024
    private let lock = PlainLock()
    private var sessions = SlotPages<Session>()
    private var byID = SlotIndex()
    private var byToken = SlotIndex()
    private var byRefresh = SlotIndex()
    private var usedRefresh: [String: String] = [:]        // used refresh digest → session id
    private var usedByID: [String: [String]] = [:]         // session id → its used refresh digests
    private var users: [String: UserSessions] = [:]
    /// E-mail (`SessionSummary.emailKey`) → user id → how many sessions of that user carry it (operator listing).
    private var emails: [String: [String: Int]] = [:]
    /// Slots by the first `SessionSummary.minimumPrefix` characters of their id (not unique; operator lookups).
    private var byPrefix = SlotIndex()
    /// Role ids are shared by many sessions: one copy of each.
    private var roles: [String: String] = [:]
    /// User agents too (one app version, many phones): one copy of each, at most `maxInternedRoles`.
    private var agents: [String: String] = [:]
    private var byLastUsed = ExpiryIndex<Int32>()
    private var byExpiresAt = ExpiryIndex<Int32>()

    /// Builds an empty store.
    package init() {}

    /// Stores a new session; throws `duplicate` if its id or a digest is taken.
    package func insert(_ session: Session) throws(SessionStoreError) {
        _ = try insertReturningStored(session)
    }

    /// Stores a new session and returns it with its user id, email and role sharing the stored copies.
    package func insertReturningStored(_ session: Session) throws(SessionStoreError) -> Session {
        try locked {
            guard slot(id: session.id) == nil else { throw SessionStoreError.duplicate("session id") }
            guard slot(token: session.token) == nil else { throw SessionStoreError.duplicate("token digest") }
            guard slot(refresh: session.refresh) == nil else { throw SessionStoreError.duplicate("refresh digest") }
            let session = sharingStrings(session)
            let slot = sessions.add(session)
            indexLocked(slot, session)
            users[session.userID, default: UserSessions(email: session.email)].slots.insert(slot)
            countEmailLocked(session, by: 1)
            byLastUsed.insert(slot, at: session.lastUsedAt)
            byExpiresAt.insert(slot, at: session.expiresAt)
            return session
        }
    }

    /// The session with this access-token digest.
    package func session(tokenDigest: String) throws(SessionStoreError) -> Session? {
        let digest = SessionDigest(tokenDigest)
        return lock.withLock { slot(token: digest).flatMap { sessions[$0] } }
    }

    /// The session with this refresh-token digest.
    package func session(refreshDigest: String) throws(SessionStoreError) -> Session? {
        let digest = SessionDigest(refreshDigest)
        return lock.withLock { slot(refresh: digest).flatMap { sessions[$0] } }
    }

    /// The session with this id.
    package func session(sessionID: String) throws(SessionStoreError) -> Session? {
        lock.withLock { slot(id: sessionID).flatMap { sessions[$0] } }
    }

    /// The session id that used this refresh digest before rotating it away.
    package func sessionID(usedRefreshDigest: String) throws(SessionStoreError) -> String? {
        lock.withLock { usedRefresh[usedRefreshDigest] }
    }

    /// Replaces the stored session with the same id (no-op if it is gone).
    package func update(_ session: Session) throws(SessionStoreError) {
        try locked {
            guard let slot = slot(id: session.id) else { return }
            try replaceLocked(slot, with: session)
        }
    }

    /// Rotates the digests of a session whose refresh digest is still `refreshDigest`.
    package func rotate(sessionID: String, refreshDigest: String, newTokenDigest: String, newRefreshDigest: String,
                       lastUsed: Date) throws(SessionStoreError) -> Session? {
        let expected = SessionDigest(refreshDigest)
        return try locked { () throws -> Session? in
            guard let slot = slot(id: sessionID), var new = sessions[slot], new.refresh == expected else { return nil }
            new.tokenDigest = newTokenDigest
            new.refreshDigest = newRefreshDigest
            new.lastUsedAt = lastUsed
            try replaceLocked(slot, with: new)
            return sessions[slot]
        }
    }

    /// Sets the Directus tokens of a session.
    package func updateDirectusTokens(sessionID: String, accessToken: String, accessExpiresAt: Date, refreshToken: String,
                                     role: String?) throws(SessionStoreError) -> Session? {
        lock.withLock { () -> Session? in
            guard let slot = slot(id: sessionID), sessions[slot] != nil else { return nil }
            let interned: String? = role.map { self.sharedRole($0) }
            sessions[slot]?.directusAccessToken = accessToken
            sessions[slot]?.directusAccessExpiresAt = accessExpiresAt
            sessions[slot]?.directusRefreshToken = refreshToken
            if let interned { sessions[slot]?.role = interned }
            return sessions[slot]
        }
    }

    /// Id, creation and last use of each session of `userID`.
    package func recency(userID: String) throws(SessionStoreError) -> [SessionRecency] {
        lock.withLock {
            (users[userID]?.slots ?? []).compactMap { slot in
                sessions[slot].map { SessionRecency(id: $0.id, createdAt: $0.createdAt, lastUsedAt: $0.lastUsedAt) }
            }
        }
    }

    /// Sets `lastUsedAt` of the listed sessions that still exist.
    package func touch(_ lastUsed: [String: Date]) throws(SessionStoreError) {
        lock.withLock {
            for (id, date) in lastUsed {
                guard let slot = slot(id: id), let old = sessions[slot]?.lastUsedAt else { continue }
                sessions[slot]?.lastUsedAt = date
                byLastUsed.move(slot, from: old, to: date)
            }
        }
    }

    /// Removes a session and its used-refresh records.
    package func delete(sessionID: String) throws(SessionStoreError) {
        lock.withLock { removeLocked(sessionID) }
    }

    /// Removes every session whose effective expiry is at or before `now`: only the sessions whose last use
    /// or absolute expiry falls in a due time bucket are looked at.
    package func purgeExpired(now: Date, idleTTL: TimeInterval) throws(SessionStoreError) -> [String] {
        lock.withLock {
            var dead: [String] = []
            let idleCutoff = now.addingTimeInterval(-idleTTL)
            for slot in byLastUsed.candidates(upTo: idleCutoff) {
                if let s = sessions[slot], s.lastUsedAt <= idleCutoff { dead.append(s.id); removeLocked(s.id) }
            }
            for slot in byExpiresAt.candidates(upTo: now) {
                if let s = sessions[slot], s.expiresAt <= now { dead.append(s.id); removeLocked(s.id) }
            }
            byLastUsed.advance(to: idleCutoff)
            byExpiresAt.advance(to: now)
            return dead
        }
    }

    /// The number of stored sessions.
    package func count() throws(SessionStoreError) -> Int {
        lock.withLock { sessions.count }
    }

    /// The sessions of `userID` (its per-user index).
    package func summaries(userID: String) throws(SessionStoreError) -> [SessionSummary] {
        lock.withLock {
            (users[userID]?.slots ?? []).compactMap { sessions[$0].map(SessionSummary.init) }
        }
    }

    /// The sessions whose e-mail is `email` (ignoring ASCII case): the users that carry it, then their sessions.
    package func summaries(email: String) throws(SessionStoreError) -> [SessionSummary] {
        let key = SessionSummary.emailKey(email)
        return lock.withLock {
            (emails[key]?.keys.map { $0 } ?? []).flatMap { user in
                (users[user]?.slots ?? []).compactMap { slot -> SessionSummary? in
                    guard let s = sessions[slot], SessionSummary.emailKey(s.email) == key else { return nil }
                    return SessionSummary(s)
                }
            }
        }
    }

    /// At most `limit` ids starting with `prefix`, through the prefix index.
    package func sessionIDs(prefix: String, limit: Int) throws(SessionStoreError) -> [String] {
        guard prefix.utf8.count >= SessionSummary.minimumPrefix, limit > 0 else { return [] }
        return lock.withLock {
            var found: [String] = []
            byPrefix.forEachCandidate(hash: MemorySessionStore.prefixHash(prefix)) { slot in
                if found.count < limit, let id = sessions[slot]?.id, id.hasPrefix(prefix) { found.append(id) }
            }
            return found
        }
    }

    /// The hash of the first `SessionSummary.minimumPrefix` bytes of `id` (the prefix index's key).
    private static func prefixHash(_ id: String) -> Int {
        var hasher = Hasher()
        for byte in id.utf8.prefix(SessionSummary.minimumPrefix) { hasher.combine(byte) }
        return hasher.finalize()
    }

    /// Adds `delta` to the count of `session`'s user under its e-mail (dropping counts that reach 0).
    private func countEmailLocked(_ session: Session, by delta: Int) {
        let key = SessionSummary.emailKey(session.email)
        let count = (emails[key]?[session.userID] ?? 0) + delta
        if count > 0 {
            emails[key, default: [:]][session.userID] = count
        } else {
            emails[key]?[session.userID] = nil
            if emails[key]?.isEmpty == true { emails[key] = nil }
        }
    }

    // MARK: Indexes (lock held)

    private func slot(id: String) -> Int32? {
        byID.find(hash: id.hashValue) { sessions[$0]?.id == id }
    }

    private func slot(token: SessionDigest) -> Int32? {
        byToken.find(hash: token.hashValue) { sessions[$0]?.token == token }
    }

    private func slot(refresh: SessionDigest) -> Int32? {
        byRefresh.find(hash: refresh.hashValue) { sessions[$0]?.refresh == refresh }
    }

    /// The hash a slot's session is filed under in an index (`key` picks the index's key).
    private func hash<K: Hashable>(_ slot: Int32, _ key: (Session) -> K) -> Int {
        sessions[slot].map { key($0).hashValue } ?? 0
    }

    /// The prefix index's hash of the session in `slot`.
    private func prefixHash(of slot: Int32) -> Int {
        sessions[slot].map { MemorySessionStore.prefixHash($0.id) } ?? 0
    }

    /// Files `slot` (holding `session`) in the id and digest indexes.
    private func indexLocked(_ slot: Int32, _ session: Session) {
        byID.insert(slot, hash: session.id.hashValue) { hash($0, \.id) }
        byPrefix.insert(slot, hash: MemorySessionStore.prefixHash(session.id)) { prefixHash(of: $0) }
        byToken.insert(slot, hash: session.token.hashValue) { hash($0, \.token) }
        byRefresh.insert(slot, hash: session.refresh.hashValue) { hash($0, \.refresh) }
    }

    /// Takes `slot` (holding `session`) out of the id and digest indexes (the slot must still hold it).
    private func unindexLocked(_ slot: Int32, _ session: Session) {
        byID.remove(slot, hash: session.id.hashValue) { hash($0, \.id) }
        byPrefix.remove(slot, hash: MemorySessionStore.prefixHash(session.id)) { prefixHash(of: $0) }
        byToken.remove(slot, hash: session.token.hashValue) { hash($0, \.token) }
        byRefresh.remove(slot, hash: session.refresh.hashValue) { hash($0, \.refresh) }
    }

    /// Runs `body` under the lock; its errors are store errors.
    private func locked<T>(_ body: () throws -> T) throws(SessionStoreError) -> T {
        do {
            return try lock.withLock(body)
        } catch {
            throw SessionStoreError.wrapping(error)
        }
    }

    /// `session` with its user id, email, role and user agent pointing at the copies already stored, when equal.
    private func sharingStrings(_ session: Session) -> Session {
        var session = session
        if let index = users.index(forKey: session.userID) {
            session.userID = users.keys[index]
            let email = users.values[index].email
            if email == session.email { session.email = email }
        }
        if let role = session.role { session.role = sharedRole(role) }
        if !session.userAgent.isEmpty {
            if let shared = agents[session.userAgent] {
                session.userAgent = shared
            } else if agents.count < MemorySessionStore.maxInternedRoles {
                agents[session.userAgent] = session.userAgent
            }
        }
        return session
    }

    /// The stored copy of `role`, if there is one (at most `maxInternedRoles` are kept).
    private func sharedRole(_ role: String) -> String {
        if let shared = roles[role] { return shared }
        if roles.count < MemorySessionStore.maxInternedRoles { roles[role] = role }
        return role
    }

    private func replaceLocked(_ slot: Int32, with session: Session) throws {
        guard let old = sessions[slot] else { return }
        let session = sharingStrings(session)
        if old.token != session.token, let other = self.slot(token: session.token), other != slot {
            throw SessionStoreError.duplicate("token digest")
        }
        if old.refresh != session.refresh, let other = self.slot(refresh: session.refresh), other != slot {
            throw SessionStoreError.duplicate("refresh digest")
        }
        // Out of the digest indexes while the slot still holds the old digests, back in with the new ones.
        byToken.remove(slot, hash: old.token.hashValue) { hash($0, \.token) }
        byRefresh.remove(slot, hash: old.refresh.hashValue) { hash($0, \.refresh) }
        if old.refresh != session.refresh {
            let oldRefresh = old.refreshDigest
            usedRefresh[oldRefresh] = session.id
            usedByID[session.id, default: []].append(oldRefresh)
        }
        if old.userID != session.userID || old.email != session.email {
            countEmailLocked(old, by: -1)
            countEmailLocked(session, by: 1)
        }
        if old.userID != session.userID {
            users[old.userID]?.slots.remove(slot)
            if users[old.userID]?.slots.isEmpty == true { users[old.userID] = nil }
            users[session.userID, default: UserSessions(email: session.email)].slots.insert(slot)
        }
        byLastUsed.move(slot, from: old.lastUsedAt, to: session.lastUsedAt)
        byExpiresAt.move(slot, from: old.expiresAt, to: session.expiresAt)
        sessions[slot] = session
        byToken.insert(slot, hash: session.token.hashValue) { hash($0, \.token) }
        byRefresh.insert(slot, hash: session.refresh.hashValue) { hash($0, \.refresh) }
    }

    private func removeLocked(_ id: String) {
        if let slot = slot(id: id), let old = sessions[slot] {
            unindexLocked(slot, old)
            _ = sessions.remove(slot)
            users[old.userID]?.slots.remove(slot)
            if users[old.userID]?.slots.isEmpty == true { users[old.userID] = nil }
            countEmailLocked(old, by: -1)
            byLastUsed.remove(slot, at: old.lastUsedAt)
            byExpiresAt.remove(slot, at: old.expiresAt)
        }
        for digest in usedByID.removeValue(forKey: id) ?? [] { usedRefresh[digest] = nil }
    }
}

/// Session ids (or slots) filed by a time in one-minute buckets: the ids due by a date are found in O(due),
/// not by a scan of every session.
struct ExpiryIndex<ID: Hashable> {
    private static var width: TimeInterval { 60 }
    private var buckets: [Int64: Set<ID>] = [:]
    /// No bucket below this one holds an id.
    private var floor = Int64.max

    private static func bucket(_ date: Date) -> Int64 {
        let minutes = (date.timeIntervalSince1970 / width).rounded(.down)
        return Int64(Swift.max(Swift.min(minutes, Double(Int64.max / 2)), Double(Int64.min / 2)))
    }

    /// Files `id` under `date`.
    mutating func insert(_ id: ID, at date: Date) {
        let b = ExpiryIndex.bucket(date)
        buckets[b, default: []].insert(id)
        floor = Swift.min(floor, b)
    }

    /// Removes `id` filed under `date`.
    mutating func remove(_ id: ID, at date: Date) {
        let b = ExpiryIndex.bucket(date)
        buckets[b]?.remove(id)
        if buckets[b]?.isEmpty == true { buckets[b] = nil }
    }

    /// Refiles `id` from `old` to `new`.
    mutating func move(_ id: ID, from old: Date, to new: Date) {
        guard ExpiryIndex.bucket(old) != ExpiryIndex.bucket(new) else { return }
        remove(id, at: old)
        insert(id, at: new)
    }

    /// Every id filed in a bucket at or before `cutoff`'s (a superset of those filed at or before `cutoff`).
    func candidates(upTo cutoff: Date) -> [ID] {
        let top = ExpiryIndex.bucket(cutoff)
        guard floor <= top else { return [] }
        if top - floor < Int64(buckets.count) {
            return (floor...top).flatMap { buckets[$0].map { Array($0) } ?? [] }
        }
        return buckets.filter { $0.key <= top }.flatMap { Array($0.value) }
    }

    /// Records that every id filed before `cutoff`'s bucket has been removed.
    mutating func advance(to cutoff: Date) {
        let top = ExpiryIndex.bucket(cutoff)
        if floor < top { floor = top }
        if buckets.isEmpty { floor = .max }
    }
}
