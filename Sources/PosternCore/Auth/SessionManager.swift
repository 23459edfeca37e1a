import Foundation

/// A Postern token pair handed to a client, with the session it opens.
public struct IssuedTokens: Sendable {
    /// The bearer token (`pst_…`); shown once, stored only as a digest.
    public var accessToken: String
    /// The refresh token (`psr_…`); shown once, stored only as a digest.
    public var refreshToken: String
    /// The session as stored.
    public var session: Session
}

/// Sessions: issue, authenticate, rotate and revoke Postern tokens, and keep each session's Directus
/// access token fresh (one refresh per session even under concurrent requests).
///
/// The hot path reads an in-process cache in front of the store; `last_used` is batched and written by
/// `flush()` from a background timer, never on the request path.
public final class SessionManager: @unchecked Sendable {
    private let store: any SessionStore
    private let directus: DirectusClient
    /// Idle expiry in seconds.
    public let idleTTL: TimeInterval
    /// Absolute expiry in seconds.
    public let maxTTL: TimeInterval
    private let clock: @Sendable () -> Date
    private let lock = NSLock()
    private var cache: [String: Session] = [:]          // token digest → session
    private var pendingTouches: [String: Date] = [:]    // session id → last used
    private var refreshes: [String: Task<Session, any Error>] = [:]  // session id → in-flight Directus refresh
    /// How often `last_used` may be written per session.
    static let touchInterval: TimeInterval = 60
    /// Refresh the Directus access token this long before it expires.
    static let expirySkew: TimeInterval = 5

    /// Creates a manager over `store`.
    public init(store: any SessionStore, directus: DirectusClient, idleTTL: TimeInterval, maxTTL: TimeInterval,
                clock: @escaping @Sendable () -> Date = { Date() }) {
        self.store = store
        self.directus = directus
        self.idleTTL = idleTTL
        self.maxTTL = maxTTL
        self.clock = clock
    }

    // MARK: Issue

    /// Opens a session for a Directus login and returns the new Postern tokens.
    public func open(tokens: DirectusTokens, email: String) throws(GatewayError) -> IssuedTokens {
        guard let claims = JWTClaims(token: tokens.accessToken), let userID = claims.id else {
            throw .upstreamError("Directus access token without user id")
        }
        let now = clock()
        let access = Crypto.newToken(prefix: Crypto.accessTokenPrefix)
        let refresh = Crypto.newToken(prefix: Crypto.refreshTokenPrefix)
        let session = Session(id: Session.newID(), tokenDigest: Crypto.sha256Hex(access), refreshDigest: Crypto.sha256Hex(refresh),
                              userID: userID, email: email, role: claims.role, directusAccessToken: tokens.accessToken,
                              directusAccessExpiresAt: now.addingTimeInterval(Double(tokens.expiresMs) / 1000),
                              directusRefreshToken: tokens.refreshToken, createdAt: now, lastUsedAt: now,
                              expiresAt: now.addingTimeInterval(maxTTL))
        do {
            try store.insert(session)
        } catch {
            throw .internalError("session store: \(error)")
        }
        lock.withLock { cache[session.tokenDigest] = session }
        return IssuedTokens(accessToken: access, refreshToken: refresh, session: session)
    }

    /// The current expiry of a session (idle expiry slides with use, capped by the absolute one).
    public func expiry(of session: Session) -> Date {
        session.effectiveExpiry(idleTTL: idleTTL)
    }

    // MARK: Authenticate

    /// The live session of a bearer token, or 401.
    public func authenticate(token: String) throws(GatewayError) -> Session {
        guard token.hasPrefix(Crypto.accessTokenPrefix), token.count < 200 else { throw .unauthorized() }
        let digest = Crypto.sha256Hex(token)
        let now = clock()
        var session = lock.withLock { cache[digest] }
        if session == nil {
            do {
                session = try store.session(tokenDigest: digest)
            } catch {
                throw .internalError("session store: \(error)")
            }
            if let s = session { lock.withLock { cache[digest] = s } }
        }
        guard var live = session else { throw .unauthorized() }
        if live.isExpired(now: now, idleTTL: idleTTL) {
            drop(live)
            throw .unauthorized("token expired")
        }
        if now.timeIntervalSince(live.lastUsedAt) >= SessionManager.touchInterval {
            live.lastUsedAt = now
            let id = live.id
            lock.withLock {
                // Touch the cached entry in place: it may be newer than `live` (a Directus refresh meanwhile).
                if var current = cache[digest] {
                    current.lastUsedAt = now
                    cache[digest] = current
                }
                pendingTouches[id] = now
            }
        }
        return live
    }

    // MARK: Rotate (Postern refresh tokens)

    /// Exchanges a Postern refresh token for a new token pair; both old ones die. A refresh token that
    /// was already used revokes its whole session (reuse means it was stolen).
    public func rotate(refreshToken: String, context: CallContext) async throws(GatewayError) -> IssuedTokens {
        guard refreshToken.hasPrefix(Crypto.refreshTokenPrefix), refreshToken.count < 200 else {
            throw .unauthorized("unknown, used or expired refresh token")
        }
        let digest = Crypto.sha256Hex(refreshToken)
        let now = clock()
        // Find-and-rotate runs under the lock, so of two uses of one refresh token exactly one wins.
        let (outcome, revoked) = lock.withLock { () -> (Result<IssuedTokens, GatewayError>, Session?) in
            rotateLocked(digest: digest, now: now)
        }
        if let revoked { await revoke(revoked, context: context) }
        return try outcome.get()
    }

