import FoundationEssentials
import PosternIO
import PosternHTTP

/// `/api/v1/user…`: login, refresh, register, logout, me (docs/api.md, Users).
struct UserHandlers: Sendable {
    /// The longest e-mail accepted, in UTF-8 bytes (RFC 5321's path limit, less its angle brackets).
    static let maxEmailBytes = 254
    /// The longest password accepted, in UTF-8 bytes.
    static let maxPasswordBytes = 1024

    let directus: DirectusClient
    let sessions: SessionManager
    let rateLimits: RateLimits
    /// Register through `/users/register` instead of a public create on `/users`.
    let registerEndpoint: Bool

    /// `POST /api/v1/user/login` → 200 with Postern's own token.
    func login(_ request: HTTPRequest, _ context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let (email, password) = try UserHandlers.credentials(request.body, emailKeys: ["email", "username"])
        // The attempt takes its tokens before the upstream call, so parallel guesses are counted; a
        // success (or a failure that is not a wrong guess) gives them back.
        let claim = try await rateLimits.claimLogin(ip: context.clientIP, email: email)
        do {
            let response = try await signIn(email: email, password: password, userAgent: request.headers["User-Agent"],
                                            context: context)
            await rateLimits.release(claim)
            return response
        } catch {
            if error.code != .invalidCredentials { await rateLimits.release(claim) }
            throw error
        }
    }

    /// `POST /api/v1/user/refresh` → 200 with a new token pair; the old pair is dead.
    func refresh(_ request: HTTPRequest, _ context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let body = try UserHandlers.object(request.body)
        let token = try UserHandlers.string(body, ["refreshToken", "refresh_token"], name: "refreshToken")
        let issued = try await sessions.rotate(refreshToken: token, context: context.call)
        return tokenResponse(issued)
    }

    /// `POST /api/v1/user` → registers, then signs in (200, same body as login).
    func register(_ request: HTTPRequest, _ context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let (email, password) = try UserHandlers.credentials(request.body, emailKeys: ["email"])
        guard registerEndpoint else {
            try await rateLimits.claimRegistration(ip: context.clientIP)
            try await createUser(email: email, password: password, context: context)
            do {
                return try await signIn(email: email, password: password, userAgent: request.headers["User-Agent"],
                                        context: context)
            } catch where error.code == .invalidCredentials {
                throw .conflict("email already registered")
            }
        }
        // `/users/register` answers 204 for a taken email, so the sign-in that follows is a password
        // guess like any login: it takes the same failed-login claim first (docs/api.md, Limits and defaults).
        let claim = try await rateLimits.claimLogin(ip: context.clientIP, email: email)
        do {
            try await rateLimits.claimRegistration(ip: context.clientIP)
            try await createUser(email: email, password: password, context: context)
            let response = try await signIn(email: email, password: password, userAgent: request.headers["User-Agent"],
                                            context: context)
            await rateLimits.release(claim)
            return response
        } catch where error.code == .invalidCredentials {
            // Only the failed sign-in tells that the email was taken; the claim stays spent.
            throw .conflict("email already registered")
        } catch {
            await rateLimits.release(claim)
            throw error
        }
    }

    /// Creates the Directus user (public create on `/users`, or `/users/register`).
    private func createUser(email: String, password: String, context: RequestContext) async throws(GatewayError) {
        do {
            try await directus.register(email: email, password: password, viaRegisterEndpoint: registerEndpoint, context: context.call)
        } catch {
            throw error.forRegistration()
        }
    }

    /// `POST /api/v1/user/logout` → 204; the token is dead at once and Directus's refresh token logged out.
    func logout(_ request: HTTPRequest, _ context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        guard let session = context.session else { throw .unauthorized() }
        try await sessions.revoke(session, context: context.call)
        return HTTPResponse(status: 204)
    }

    /// `GET /api/v1/user/me` → 200 `{"user":{"id","email"}}`.
    func me(_ request: HTTPRequest, _ context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        guard let session = context.session else { throw .unauthorized() }
        return .json(200, .object([("user", .object([("id", .string(session.userID)), ("email", .string(session.email))]))]))
    }

    /// Signs in at Directus and opens a session that keeps the client's IP and `userAgent`.
    private func signIn(email: String, password: String, userAgent: String?,
                        context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let tokens: DirectusTokens
        do {
            tokens = try await directus.login(email: email, password: password, context: context.call)
        } catch {
            throw error.forLogin()
        }
        return tokenResponse(try await sessions.open(tokens: tokens, email: email, userAgent: userAgent,
                                                     context: context.call))
    }

    private func tokenResponse(_ issued: IssuedTokens) -> HTTPResponse {
        let expires = UserHandlers.rfc3339(sessions.expiry(of: issued.session))
        let user = JSONValue.object([("id", .string(issued.session.userID)), ("email", .string(issued.session.email)),
                                     ("token", .string(issued.accessToken)), ("expires_at", .string(expires))])
        let data = JSONValue.object([("accessToken", .string(issued.accessToken)), ("refreshToken", .string(issued.refreshToken))])
        return .json(200, .object([("user", user), ("data", data)]))
    }

    // MARK: Body helpers

    /// The e-mail (the first present key of `emailKeys`) and password of a login or registration body, each
    /// within its length limit: an attempt is refused here, before it counts against a rate limit (whose
    /// key the e-mail is) or reaches Directus.
    static func credentials(_ body: Data, emailKeys: [String]) throws(GatewayError) -> (email: String, password: String) {
        let json = try object(body)
        let email = try string(json, emailKeys, name: "email", maxBytes: maxEmailBytes)
        let password = try string(json, ["password"], name: "password", maxBytes: maxPasswordBytes)
        return (email, password)
    }

    static func object(_ body: Data) throws(GatewayError) -> JSONValue {
        guard let json = try? JSONValue.parse(body), json.objectValue != nil else {
            throw .invalidRequest("request body must be a JSON object")
        }
        return json
    }

    /// The first present key of `keys`, which must be a non-empty string of at most `maxBytes` UTF-8 bytes.
    static func string(_ body: JSONValue, _ keys: [String], name: String, maxBytes: Int = .max) throws(GatewayError) -> String {
        for key in keys {
            guard let value = body[key] else { continue }
            guard let s = value.stringValue, !s.isEmpty else { throw .invalidRequest("field \"\(key)\" must be a non-empty string") }
            guard s.utf8.count <= maxBytes else { throw .invalidRequest("field \"\(key)\" must be at most \(maxBytes) bytes") }
            return s
        }
        throw .invalidRequest("field \"\(name)\" is required")
    }

    static func rfc3339(_ date: Date) -> String {
        FixedDateFormat.rfc3339(date)
    }
}
