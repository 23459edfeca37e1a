import Foundation

/// Synchronous, thread-safe persistence of sessions; `throws` only for storage (I/O) errors.
///
/// Every lookup goes through an index (token digest, refresh digest, session id, user id, expiry), so
/// each call costs O(1) in the number of stored sessions (`purgeExpired`: O(sessions it removes)).
/// `SessionManager` never calls a store under one of its own locks.
public protocol SessionStore: Sendable {
    /// Stores a new session (its id and both digests must be unused).
    func insert(_ session: Session) throws
    /// The session whose current access-token digest is `tokenDigest`.
    func session(tokenDigest: String) throws -> Session?
    /// The session whose current refresh-token digest is `refreshDigest`.
    func session(refreshDigest: String) throws -> Session?
    /// Session id that once used this (now rotated-away) refresh digest, for reuse detection.
    func sessionID(usedRefreshDigest: String) throws -> String?
    /// The session with this id.
    func session(sessionID: String) throws -> Session?
    /// Replaces the whole row of session.id (new token/refresh digests, new Directus tokens...);
    /// when the refresh digest changes, remembers the old one as "used" for that session id.
    func update(_ session: Session) throws
    /// Atomically gives the session `sessionID` new token and refresh digests and `lastUsed`, if its current
    /// refresh digest is still `refreshDigest` (remembering that one as used); returns the session as
    /// stored afterwards, or nil when the session is gone or was rotated by someone else first.
    func rotate(sessionID: String, refreshDigest: String, newTokenDigest: String, newRefreshDigest: String,
                lastUsed: Date) throws -> Session?
    /// Sets only the Directus tokens (and role, when given) of a session, leaving its Postern digests
    /// alone; returns the session as stored afterwards, or nil when it is gone.
    func updateDirectusTokens(sessionID: String, accessToken: String, accessExpiresAt: Date, refreshToken: String,
                              role: String?) throws -> Session?
    /// Id, creation and last use of every session of `userID` (for the per-user cap).
    func recency(userID: String) throws -> [SessionRecency]
    /// Writes last_used for many sessions at once (called from a background flusher, not per request).
    func touch(_ lastUsed: [String: Date]) throws
    /// Deletes a session and its used-refresh records.
    func delete(sessionID: String) throws
    /// Deletes sessions with effective expiry <= now (and their used-refresh records); returns their ids.
    func purgeExpired(now: Date, idleTTL: TimeInterval) throws -> [String]
    /// The number of stored sessions.
    func count() throws -> Int
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

    /// A one-line explanation for logs and start-up failures.
    public var description: String {
        switch self {
        case let .cannotOpen(path, reason): return "cannot open session store \(path): \(reason)"
        case let .failed(reason): return "session store error: \(reason)"
        case let .duplicate(what): return "session store: duplicate \(what)"
        }
    }
}