    /// The rotation itself; call with the lock held.
    private func rotateLocked(digest: String, now: Date) -> (Result<IssuedTokens, GatewayError>, Session?) {
        let dead = GatewayError.unauthorized("unknown, used or expired refresh token")
        do {
            guard var session = try store.session(refreshDigest: digest) else {
                // A used refresh token: revoke the session it belonged to, wherever it is cached.
                if let id = try store.sessionID(usedRefreshDigest: digest),
                   let victim = try cache.values.first(where: { $0.id == id }) ?? store.session(sessionID: id) {
                    return (.failure(dead), victim)
                }
                return (.failure(dead), nil)
            }
            if session.isExpired(now: now, idleTTL: idleTTL) { return (.failure(dead), session) }
            cache[session.tokenDigest] = nil
            let access = Crypto.newToken(prefix: Crypto.accessTokenPrefix)
            let refresh = Crypto.newToken(prefix: Crypto.refreshTokenPrefix)
            session.tokenDigest = Crypto.sha256Hex(access)
            session.refreshDigest = Crypto.sha256Hex(refresh)
            session.lastUsedAt = now
            try store.update(session)
            cache[session.tokenDigest] = session
            return (.success(IssuedTokens(accessToken: access, refreshToken: refresh, session: session)), nil)
        } catch {
            return (.failure(.internalError("session store: \(error)")), nil)
        }
    }

    // MARK: Revoke

    /// Kills a session at once and logs its Directus refresh token out upstream (best effort).
    public func revoke(_ session: Session, context: CallContext) async {
        drop(session)
        try? await directus.logout(refreshToken: session.directusRefreshToken, context: context)
    }

    private func drop(_ session: Session) {
        lock.withLock {
            cache[session.tokenDigest] = nil
            for (digest, cached) in cache where cached.id == session.id { cache[digest] = nil }
            pendingTouches[session.id] = nil
        }
        try? store.delete(sessionID: session.id)
    }

    // MARK: Directus access token

    /// Runs `call` with the session's Directus access token, refreshing it first when it has expired and
    /// once more (then retrying once) when Directus says it is stale. A failed refresh kills the session: 401.
    public func withDirectusToken<T: Sendable>(_ session: Session, context: CallContext,
                                               translate: (DirectusError) -> GatewayError = { $0.gatewayError() },
                                               _ call: (String) async throws(DirectusError) -> T) async throws(GatewayError) -> T {
        var current = session
        if current.directusAccessExpiresAt.timeIntervalSince(clock()) < SessionManager.expirySkew {
            current = try await refreshDirectus(current, stale: current.directusAccessToken, context: context)
        }
        do {
            return try await call(current.directusAccessToken)
        } catch let error where error.isStaleToken {
            current = try await refreshDirectus(current, stale: current.directusAccessToken, context: context)
        } catch {
            throw translate(error)
        }
        do {
            return try await call(current.directusAccessToken)
        } catch let error where error.isStaleToken {
            drop(current)
            throw .unauthorized("session expired")
        } catch {
            throw translate(error)
        }
    }

    /// Refreshes the Directus tokens of a session once, however many callers saw `stale` at the same time.
    private func refreshDirectus(_ session: Session, stale: String, context: CallContext) async throws(GatewayError) -> Session {
        let task: Task<Session, any Error> = lock.withLock {
            if let latest = cache[session.tokenDigest] ?? cache.values.first(where: { $0.id == session.id }),
               latest.directusAccessToken != stale {
                return Task { latest }
            }
            if let running = refreshes[session.id] { return running }
            let base = cache[session.tokenDigest] ?? session
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

    private func performRefresh(_ session: Session, context: CallContext) async throws -> Session {
        defer { lock.withLock { refreshes[session.id] = nil } }
        let tokens: DirectusTokens
        do {
            tokens = try await directus.refresh(refreshToken: session.directusRefreshToken, context: context)
        } catch {
            if error.refusesRefreshToken { drop(session) }
            throw error.forTokenRefresh()
        }
        let expires = clock().addingTimeInterval(Double(tokens.expiresMs) / 1000)
        let role = JWTClaims(token: tokens.accessToken)?.role
        // Apply the new Directus tokens to the session as it is now: a Postern refresh may have rotated its
        // own tokens meanwhile (writing back the copy we started from would revive the old ones), and a
        // logout may have ended it.
        let stored = try lock.withLock { () throws -> Session in
            guard var latest = try cache.values.first(where: { $0.id == session.id }) ?? store.session(sessionID: session.id) else {
                throw GatewayError.unauthorized("session ended")
            }
            latest.directusAccessToken = tokens.accessToken
            latest.directusRefreshToken = tokens.refreshToken
            latest.directusAccessExpiresAt = expires
            if let role { latest.role = role }
            try store.update(latest)
            cache[latest.tokenDigest] = latest
            return latest
        }
        return stored
    }

    // MARK: Maintenance

    /// Writes batched `last_used` values (called from a background timer and at shutdown).
    public func flush() {
        let touches = lock.withLock { () -> [String: Date] in
            let t = pendingTouches
            pendingTouches.removeAll()
            return t
        }
        if !touches.isEmpty { try? store.touch(touches) }
    }

    /// Deletes expired sessions from the store and the cache; returns how many the store removed.
    @discardableResult
    public func purgeExpired() -> Int {
        let now = clock()
        lock.withLock {
            for (digest, session) in cache where session.isExpired(now: now, idleTTL: idleTTL) { cache[digest] = nil }
        }
        return (try? store.purgeExpired(now: now, idleTTL: idleTTL)) ?? 0
    }

    /// Live sessions in the store.
    public var activeSessions: Int { (try? store.count()) ?? 0 }
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
