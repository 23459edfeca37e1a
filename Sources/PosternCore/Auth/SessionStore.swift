import Foundation

/// Synchronous, thread-safe persistence of sessions; `throws` only for storage (I/O) errors.
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
    /// Writes last_used for many sessions at once (called from a background flusher, not per request).
    func touch(_ lastUsed: [String: Date]) throws
    /// Deletes a session and its used-refresh records.
    func delete(sessionID: String) throws
    /// Deletes sessions with effective expiry <= now (and their used-refresh records); returns count.
    func purgeExpired(now: Date, idleTTL: TimeInterval) throws -> Int
    /// The number of stored sessions.
    func count() throws -> Int
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
