import FoundationEssentials

/// Thread-safe persistence of sessions. Every method is `async` so that a networked store (Redis) can await
/// its answer; the in-process stores (memory, SQLite) answer without suspending. A missing session is `nil`,
/// never an error; `SessionStoreError.unavailable` means the store could not answer at all (the gateway then
/// answers 503 `session_store_unavailable`, never 401).
///
/// Every lookup goes through an index (token digest, refresh digest, session id, user id, expiry), so
/// each call costs O(1) in the number of stored sessions (`purgeExpired`: O(sessions it removes)).
/// `SessionManager` never calls a store under one of its own locks.
public protocol SessionStore: Sendable {
    /// Stores a new session (its id and both digests must be unused).
    func insert(_ session: Session) async throws(SessionStoreError)
    /// Stores a new session like `insert` and returns it as stored: a store that keeps one copy of the strings
    /// many sessions repeat (user id, email, role) returns those copies, so that a cached copy shares them.
    func insertReturningStored(_ session: Session) async throws(SessionStoreError) -> Session
    /// The session whose current access-token digest is `tokenDigest`.
    func session(tokenDigest: String) async throws(SessionStoreError) -> Session?
    /// The session whose current refresh-token digest is `refreshDigest`.
    func session(refreshDigest: String) async throws(SessionStoreError) -> Session?
    /// Session id that once used this (now rotated-away) refresh digest, for reuse detection.
    func sessionID(usedRefreshDigest: String) async throws(SessionStoreError) -> String?
    /// The session with this id.
    func session(sessionID: String) async throws(SessionStoreError) -> Session?
    /// Replaces the whole row of session.id (new token/refresh digests, new Directus tokens...);
    /// when the refresh digest changes, remembers the old one as "used" for that session id.
    func update(_ session: Session) async throws(SessionStoreError)
    /// Atomically gives the session `sessionID` new token and refresh digests and `lastUsed`, if its current
    /// refresh digest is still `refreshDigest` (remembering that one as used); returns the session as
    /// stored afterwards, or nil when the session is gone or was rotated by someone else first.
    func rotate(sessionID: String, refreshDigest: String, newTokenDigest: String, newRefreshDigest: String,
                lastUsed: Date) async throws(SessionStoreError) -> Session?
    /// Sets only the Directus tokens (and role, when given) of a session, leaving its Postern digests
    /// alone; returns the session as stored afterwards, or nil when it is gone.
    func updateDirectusTokens(sessionID: String, accessToken: String, accessExpiresAt: Date, refreshToken: String,
                              role: String?) async throws(SessionStoreError) -> Session?
    /// Id, creation and last use of every session of `userID` (for the per-user cap).
    func recency(userID: String) async throws(SessionStoreError) -> [SessionRecency]
    /// Writes last_used for many sessions at once (called from a background flusher, not per request).
    func touch(_ lastUsed: [String: Date]) async throws(SessionStoreError)
    /// Deletes a session and its used-refresh records.
    func delete(sessionID: String) async throws(SessionStoreError)
    /// Deletes sessions with effective expiry <= now (and their used-refresh records); returns their ids.
    func purgeExpired(now: Date, idleTTL: TimeInterval) async throws(SessionStoreError) -> [String]
    /// The number of stored sessions.
    func count() async throws(SessionStoreError) -> Int
    /// Whether the store can answer now (for `/readyz`); must not block for long (a networked store
    /// reports its connection state rather than making a round trip).
    func isAvailable() async -> Bool
}

extension SessionStore {
    /// Inserts `session` and returns it unchanged.
    public func insertReturningStored(_ session: Session) async throws(SessionStoreError) -> Session {
        try await insert(session)
        return session
    }

    /// In-process stores are always available.
    public func isAvailable() async -> Bool { true }
}

/// When one session of a user was created and last used (as the store knows it).
public struct SessionRecency: Sendable, Equatable {
    /// The session id.
    public var id: String
    /// When the session was created.
    public var createdAt: Date
    /// When it was last used, as last written by a batched touch.
    public var lastUsedAt: Date

    /// Builds a record.
    public init(id: String, createdAt: Date, lastUsedAt: Date) {
        self.id = id
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }
}

/// Errors of a session store.
public enum SessionStoreError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The store at `path` could not be opened or initialised.
    case cannotOpen(String, String)
    /// A statement failed on an open store.
    case failed(String)
    /// An insert collided with an existing session id or token digest.
    case duplicate(String)
    /// The store cannot be reached (a networked store that is down or reconnecting): the caller answers
    /// 503 `session_store_unavailable`, and neither accepts nor refuses the token.
    case unavailable(String)

    /// A one-line explanation for logs and start-up failures.
    public var description: String {
        switch self {
        case let .cannotOpen(path, reason): return "cannot open session store \(path): \(reason)"
        case let .failed(reason): return "session store error: \(reason)"
        case let .duplicate(what): return "session store: duplicate \(what)"
        case let .unavailable(reason): return "session store unavailable: \(reason)"
        }
    }
}

extension SessionStoreError {
    /// Wraps any other error of a store's own internals (a `SessionStoreError` stays as it is).
    static func wrapping(_ error: any Error) -> SessionStoreError {
        (error as? SessionStoreError) ?? .failed("\(error)")
    }

    /// The gateway's answer to this store error: 503 `session_store_unavailable` when the store could not
    /// answer, else 500 (a bug or a broken store file).
    var gatewayError: GatewayError {
        switch self {
        case .unavailable: return .sessionStoreUnavailable(description)
        default: return .internalError(description)
        }
    }
}
