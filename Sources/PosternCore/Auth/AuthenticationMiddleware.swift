import Foundation

/// Reads the bearer token and attaches its session; `required` routes answer 401 without one.
public struct AuthenticationMiddleware: Middleware {
    let sessions: SessionManager
    let required: Bool
    let rateLimits: RateLimits

    /// Creates the stage.
    public init(sessions: SessionManager, required: Bool, rateLimits: RateLimits) {
        self.sessions = sessions
        self.required = required
        self.rateLimits = rateLimits
    }

    /// Authenticates, then calls `next`.
    public func handle(_ request: HTTPRequest, context: RequestContext, next: any Responder) async throws(GatewayError) -> HTTPResponse {
        var context = context
        if let token = AuthenticationMiddleware.bearer(request.headers["Authorization"]) {
            let session = try await sessions.authenticate(token: token)
            try await rateLimits.claimRequest(sessionID: session.id)
            context.session = session
            RequestTrace.current?.userID = session.userID
        } else if required {
            throw .unauthorized("missing bearer token")
        }
        return try await next.respond(to: request, context: context)
    }

    /// The token of an `Authorization: Bearer <token>` header (scheme case-insensitive).
    static func bearer(_ header: String?) -> String? {
        guard let header else { return nil }
        let parts = header.split(separator: " ", omittingEmptySubsequences: true)
        guard parts.count == 2, parts[0].lowercased() == "bearer" else { return nil }
        return String(parts[1])
    }
}

/// After an optional authentication, demands an identity unless the rule is public.
struct AuthenticationRequirement: Middleware {
    let rule: PermissionRule

    func handle(_ request: HTTPRequest, context: RequestContext, next: any Responder) async throws(GatewayError) -> HTTPResponse {
        if rule != .public && context.session == nil { throw .unauthorized("missing bearer token") }
        return try await next.respond(to: request, context: context)
    }
}
