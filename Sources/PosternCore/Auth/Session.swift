import Foundation

/// One signed-in client: the digests of its Postern tokens and the Directus tokens behind them.
public struct Session: Sendable, Equatable {
    /// Stable random session id (not a secret).
    public var id: String
    /// Hex SHA-256 of the current Postern access token.
    public var tokenDigest: String {
        get { token.string }
        set { token = SessionDigest(newValue) }
    }
    /// Hex SHA-256 of the current Postern refresh token.
    public var refreshDigest: String {
        get { refresh.string }
        set { refresh = SessionDigest(newValue) }
    }
    /// `tokenDigest` held as 32 raw bytes (sessions are many: no hex string per session).
    var token: SessionDigest
    /// `refreshDigest` held as 32 raw bytes.
    var refresh: SessionDigest
    /// The Directus user id.
    public var userID: String
    /// The user's email.
    public var email: String
    /// The Directus role id, when known.
    public var role: String?
    /// The current Directus access token (a JWT).
    public var directusAccessToken: String
    /// When the Directus access token expires.
    public var directusAccessExpiresAt: Date
    /// The current Directus refresh token.
    public var directusRefreshToken: String
    /// When the session was created.
    public var createdAt: Date
    /// When the session was last used (sliding idle expiry).
    public var lastUsedAt: Date
    /// Absolute expiry (created + maximum lifetime).
    public var expiresAt: Date

    /// Builds a session.
    public init(id: String, tokenDigest: String, refreshDigest: String, userID: String, email: String,
                role: String? = nil, directusAccessToken: String, directusAccessExpiresAt: Date,
                directusRefreshToken: String, createdAt: Date, lastUsedAt: Date, expiresAt: Date) {
        self.id = id
        self.token = SessionDigest(tokenDigest)
        self.refresh = SessionDigest(refreshDigest)
        self.userID = userID
        self.email = email
        self.role = role
        self.directusAccessToken = directusAccessToken
        self.directusAccessExpiresAt = directusAccessExpiresAt
        self.directusRefreshToken = directusRefreshToken
        self.createdAt = createdAt
        self.lastUsedAt = lastUsedAt
        self.expiresAt = expiresAt
    }

    /// The current expiry: min(lastUsedAt + idleTTL, expiresAt).
    public func effectiveExpiry(idleTTL: TimeInterval) -> Date {
        min(lastUsedAt.addingTimeInterval(idleTTL), expiresAt)
    }

    /// Whether the session is dead at `now` (expiry reached or passed).
    public func isExpired(now: Date, idleTTL: TimeInterval) -> Bool {
        effectiveExpiry(idleTTL: idleTTL) <= now
    }

    /// A fresh random session id: base64url of 11 random bytes (88 bits; not a secret), 15 characters so
    /// that Swift keeps it inline in the `String` instead of allocating (sessions are many).
    public static func newID() -> String {
        Crypto.base64URLEncode(Crypto.randomBytes(11))
    }
}
