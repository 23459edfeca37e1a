import FoundationEssentials
import PosternHTTP

/// Reads the bearer token and attaches its session; `required` routes answer 401 without one.
final class AuthenticationStage: Sendable {
    let sessions: SessionManager
    let required: Bool
    let rateLimits: RateLimits

    /// Creates the stage.
    init(sessions: SessionManager, required: Bool, rateLimits: RateLimits) {
        self.sessions = sessions
        self.required = required
        self.rateLimits = rateLimits
    }

    /// The authentication's second step, when `authenticateFromCache` could not finish it: attaches the session of
    /// the request's bearer token to `context` (401 for a bad token, and for none when `required`), after taking the
    /// token's per-token rate-limit claim.
    func authenticate(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) {
        if let token = AuthenticationStage.bearer(request.headers["Authorization"]) {
            let session = try await sessions.authenticate(token: token)
            if rateLimits.limitsRequestsPerToken { try await rateLimits.claimRequest(sessionID: session.id) }
            context.trace?.userID = session.userID
            context.session = session
        } else if required {
            throw .unauthorized("missing bearer token")
        }
    }

    /// The authentication's first step, on both of the gateway's paths (`Endpoint.prepare`), without an `await`:
    /// true when done (no token on a route where one is optional, or the token's session live in the session cache
    /// with no per-token limit to claim); false when the second step, `authenticate`, must run. Not inlined: it
    /// keeps its work off the caller's frame.
    @inline(never)
    func authenticateFromCache(_ request: HTTPRequest, context: RequestContext) throws(GatewayError) -> Bool {
        // The header's bytes are read where they were received: no `String` of the header or of the token.
        let outcome = request.headers.withFirstValueBytes("Authorization") { bytes -> CachedLookup in
            guard let token = AuthenticationStage.bearerOffsets(bytes) else { return .noToken }
            guard !rateLimits.limitsRequestsPerToken,
                  let session = sessions.cachedLiveSession(tokenBytes: UnsafeBufferPointer(rebasing: bytes[token])) else { return .miss }
            return .hit(session)
        } ?? .noToken
        switch outcome {
        case .noToken:
            if required { throw .unauthorized("missing bearer token") }
            return true
        case .miss:
            return false
        case .hit(let session):
            context.trace?.userID = session.userID
            context.session = session
            return true
        }
    }

    /// What `authenticateFromCache` found in the request's `Authorization` header.
    private enum CachedLookup {
        /// No header, or not `Bearer <token>`.
        case noToken
        /// A token whose session `authenticate` must find (or a per-token limit to claim).
        case miss
        /// The token's live session, from the session cache.
        case hit(Session)
    }

    /// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive; spaces around and
    /// between the two words allowed, anything more is no token). Scans bytes: one `String`, the token.
    static func bearer(_ header: String?) -> String? {
        guard let header, let range = bearerRange(header) else { return nil }
        return String(header[range])
    }

    /// Where the token of an `Authorization: Bearer <token>` header is (see `bearer`), found without a copy of a
    /// native string (a string without contiguous UTF-8 storage is scanned in a copy of its bytes).
    static func bearerRange(_ header: String) -> Range<String.Index>? {
        let found: Range<Int>? = header.utf8.withContiguousStorageIfAvailable { bearerOffsets($0) }
            ?? Array(header.utf8).withUnsafeBufferPointer { bearerOffsets($0) }
        guard let offsets = found else { return nil }
        let utf8 = header.utf8
        let start = utf8.index(utf8.startIndex, offsetBy: offsets.lowerBound)
        return start..<utf8.index(start, offsetBy: offsets.count)
    }

    /// `bearerRange` over bytes: the token's byte offsets.
    static func bearerOffsets(_ bytes: UnsafeBufferPointer<UInt8>) -> Range<Int>? {
        let space = UInt8(ascii: " ")
        var i = 0
        let end = bytes.count
        while i != end && bytes[i] == space { i += 1 }
        for expected in "bearer".utf8 {
            guard i != end, bytes[i] | 0x20 == expected else { return nil }
            i += 1
        }
        guard i != end, bytes[i] == space else { return nil }
        while i != end && bytes[i] == space { i += 1 }
        let start = i
        i = firstSpace(bytes, from: i)
        let tokenEnd = i
        while i != end && bytes[i] == space { i += 1 }
        guard start != tokenEnd, i == end else { return nil }
        return start..<tokenEnd
    }

    /// The index of the first space in `bytes` at or after `from` (`bytes.count` when none): eight bytes at a time
    /// (a token is some 50 bytes without one).
    static func firstSpace(_ bytes: UnsafeBufferPointer<UInt8>, from: Int) -> Int {
        var i = from
        if let base = bytes.baseAddress {
            while i &+ 8 <= bytes.count {
                let spaces = ByteWord.equal(ByteWord.load(base + i), UInt8(ascii: " "))
                if spaces != 0 { return i &+ ByteWord.firstFlagged(spaces) }
                i &+= 8
            }
        }
        while i < bytes.count && bytes[i] != UInt8(ascii: " ") { i &+= 1 }
        return i
    }
}

/// After an optional authentication, demands an identity unless the rule is public.
struct AuthenticationRequirement: Sendable {
    let rule: PermissionRule

    /// Throws 401 when the rule is not public and no session is attached.
    func check(_ context: RequestContext) throws(GatewayError) {
        if rule != .public && context.session == nil { throw .unauthorized("missing bearer token") }
    }
}
