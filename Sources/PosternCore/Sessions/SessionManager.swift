import FoundationEssentials
import PosternIO
import PosternHTTP

/// A Postern token pair handed to a client, with the session it opens.
package struct IssuedTokens: Sendable {
    /// The bearer token (`pst_…`); shown once, stored only as a digest.
    package var accessToken: String
    /// The refresh token (`psr_…`); shown once, stored only as a digest.
    var refreshToken: String
    /// The session as stored.
    var session: Session
}

/// Sessions: issue, authenticate, rotate and revoke Postern tokens, and keep each session's Directus
/// access token fresh (one refresh per session even under concurrent requests).
///
/// The hot path reads an in-process cache (`SessionCache`: sharded, no process-wide lock on a hit) in front
/// of the store; `last_used` is batched and written by `flush()` from a background timer, never on the
/// request path. No store call runs under a lock: a write goes to the store first, then removes or patches
/// the cached copy, and a cache miss fills the cache only if no such write came in while it read the
/// store, so a revocation cannot be undone by a concurrent read. `authenticate` is `async` so that a
/// store that answers asynchronously (Redis) can be awaited on a miss; a hit never suspends. A store that
/// cannot answer makes the caller's request 503 `session_store_unavailable`, never a 401. Each revocation or
/// change of a session is announced on the `SessionRevocationBus`, and announcements from other instances
/// drop this one's cached copy.
package final class SessionManager: @unchecked Sendable {
    /// Where sessions live (read by the shared-refresh extension).
    let store: any SessionStore
    /// The Directus client for refresh and logout: a config reload hands the manager the new one
    /// (`useDirectus`), so that a changed `directus.url` reaches them too. Read only on those calls.
    private let directusClient: LockedBox<DirectusClient>
    private var directus: DirectusClient { directusClient.withLock { $0 } }
    /// Idle expiry in seconds.
    let idleTTL: TimeInterval
    /// Absolute expiry in seconds.
    let maxTTL: TimeInterval
    /// Live sessions per user: opening one more ends the user's least recently used session.
    let maxPerUser: Int
    /// The wall clock (injected in tests).
    let clock: @Sendable () -> Date
    /// The in-process cache in front of the store.
    let cache: SessionCache
    private let knownCount = LockedBox(0)
    private let revocations: any SessionRevocationBus
    private let lock = PlainLock()  // guards `refreshes` only
    private var refreshes: [String: Task<Session, any Error>] = [:]  // session id → in-flight Directus refresh
    /// How often `last_used` may be written per session.
    static let touchInterval: TimeInterval = 60
    /// Refresh the Directus access token this long before it expires.
    static let expirySkew: TimeInterval = 5
    /// Store reads a cache miss makes when concurrent writes keep refusing its fill (then it answers uncached).
    static let fillAttempts = 3

    /// Sessions the in-process cache holds by default (about 60 MB with typical Directus tokens; see
    /// `SessionCache`); the others are read from the store.
    package static let defaultCacheCapacity = 50_000

    /// Makes `directus` the client of the refreshes and logouts from now on (a config reload).
    func useDirectus(_ directus: DirectusClient) {
        directusClient.withLock { $0 = directus }
    }

    /// Creates a manager over `store`, caching at most `cacheCapacity` sessions in process; `revocations`
    /// tells the other instances of a shared store which sessions changed, and tells this one theirs.
    package init(store: any SessionStore, directus: DirectusClient, idleTTL: TimeInterval, maxTTL: TimeInterval,
                maxPerUser: Int = 20, cacheCapacity: Int = SessionManager.defaultCacheCapacity,
                revocations: any SessionRevocationBus = LocalRevocationBus(),
                clock: @escaping @Sendable () -> Date = { Date() }) {
        self.cache = SessionCache(capacity: cacheCapacity)
        self.store = store
        directusClient = LockedBox(directus)
        self.idleTTL = idleTTL
        self.maxTTL = maxTTL
        self.maxPerUser = max(1, maxPerUser)
        self.clock = clock
        self.revocations = revocations
        // The subscriptions hold the session cache, not the manager, not even weakly: a weak reference gives
        // the manager a side table, and every retain of it on the request path then takes the slow path.
        // A session another instance revoked leaves the cache (the store already forgot it); a reset of the bus
        // (announcements may have been missed) empties it.
        let cache = self.cache
        revocations.subscribe { id in cache.remove(sessionID: id) }
        revocations.subscribeReset { cache.removeAll() }
    }

    // MARK: Issue

    /// Opens a session for a Directus login and returns the new Postern tokens; beyond `maxPerUser` live
    /// sessions, the user's least recently used ones end (and their Directus refresh tokens are logged out).
    /// The session keeps `context`'s client IP and `userAgent` (bounded by `Session.userAgent(_:)`).
    package func open(tokens: DirectusTokens, email: String, userAgent: String? = nil,
                     context: CallFields) async throws(GatewayError) -> IssuedTokens {
        guard let claims = JWTClaims(token: tokens.accessToken), let userID = claims.id else {
            throw .upstreamError("Directus access token without user id")
        }
        let now = clock()
        let access = Crypto.newToken(prefix: Crypto.accessTokenPrefix)
        let refresh = Crypto.newToken(prefix: Crypto.refreshTokenPrefix)
        let key = TokenKey(token: access)
        let session = Session(id: Session.newID(), tokenDigest: key.hex, refreshDigest: Crypto.sha256Hex(refresh),
                              userID: userID, email: email, role: claims.role, directusAccessToken: tokens.accessToken,
                              directusAccessExpiresAt: now.addingTimeInterval(Double(tokens.expiresMs) / 1000),
                              directusRefreshToken: tokens.refreshToken, createdAt: now, lastUsedAt: now,
                              expiresAt: now.addingTimeInterval(maxTTL), clientIP: context.clientIP,
                              userAgent: Session.userAgent(userAgent))
        let seen = cache.currentGeneration
        let stored: Session
        do {
            stored = try await store.insertReturningStored(session)
        } catch {
            throw error.gatewayError
        }
        // The stored copy: over the memory store, the cached one then shares its user id and email.
        cache.fill(key, stored, ifUnchangedSince: seen, now: now)
        await enforceCap(userID: userID, keeping: session.id, context: context)
        return IssuedTokens(accessToken: access, refreshToken: refresh, session: stored)
    }

    /// Ends the least recently used sessions of `userID` beyond `maxPerUser`, never `keeping`. Costs
    /// O(sessions of that user): the store's per-user index, with the cache's fresher last uses on top.
    private func enforceCap(userID: String, keeping: String, context: CallFields) async {
        guard let recency = try? await store.recency(userID: userID), recency.count > maxPerUser else { return }
        let fresh = cache.lastUse(of: recency.map(\.id))
        func lastUse(_ r: SessionRecency) -> Date { max(r.lastUsedAt, fresh[r.id] ?? .distantPast) }
        let ranked = recency.filter { $0.id != keeping }.sorted { a, b in
            let (ua, ub) = (lastUse(a), lastUse(b))
            return ua != ub ? ua < ub : a.createdAt < b.createdAt
        }
        for victim in ranked.prefix(recency.count - maxPerUser) {
            await revoke(sessionID: victim.id, context: context)
        }
    }

    /// The current expiry of a session (idle expiry slides with use, capped by the absolute one).
    func expiry(of session: Session) -> Date {
        session.effectiveExpiry(idleTTL: idleTTL)
    }

    // MARK: Authenticate

    /// The live session of a bearer token, or 401. A cache hit takes one shard lock and never suspends;
    /// a miss reads the store.
    package func authenticate(token: String) async throws(GatewayError) -> Session {
        guard token.hasPrefix(Crypto.accessTokenPrefix), token.utf8.count < 200 else { throw .unauthorized() }
        let key = TokenKey(token: token)
        let now = clock()
        if let session = cache.hit(key, now: now, idleTTL: idleTTL, touchInterval: SessionManager.touchInterval) {
            if session.isExpired(now: now, idleTTL: idleTTL) {
                await drop(sessionID: session.id)
                throw .unauthorized("token expired")
            }
            return session
        }
        return try await load(key, now: now)
    }

    /// A cache miss: reads the store, then fills the cache unless a write invalidated it meanwhile.
    private func load(_ key: TokenKey, now: Date) async throws(GatewayError) -> Session {
        let digest = key.hex
        var attempt = 1
        while true {
            let seen = cache.currentGeneration
            let found: Session?
            do {
                found = try await store.session(tokenDigest: digest)
            } catch {
                // Unavailable: 503, never a 401 for a token the store could not judge.
                throw error.gatewayError
            }
            guard let session = found else { throw .unauthorized() }
            if session.isExpired(now: now, idleTTL: idleTTL) {
                await drop(sessionID: session.id)
                throw .unauthorized("token expired")
            }
            if cache.fill(key, session, ifUnchangedSince: seen, now: now) {
                return cache.hit(key, now: now, idleTTL: idleTTL, touchInterval: SessionManager.touchInterval) ?? session
            }
            // A revocation, rotation or refresh came in while we read: read again, or (still racing) answer
            // from a read that began after those writes, without caching it.
            if attempt == SessionManager.fillAttempts { return session }
            attempt += 1
        }
    }

    // MARK: Rotate (Postern refresh tokens)

    /// Exchanges a Postern refresh token for a new token pair; both old ones die. A refresh token that
    /// was already used revokes its whole session (reuse means it was stolen).
    func rotate(refreshToken: String, context: CallFields) async throws(GatewayError) -> IssuedTokens {
        let dead = GatewayError.unauthorized("unknown, used or expired refresh token")
        guard refreshToken.hasPrefix(Crypto.refreshTokenPrefix), refreshToken.utf8.count < 200 else { throw dead }
        let digest = Crypto.sha256Hex(refreshToken)
        let now = clock()
        let found: Session?
        do {
            found = try await store.session(refreshDigest: digest)
        } catch {
            throw error.gatewayError
        }
        guard let session = found else {
            // A used refresh token: revoke the session it belonged to.
            let reusedBy: String?
            do {
                reusedBy = try await store.sessionID(usedRefreshDigest: digest)
            } catch {
                throw error.gatewayError
            }
            if let id = reusedBy { await revoke(sessionID: id, context: context) }
            throw dead
        }
        if session.isExpired(now: now, idleTTL: idleTTL) {
            try await revoke(session, context: context)
            throw dead
        }
        let access = Crypto.newToken(prefix: Crypto.accessTokenPrefix)
        let refresh = Crypto.newToken(prefix: Crypto.refreshTokenPrefix)
        let key = TokenKey(token: access)
        let seen = cache.currentGeneration
        let rotated: Session?
        do {
            // Compare-and-set in the store: of two uses of one refresh token exactly one wins.
            rotated = try await store.rotate(sessionID: session.id, refreshDigest: digest, newTokenDigest: key.hex,
                                             newRefreshDigest: Crypto.sha256Hex(refresh), lastUsed: now)
        } catch {
            throw error.gatewayError
        }
        guard let rotated else {
            // Another use of the same refresh token won: this one is a reuse.
            await revoke(sessionID: session.id, context: context)
            throw dead
        }
        cache.replace(sessionID: session.id, with: rotated, key: key, ifUnchangedSince: seen, now: now)
        revocations.publish(sessionID: session.id)
        return IssuedTokens(accessToken: access, refreshToken: refresh, session: rotated)
    }

    // MARK: Revoke

    /// Kills a session at once and logs its Directus refresh token out upstream (best effort). Throws
    /// 503 `session_store_unavailable` when the store could not delete it (the token may still work elsewhere).
    package func revoke(_ session: Session, context: CallFields) async throws(GatewayError) {
        // The latest Directus refresh token: a refresh may have rotated it since `session` was read.
        var latest = cache.session(id: session.id)
        if latest == nil { latest = try? await store.session(sessionID: session.id) }
        if let failure = await drop(sessionID: session.id) { throw failure.gatewayError }
        try? await directus.logout(refreshToken: (latest ?? session).directusRefreshToken, context: context)
    }

    /// Kills the session `sessionID` (wherever it is) and logs its Directus refresh token out upstream.
    private func revoke(sessionID: String, context: CallFields) async {
        var latest = cache.session(id: sessionID)
        if latest == nil { latest = try? await store.session(sessionID: sessionID) }
        await drop(sessionID: sessionID)
        if let latest { try? await directus.logout(refreshToken: latest.directusRefreshToken, context: context) }
    }

    /// Deletes a session from the store, then from the cache (in that order: see `SessionCache`); returns
    /// the store's error, if any (the cached copy is dropped either way).
    @discardableResult
    private func drop(sessionID: String) async -> SessionStoreError? {
        var failure: SessionStoreError?
        do {
            try await store.delete(sessionID: sessionID)
        } catch {
            failure = error
        }
        cache.remove(sessionID: sessionID)
        if failure == nil { revocations.publish(sessionID: sessionID) }
        return failure
    }

    // MARK: Operator (docs/api.md, Session control)

    /// The live sessions of `user`, newest first: an e-mail (ignoring ASCII case) when it holds an `@`, else a
    /// user id. Last use is the fresher of the store's (batched) and this instance's cache's. 503 when the
    /// store cannot answer.
    func summaries(ofUser user: String) async throws(GatewayError) -> [SessionSummary] {
        let stored: [SessionSummary]
        do {
            stored = user.contains("@") ? try await store.summaries(email: user) : try await store.summaries(userID: user)
        } catch {
            throw error.gatewayError
        }
        let now = clock()
        let fresh = cache.lastUse(of: stored.map(\.id))
        return stored.compactMap { summary -> SessionSummary? in
            var summary = summary
            if let use = fresh[summary.id], use > summary.lastUsedAt { summary.lastUsedAt = use }
            return min(summary.lastUsedAt.addingTimeInterval(idleTTL), summary.expiresAt) > now ? summary : nil
        }.sorted { $0.createdAt != $1.createdAt ? $0.createdAt > $1.createdAt : $0.id < $1.id }
    }

    /// Ends the one session that `idOrPrefix` names, like a logout (its tokens stop working at once here, and
    /// on every instance of a shared store once the announcement arrives), and returns it: a full session id,
    /// or at least `SessionSummary.minimumPrefix` first characters of exactly one. 400 for a shorter prefix,
    /// 404 when none matches, 409 `ambiguous_session_id` when several do, 503 when the store cannot answer.
    func revoke(sessionIDOrPrefix idOrPrefix: String, context: CallFields) async throws(GatewayError) -> SessionSummary {
        let exact: Session?
        do {
            exact = SessionSummary.isIDLike(idOrPrefix) ? try await store.session(sessionID: idOrPrefix) : nil
        } catch {
            throw error.gatewayError
        }
        if let exact {
            try await end(exact.id, latest: exact, context: context)
            return SessionSummary(exact)
        }
        guard idOrPrefix.count >= SessionSummary.minimumPrefix else {
            throw .invalidRequest("no session has this id; a prefix needs at least \(SessionSummary.minimumPrefix) characters")
        }
        let ids: [String]
        do {
            ids = try await store.sessionIDs(prefix: idOrPrefix, limit: 2)
        } catch {
            throw error.gatewayError
        }
        guard ids.count < 2 else {
            throw GatewayError(status: 409, code: .ambiguousSessionID,
                               message: "more than one session id starts with this prefix; give more characters")
        }
        var found: Session?
        if let id = ids.first {
            do {
                found = try await store.session(sessionID: id)
            } catch {
                throw error.gatewayError
            }
        }
        guard let found else { throw .notFound("no session with this id") }
        try await end(found.id, latest: found, context: context)
        return SessionSummary(found)
    }

    /// Ends every session of the user `userID` like a logout; returns how many of them were live (expired ones
    /// the purge has not reached yet go too, uncounted). 503 when the store cannot answer.
    func revokeAll(userID: String, context: CallFields) async throws(GatewayError) -> Int {
        let stored: [SessionSummary]
        do {
            stored = try await store.summaries(userID: userID)
        } catch {
            throw error.gatewayError
        }
        let now = clock()
        let fresh = cache.lastUse(of: stored.map(\.id))
        var live = 0
        for summary in stored {
            try await end(summary.id, latest: nil, context: context)
            let lastUse = max(summary.lastUsedAt, fresh[summary.id] ?? .distantPast)
            if min(lastUse.addingTimeInterval(idleTTL), summary.expiresAt) > now { live += 1 }
        }
        return live
    }

    /// Deletes the session `sessionID` (store, cache, announcement), then logs its latest Directus refresh token
    /// out upstream (best effort); throws 503 when the store could not delete it.
    private func end(_ sessionID: String, latest read: Session?, context: CallFields) async throws(GatewayError) {
        // The latest Directus refresh token: a refresh may have rotated it since `read`.
        var latest = cache.session(id: sessionID)
        if latest == nil { latest = read }
        if latest == nil { latest = try? await store.session(sessionID: sessionID) }
        if let failure = await drop(sessionID: sessionID) { throw failure.gatewayError }
        if let latest { try? await directus.logout(refreshToken: latest.directusRefreshToken, context: context) }
    }

    // MARK: Directus access token

    /// Runs `call` with the session's Directus access token, refreshing it first when it has expired and
    /// once more (then retrying once) when Directus says it is stale. A failed refresh kills the session: 401.
    func withDirectusToken<T: Sendable>(_ session: Session, context: CallFields,
                                               translate: (DirectusError) -> GatewayError = { $0.gatewayError() },
                                               _ call: (String) async throws(DirectusError) -> T) async throws(GatewayError) -> T {
        var current = session
        if current.directusAccessExpiresAt.timeIntervalSince(clock()) < SessionManager.expirySkew {
            current = try await refreshDirectus(current, stale: current.directusAccessToken, context: context)
        }
        do {
            return try await call(current.directusAccessToken)
        } catch let error where error.isStaleToken {
            return try await retryWithFreshDirectusToken(current, context: context, translate: translate, call)
        } catch {
            throw translate(error)
        }
    }

    /// The session's Directus access token when it is not about to expire: a caller may run its call with it
    /// directly, and on a stale-token error go on with `retryWithFreshDirectusToken` (the same steps as
    /// `withDirectusToken`, without its closures); nil when `withDirectusToken` must refresh it first.
    func freshDirectusToken(_ session: Session) -> String? {
        session.directusAccessExpiresAt.timeIntervalSince(clock()) < SessionManager.expirySkew ? nil : session.directusAccessToken
    }

    /// After Directus called `session`'s access token stale: refreshes it once and runs `call` once more; a
    /// second stale answer kills the session (401).
    func retryWithFreshDirectusToken<T: Sendable>(_ session: Session, context: CallFields,
                                                  translate: (DirectusError) -> GatewayError,
                                                  _ call: (String) async throws(DirectusError) -> T) async throws(GatewayError) -> T {
        let current = try await refreshDirectus(session, stale: session.directusAccessToken, context: context)
        do {
            return try await call(current.directusAccessToken)
        } catch let error where error.isStaleToken {
            await drop(sessionID: current.id)
            throw .unauthorized("session expired")
        } catch {
            throw translate(error)
        }
    }

    /// Refreshes the Directus tokens of a session once, however many callers saw `stale` at the same time.
    private func refreshDirectus(_ session: Session, stale: String, context: CallFields) async throws(GatewayError) -> Session {
        let task: Task<Session, any Error> = lock.withLock {
            // Read under the lock: `performRefresh` patches the cache before it leaves `refreshes`.
            let latest = cache.session(id: session.id)
            if let latest, latest.directusAccessToken != stale {
                return Task { latest }
            }
            if let running = refreshes[session.id] { return running }
            let base = latest ?? session
            let running = Task(executorPreference: EventLoop.current) { [self] () throws -> Session in
                try await self.performRefresh(base, context: context)
            }
            refreshes[session.id] = running
            return running
        }
        do {
            return try await task.value
        } catch let error as GatewayError {
            throw error
        } catch {
            throw .internalError("\(error)")
        }
    }

    private func performRefresh(_ session: Session, context: CallFields) async throws -> Session {
        defer { lock.withLock { refreshes[session.id] = nil } }
        if let shared = store as? any SharedRefreshLock {
            return try await performSharedRefresh(session, lock: shared, context: context)
        }
        return try await refreshNow(session, context: context)
    }

    /// Refreshes the Directus tokens of `session` with its refresh token and stores them (the caller made sure
    /// no one else refreshes this session now).
    func refreshNow(_ session: Session, context: CallFields) async throws -> Session {
        let tokens: DirectusTokens
        do {
            tokens = try await directus.refresh(refreshToken: session.directusRefreshToken, context: context)
        } catch {
            if error.refusesRefreshToken { await drop(sessionID: session.id) }
            throw error.forTokenRefresh()
        }
        let expires = clock().addingTimeInterval(Double(tokens.expiresMs) / 1000)
        let role = JWTClaims(token: tokens.accessToken)?.role
        // Write only the Directus tokens: a Postern refresh may have rotated the session's own tokens
        // meanwhile (writing back the copy we started from would revive the old ones), and a logout may
        // have ended it.
        // Directus has rotated its refresh token: the new one is the only one that works, so a store that is
        // briefly unavailable (Redis reconnecting) is waited for rather than the tokens dropped.
        let stored: Session?
        var pause: UInt64 = 50_000_000
        let started = ProcessInfo.processInfo.systemUptime
        while true {
            do {
                stored = try await store.updateDirectusTokens(sessionID: session.id, accessToken: tokens.accessToken,
                                                              accessExpiresAt: expires, refreshToken: tokens.refreshToken, role: role)
                break
            } catch {
                guard case .unavailable = error,
                      ProcessInfo.processInfo.systemUptime - started < SessionManager.directusTokenWritePatience else {
                    // Keep them on this instance at least, while it holds the session.
                    _ = patchDirectusTokens(session.id, tokens, expires: expires, role: role)
                    throw error.gatewayError
                }
                try? await Task.sleep(nanoseconds: pause)
                pause = min(pause * 2, 500_000_000)
            }
        }
        guard let stored else { throw GatewayError.unauthorized("session ended") }
        let cached = patchDirectusTokens(session.id, tokens, expires: expires, role: role)
        revocations.publish(sessionID: session.id)
        return cached ?? stored
    }

    /// Seconds a fresh Directus token pair waits for an unavailable store before the request gives up.
    static let directusTokenWritePatience: TimeInterval = 5

    /// Puts new Directus tokens into the cached copy of a session, if cached; returns the result.
    private func patchDirectusTokens(_ sessionID: String, _ tokens: DirectusTokens, expires: Date, role: String?) -> Session? {
        cache.patch(sessionID: sessionID) { latest in
            latest.directusAccessToken = tokens.accessToken
            latest.directusRefreshToken = tokens.refreshToken
            latest.directusAccessExpiresAt = expires
            if let role { latest.role = role }
        }
    }

    // MARK: Maintenance

    /// Writes batched `last_used` values (called from a background timer and at shutdown).
    func flush() async {
        let touches = cache.drainTouches()
        if !touches.isEmpty { try? await store.touch(touches) }
    }

    /// Deletes expired sessions from the store, then from the cache; returns how many the store removed.
    @discardableResult
    func purgeExpired() async -> Int {
        let purged = (try? await store.purgeExpired(now: clock(), idleTTL: idleTTL)) ?? []
        for id in purged { cache.remove(sessionID: id) }
        return purged.count
    }

    /// Live sessions in the store (0 when it cannot answer); also remembered for `lastKnownActiveSessions`.
    func activeSessions() async -> Int {
        let count = (try? await store.count()) ?? 0
        knownCount.withLock { $0 = count }
        return count
    }

    /// The count the last `activeSessions()` saw (for a synchronous metrics gauge).
    var lastKnownActiveSessions: Int { knownCount.withLock { $0 } }

    /// Whether the session store can answer now (`/readyz`).
    func storeIsAvailable() async -> Bool {
        await store.isAvailable()
    }

    /// Drops every cached session (a shared bus may have missed announcements: each is read again).
    package func forgetAllCached() {
        cache.removeAll()
    }

    /// Sessions in the in-process cache.
    var cachedSessions: Int { cache.count }
}

/// The claims Postern reads from a Directus access JWT it received from Directus itself.
struct JWTClaims {
    /// The Directus user id.
    var id: String?
    /// The Directus role id.
    var role: String?
    /// Expiry (seconds since 1970).
    var exp: Int64?

    /// Decodes the payload (no signature check: the token came straight from Directus over our own connection).
    init?(token: String) {
        let parts = token.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, let bytes = Crypto.base64URLDecode(String(parts[1])),
              let payload = try? JSONValue.parse(Data(bytes)) else { return nil }
        id = payload["id"]?.stringValue
        role = payload["role"]?.stringValue
        exp = payload["exp"]?.intValue
    }
}
