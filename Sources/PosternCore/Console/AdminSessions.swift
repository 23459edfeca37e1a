import FoundationEssentials
import PosternIO
import PosternHTTP

/// The operator's session control on the admin listener (docs/api.md, Session control): list a user's
/// sessions, end one, end all of a user's. Every path is under `/admin/`, behind the admin token. Every
/// revocation is logged at notice level with the admin's client IP and what was revoked (a session id prefix
/// or a user id, and how many), never a token or a digest.
struct AdminSessions: Sendable {
    /// Where sessions are listed and ended.
    let sessions: SessionManager
    /// Where the revocation lines go.
    let log: AccessLog

    /// The characters of a session id shown as its prefix (in the listing and in the log).
    static let shownPrefix = 12
    /// The longest `user` (an e-mail or a user id) accepted, in UTF-8 bytes (as at login).
    static let maxUserBytes = UserHandlers.maxEmailBytes

    /// `GET /admin/sessions?user=<email or user id>` → 200 `{"data":[…]}`, newest first; 400 without a user.
    func list(_ request: HTTPRequest, _ context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let user = request.queryItems.first { $0.name == "user" }?.value ?? ""
        guard !user.isEmpty else {
            throw .invalidRequest("query parameter \"user\" (an e-mail or a user id) is required")
        }
        guard user.utf8.count <= AdminSessions.maxUserBytes else {
            throw .invalidRequest("query parameter \"user\" must be at most \(AdminSessions.maxUserBytes) bytes")
        }
        let found = try await sessions.summaries(ofUser: user)
        return .json(200, .object([("data", .array(found.map(AdminSessions.json)))]))
    }

    /// `DELETE /admin/sessions/{id}` (a full id, or a prefix of one session's id) → 200 `{"data":{"revoked":1}}`.
    func revokeOne(_ request: HTTPRequest, _ context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let id = context.itemID ?? ""
        let ended = try await sessions.revoke(sessionIDOrPrefix: id, context: context.call)
        log.event(.notice, "sessions revoked", [
            ("admin_ip", .string(context.clientIP)), ("request_id", .string(context.requestID)),
            ("session", .string(String(ended.id.prefix(AdminSessions.shownPrefix)))), ("user_id", .string(ended.userID)),
            ("revoked", .int(1)),
        ])
        return AdminSessions.revoked(1)
    }

    /// `DELETE /admin/users/{id}/sessions` → 200 `{"data":{"revoked":N}}` (N may be 0).
    func revokeUser(_ request: HTTPRequest, _ context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let user = context.itemID ?? ""
        guard !user.isEmpty, user.utf8.count <= AdminSessions.maxUserBytes else {
            throw .invalidRequest("the user id must be 1 to \(AdminSessions.maxUserBytes) bytes")
        }
        let count = try await sessions.revokeAll(userID: user, context: context.call)
        log.event(.notice, "sessions revoked", [
            ("admin_ip", .string(context.clientIP)), ("request_id", .string(context.requestID)),
            ("user_id", .string(user)), ("revoked", .int(Int64(count))),
        ])
        return AdminSessions.revoked(count)
    }

    /// `{"data":{"revoked":count}}`.
    private static func revoked(_ count: Int) -> HTTPResponse {
        .json(200, .object([("data", .object([("revoked", .int(Int64(count)))]))]))
    }

    /// One session as the listing shows it.
    static func json(_ s: SessionSummary) -> JSONValue {
        .object([
            ("id", .string(s.id)), ("id_prefix", .string(String(s.id.prefix(shownPrefix)))), ("user_id", .string(s.userID)),
            ("email", .string(s.email)), ("created_at", .string(FixedDateFormat.rfc3339(s.createdAt))),
            ("last_seen_at", .string(FixedDateFormat.rfc3339(s.lastUsedAt))), ("client_ip", .string(s.clientIP)),
            ("user_agent", .string(s.userAgent)),
        ])
    }
}
