import FoundationEssentials

/// One signed-in client: the digests of its Postern tokens and the Directus tokens behind them.
///
/// A value with its fields in one shared box, copied on the first change (as `Array` is): a request carries its
/// session through several stages, and a copy of the box is one retain where a copy of the fields was one per
/// text (six).
package struct Session: Sendable, Equatable {
    /// The fields; shared by copies until one of them changes a field.
    private var fields: Fields

    /// Stable random session id (not a secret).
    var id: String {
        _read { yield fields.id }
        _modify {
            makeUnique()
            yield &fields.id
        }
    }
    /// Hex SHA-256 of the current Postern access token.
    var tokenDigest: String {
        get { token.string }
        set { token = SessionDigest(newValue) }
    }
    /// Hex SHA-256 of the current Postern refresh token.
    var refreshDigest: String {
        get { refresh.string }
        set { refresh = SessionDigest(newValue) }
    }
    /// `tokenDigest` held as 32 raw bytes (sessions are many: no hex string per session).
    var token: SessionDigest {
        _read { yield fields.token }
        _modify {
            makeUnique()
            yield &fields.token
        }
    }
    /// `refreshDigest` held as 32 raw bytes.
    var refresh: SessionDigest {
        _read { yield fields.refresh }
        _modify {
            makeUnique()
            yield &fields.refresh
        }
    }
    /// The Directus user id.
    var userID: String {
        _read { yield fields.userID }
        _modify {
            makeUnique()
            yield &fields.userID
        }
    }
    /// The user's email.
    var email: String {
        _read { yield fields.email }
        _modify {
            makeUnique()
            yield &fields.email
        }
    }
    /// The Directus role id, when known.
    var role: String? {
        _read { yield fields.role }
        _modify {
            makeUnique()
            yield &fields.role
        }
    }
    /// The current Directus access token (a JWT).
    var directusAccessToken: String {
        _read { yield fields.directusAccessToken }
        _modify {
            makeUnique()
            yield &fields.directusAccessToken
        }
    }
    /// When the Directus access token expires.
    var directusAccessExpiresAt: Date {
        _read { yield fields.directusAccessExpiresAt }
        _modify {
            makeUnique()
            yield &fields.directusAccessExpiresAt
        }
    }
    /// The current Directus refresh token.
    var directusRefreshToken: String {
        _read { yield fields.directusRefreshToken }
        _modify {
            makeUnique()
            yield &fields.directusRefreshToken
        }
    }
    /// When the session was created.
    var createdAt: Date {
        _read { yield fields.createdAt }
        _modify {
            makeUnique()
            yield &fields.createdAt
        }
    }
    /// When the session was last used (sliding idle expiry).
    var lastUsedAt: Date {
        _read { yield fields.lastUsedAt }
        _modify {
            makeUnique()
            yield &fields.lastUsedAt
        }
    }
    /// Absolute expiry (created + maximum lifetime).
    var expiresAt: Date {
        _read { yield fields.expiresAt }
        _modify {
            makeUnique()
            yield &fields.expiresAt
        }
    }
    /// The client's IP address at sign-in, as the gateway derived it (trusted proxies respected); "" for a
    /// session stored before Postern kept it.
    var clientIP: String {
        _read { yield fields.clientIP }
        _modify {
            makeUnique()
            yield &fields.clientIP
        }
    }
    /// The client's `User-Agent` at sign-in, bounded and without control characters (`Session.userAgent(_:)`);
    /// "" when it sent none, or for a session stored before Postern kept it.
    var userAgent: String {
        _read { yield fields.userAgent }
        _modify {
            makeUnique()
            yield &fields.userAgent
        }
    }

    /// Builds a session.
    init(id: String, tokenDigest: String, refreshDigest: String, userID: String, email: String,
                role: String? = nil, directusAccessToken: String, directusAccessExpiresAt: Date,
                directusRefreshToken: String, createdAt: Date, lastUsedAt: Date, expiresAt: Date,
                clientIP: String = "", userAgent: String = "") {
        fields = Fields(id: id, token: SessionDigest(tokenDigest), refresh: SessionDigest(refreshDigest), userID: userID,
                        email: email, role: role, directusAccessToken: directusAccessToken,
                        directusAccessExpiresAt: directusAccessExpiresAt, directusRefreshToken: directusRefreshToken,
                        createdAt: createdAt, lastUsedAt: lastUsedAt, expiresAt: expiresAt, clientIP: clientIP,
                        userAgent: userAgent)
    }

    /// Makes the fields this value's own (a copy when another value shares them), before a change.
    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&fields) { fields = fields.copy() }
    }

    /// Sessions are equal when every field is.
    package static func == (lhs: Session, rhs: Session) -> Bool {
        lhs.fields === rhs.fields || lhs.fields.same(as: rhs.fields)
    }

    /// The box behind `Session`. Changed only after `makeUnique()`, i.e. while one value holds it: what is shared
    /// between threads is never written, hence `@unchecked Sendable`.
    private final class Fields: @unchecked Sendable {
        var id: String
        var token: SessionDigest
        var refresh: SessionDigest
        var userID: String
        var email: String
        var role: String?
        var directusAccessToken: String
        var directusAccessExpiresAt: Date
        var directusRefreshToken: String
        var createdAt: Date
        var lastUsedAt: Date
        var expiresAt: Date
        var clientIP: String
        var userAgent: String

        init(id: String, token: SessionDigest, refresh: SessionDigest, userID: String, email: String, role: String?,
             directusAccessToken: String, directusAccessExpiresAt: Date, directusRefreshToken: String,
             createdAt: Date, lastUsedAt: Date, expiresAt: Date, clientIP: String, userAgent: String) {
            self.id = id
            self.token = token
            self.refresh = refresh
            self.userID = userID
            self.email = email
            self.role = role
            self.directusAccessToken = directusAccessToken
            self.directusAccessExpiresAt = directusAccessExpiresAt
            self.directusRefreshToken = directusRefreshToken
            self.createdAt = createdAt
            self.lastUsedAt = lastUsedAt
            self.expiresAt = expiresAt
            self.clientIP = clientIP
            self.userAgent = userAgent
        }

        /// A box of its own with the same fields.
        func copy() -> Fields {
            Fields(id: id, token: token, refresh: refresh, userID: userID, email: email, role: role,
                   directusAccessToken: directusAccessToken, directusAccessExpiresAt: directusAccessExpiresAt,
                   directusRefreshToken: directusRefreshToken, createdAt: createdAt, lastUsedAt: lastUsedAt,
                   expiresAt: expiresAt, clientIP: clientIP, userAgent: userAgent)
        }

        /// Whether every field equals `other`'s.
        func same(as other: Fields) -> Bool {
            id == other.id && token == other.token && refresh == other.refresh && userID == other.userID
                && email == other.email && role == other.role && directusAccessToken == other.directusAccessToken
                && directusAccessExpiresAt == other.directusAccessExpiresAt
                && directusRefreshToken == other.directusRefreshToken && createdAt == other.createdAt
                && lastUsedAt == other.lastUsedAt && expiresAt == other.expiresAt && clientIP == other.clientIP
                && userAgent == other.userAgent
        }
    }

    /// The current expiry: min(lastUsedAt + idleTTL, expiresAt).
    func effectiveExpiry(idleTTL: TimeInterval) -> Date {
        min(lastUsedAt.addingTimeInterval(idleTTL), expiresAt)
    }

    /// Whether the session is dead at `now` (expiry reached or passed).
    func isExpired(now: Date, idleTTL: TimeInterval) -> Bool {
        effectiveExpiry(idleTTL: idleTTL) <= now
    }

    /// The longest user agent a session keeps, in UTF-8 bytes.
    static let maxUserAgentBytes = 256

    /// `raw` as a session keeps it: control characters (C0, DEL, C1) and the Unicode bidi controls (U+202A–U+202E,
    /// U+2066–U+2069, which could reverse what the console and `postern sessions list` show around them) left out,
    /// then cut to at most `maxUserAgentBytes` UTF-8 bytes on a character boundary.
    static func userAgent(_ raw: String?) -> String {
        guard let raw, !raw.isEmpty else { return "" }
        var out = String()
        var bytes = 0
        for scalar in raw.unicodeScalars {
            let v = scalar.value
            if v < 0x20 || (0x7F...0x9F).contains(v) || (0x202A...0x202E).contains(v) || (0x2066...0x2069).contains(v) { continue }
            let width = UTF8.width(scalar)
            if bytes + width > maxUserAgentBytes { break }
            bytes += width
            out.unicodeScalars.append(scalar)
        }
        return out
    }

    /// A fresh random session id: base64url of 11 random bytes (88 bits; not a secret), 15 characters so
    /// that Swift keeps it inline in the `String` instead of allocating (sessions are many).
    static func newID() -> String {
        Crypto.base64URLEncode(Crypto.randomBytes(11))
    }
}
