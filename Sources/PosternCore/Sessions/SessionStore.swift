import FoundationEssentials

/// Thread-safe persistence of sessions. Every method is `async` so that a networked store (Redis) can await
/// its answer; the in-process stores (memory, SQLite) answer without suspending. A missing session is `nil`,
/// never an error; `SessionStoreError.unavailable` means the store could not answer at all (the gateway then
/// answers 503 `session_store_unavailable`, never 401).
///
/// Every lookup goes through an index (token digest, refresh digest, session id, user id, expiry), so
/// each call costs O(1) in the number of stored sessions (`purgeExpired`: O(sessions it removes)).
/// `SessionManager` never calls a store under one of its own locks.
package protocol SessionStore: Sendable {
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
    /// What an operator sees of each stored session of `userID` (any order; expired ones the purge has not
    /// reached yet included: the caller filters them).
    func summaries(userID: String) async throws(SessionStoreError) -> [SessionSummary]
    /// Like `summaries(userID:)`, for the sessions whose e-mail equals `email` ignoring ASCII case.
    func summaries(email: String) async throws(SessionStoreError) -> [SessionSummary]
    /// The ids of at most `limit` stored sessions whose id starts with `prefix` (at least
    /// `SessionSummary.minimumPrefix` characters), through an index (an operator's `DELETE /admin/sessions/{id}`).
    func sessionIDs(prefix: String, limit: Int) async throws(SessionStoreError) -> [String]
    /// Whether the store can answer now (for `/readyz`); must not block for long (a networked store
    /// reports its connection state rather than making a round trip).
    func isAvailable() async -> Bool
}

extension SessionStore {
    /// Inserts `session` and returns it unchanged.
    package func insertReturningStored(_ session: Session) async throws(SessionStoreError) -> Session {
        try await insert(session)
        return session
    }

    /// In-process stores are always available.
    package func isAvailable() async -> Bool { true }

    /// A store without an operator's listing (test doubles) says so.
    func summaries(userID: String) async throws(SessionStoreError) -> [SessionSummary] {
        throw .failed("this session store cannot list sessions")
    }

    /// A store without an operator's listing (test doubles) says so.
    func summaries(email: String) async throws(SessionStoreError) -> [SessionSummary] {
        throw .failed("this session store cannot list sessions")
    }

    /// A store without an operator's listing (test doubles) says so.
    func sessionIDs(prefix: String, limit: Int) async throws(SessionStoreError) -> [String] {
        throw .failed("this session store cannot look sessions up by id prefix")
    }
}

/// What an operator sees of one session (docs/api.md, Session control): never a token or a digest.
package struct SessionSummary: Sendable, Equatable {
    /// The session id (not a secret).
    var id: String
    /// The Directus user id.
    var userID: String
    /// The e-mail the user signed in with.
    var email: String
    /// When the session was created.
    var createdAt: Date
    /// When it was last used, as the store knows it (the batched `last_used`).
    var lastUsedAt: Date
    /// Absolute expiry.
    var expiresAt: Date
    /// The client's IP at sign-in ("" for a session stored before Postern kept it).
    var clientIP: String
    /// The client's user agent at sign-in ("" when none, or for a session stored before Postern kept it).
    var userAgent: String

    /// The fewest characters of a session id that `DELETE /admin/sessions/{id}` accepts as a prefix.
    static let minimumPrefix = 8

    /// Builds a summary.
    init(id: String, userID: String, email: String, createdAt: Date, lastUsedAt: Date, expiresAt: Date,
                clientIP: String, userAgent: String) {
        self.id = id
        self.userID = userID
        self.email = email
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.expiresAt = expiresAt
        self.clientIP = clientIP
        self.userAgent = userAgent
    }

    /// The summary of `session`.
    init(_ session: Session) {
        self.init(id: session.id, userID: session.userID, email: session.email, createdAt: session.createdAt,
                  lastUsedAt: session.lastUsedAt, expiresAt: session.expiresAt, clientIP: session.clientIP,
                  userAgent: session.userAgent)
    }

    /// `email` as the stores compare e-mails: ASCII letters in lower case (as SQLite's `NOCASE` and Redis's Lua
    /// `string.lower` do), every other byte as it is.
    static func emailKey(_ email: String) -> String {
        guard email.utf8.contains(where: { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") }) else { return email }
        return String(decoding: email.utf8.map { $0 >= UInt8(ascii: "A") && $0 <= UInt8(ascii: "Z") ? $0 + 32 : $0 },
                      as: UTF8.self)
    }

    /// Whether `id` could be a session id or a prefix of one: 1 to 64 characters of the base64url alphabet
    /// (what `Session.newID()` writes). Anything else names no session.
    static func isIDLike(_ id: String) -> Bool {
        guard !id.isEmpty, id.utf8.count <= 64 else { return false }
        return id.utf8.allSatisfy { b in
            (b >= UInt8(ascii: "A") && b <= UInt8(ascii: "Z")) || (b >= UInt8(ascii: "a") && b <= UInt8(ascii: "z"))
                || (b >= UInt8(ascii: "0") && b <= UInt8(ascii: "9")) || b == UInt8(ascii: "-") || b == UInt8(ascii: "_")
        }
    }
}

/// When one session of a user was created and last used (as the store knows it).
package struct SessionRecency: Sendable, Equatable {
    /// The session id.
    var id: String
    /// When the session was created.
    var createdAt: Date
    /// When it was last used, as last written by a batched touch.
    var lastUsedAt: Date

    /// Builds a record.
    init(id: String, createdAt: Date, lastUsedAt: Date) {
        self.id = id
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
    }
}

/// Errors of a session store.
package enum SessionStoreError: Error, Sendable, Equatable, CustomStringConvertible {
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
    package var description: String {
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
