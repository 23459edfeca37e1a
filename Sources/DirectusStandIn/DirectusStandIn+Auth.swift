import FoundationEssentials
import PosternHTTP
import PosternIO

extension DirectusStandIn {
    // MARK: - The authenticate middleware

    /// Finds the caller from `?access_token=`, `Authorization: Bearer` or the session cookie (`extract-token.ts`).
    func authenticate(_ context: Context) throws -> Caller {
        let fromQuery = context.query("access_token").flatMap { $0.isEmpty ? nil : $0 }
        var fromHeader: String?
        if let header = context.request.headers["Authorization"] {
            // Exactly two space-separated parts, the first `bearer` in any case; anything else is ignored.
            let bytes = Array(header.utf8)
            if let space = bytes.firstIndex(of: UInt8(ascii: " ")), space == 6,
               String(decoding: bytes[..<space], as: UTF8.self).lowercased() == "bearer",
               space + 1 < bytes.count, !bytes[(space + 1)...].contains(UInt8(ascii: " ")) {
                fromHeader = String(decoding: bytes[(space + 1)...], as: UTF8.self)
            }
        }
        if fromQuery != nil, fromHeader != nil {
            throw StandInError.invalidPayload("The request uses more than one method for including an access token")
        }
        guard let token = fromQuery ?? fromHeader ?? context.cookie("directus_session_token") else { return .anonymous }

        // Verified tokens are cached (the secret never changes); expiry is still checked on every use.
        let verdict: StandInJWT.Verdict
        if let cached = lock.withLock({ state.verifiedTokens[token] }), Double(cached.claims.exp) > context.now {
            verdict = .valid(cached.claims, signature: cached.signature)
        } else {
            verdict = jwt.verify(token, now: context.now)
            if case .valid(let claims, let signature) = verdict {
                lock.withLock {
                    if state.verifiedTokens.count >= 10_000 { state.verifiedTokens.removeAll(keepingCapacity: true) }
                    state.verifiedTokens[token] = (claims, signature)
                }
            }
        }
        switch verdict {
        case .expired:
            throw StandInError.tokenExpired
        case .invalid:
            throw StandInError.invalidToken
        case .notDirectus:
            let user = lock.withLock { state.users.values.first { $0.token == token && $0.status == "active" } }
            guard let user else { throw StandInError.invalidCredentials }
            return Caller(userID: user.id, role: user.role, admin: user.admin)
        case .valid(let claims, let signature):
            try lock.withLock {
                if state.expiredAccess[signature] != nil { throw StandInError.tokenExpired }
                if let session = claims.session {
                    guard let row = state.sessions[session], row.expires > context.now else {
                        throw StandInError.invalidCredentials
                    }
                }
            }
            return Caller(userID: claims.id, role: claims.role, admin: claims.adminAccess)
        }
    }

    // MARK: - Tokens

    /// A signed access JWT for `user`, valid `ttl` seconds from `now`, remembered for `expireAllAccessTokens`.
    /// Call with the lock held.
    private func issueAccessToken(_ user: User, now: Double, ttl: Double, session: String? = nil) -> String {
        let iat = max(Int64(now.rounded(.down)), state.issueFloor)
        state.lastIssuedAt = max(state.lastIssuedAt, iat)
        let exp = iat + Int64(ttl.rounded())
        var claims: [(String, JSONValue)] = [
            ("id", .string(user.id)),
            ("role", user.role.map(JSONValue.string) ?? .null),
            ("app_access", .bool(user.admin)),
            ("admin_access", .bool(user.admin)),
        ]
        if let session { claims.append(("session", .string(session))) }
        claims += [("iat", .int(iat)), ("exp", .int(exp)), ("iss", .string("directus"))]
        let token = jwt.sign(.object(claims))
        if let dot = token.lastIndex(of: ".") {
            state.issuedAccess[String(token[token.index(after: dot)...])] = exp
        }
        if state.issuedAccess.count > 50_000 {
            let cutoff = Int64(now)
            state.issuedAccess = state.issuedAccess.filter { $0.value > cutoff }
            state.expiredAccess = state.expiredAccess.filter { $0.value > cutoff }
        }
        return token
    }

    /// The response of a successful login or refresh in `mode`, for a session with refresh token `refresh`.
    /// Call with the lock held.
    private func tokenResponse(_ user: User, refresh: String, mode: String, now: Double) -> HTTPResponse {
        var headers = HTTPHeaders()
        switch mode {
        case "session":
            let token = issueAccessToken(user, now: now, ttl: options.sessionCookieTTL, session: refresh)
            headers.add("Set-Cookie", cookie("directus_session_token", token, maxAge: options.sessionCookieTTL, now: now))
            return Self.dataResponse(.object([("expires", .int(Int64(options.sessionCookieTTL * 1000)))]), headers: headers)
        case "cookie":
            let token = issueAccessToken(user, now: now, ttl: options.accessTokenTTL)
            headers.add("Set-Cookie", cookie("directus_refresh_token", refresh, maxAge: options.refreshTokenTTL, now: now))
            return Self.dataResponse(.object([("expires", .int(Int64(options.accessTokenTTL * 1000))),
                                              ("access_token", .string(token))]), headers: headers)
        default:
            let token = issueAccessToken(user, now: now, ttl: options.accessTokenTTL)
            return Self.dataResponse(.object([
                ("expires", .int(Int64(options.accessTokenTTL * 1000))),
                ("refresh_token", .string(refresh)),
                ("access_token", .string(token)),
            ]))
        }
    }

    private func cookie(_ name: String, _ value: String, maxAge: Double, now: Double) -> String {
        let expires = Date(timeIntervalSince1970: now + maxAge)
        return "\(name)=\(value); Max-Age=\(Int(maxAge)); Path=/; Expires=\(FixedDateFormat.imfFixdate(expires)); HttpOnly; SameSite=Lax"
    }

    private static let clearedCookieSuffix = "; Path=/; Expires=Thu, 01 Jan 1970 00:00:00 GMT; HttpOnly; SameSite=Lax"

    // MARK: - Routes

    /// `POST /auth/login`.
    func login(_ context: Context, body: JSONValue?) throws -> HTTPResponse {
        let payload = try Self.object(body)
        let email = try Self.joiString(payload, "email", required: true, email: true)
        let password = try Self.joiString(payload, "password", required: true)
        let mode = try Self.joiString(payload, "mode", required: false) ?? "json"
        guard ["cookie", "json", "session"].contains(mode) else {
            throw StandInError.invalidPayload("\"mode\" must be one of [cookie, json, session]")
        }
        _ = try Self.joiString(payload, "otp", required: false)
        // Both were required above; the optionals are only for the shared validator.
        guard let email, let password else { throw StandInError.invalidCredentials }

        return try lock.withLock {
            guard let user = state.user(email: email), user.status == "active", user.password == password else {
                throw StandInError.invalidCredentials
            }
            let refresh = Self.randomToken(length: 64)
            let ttl = mode == "session" ? options.sessionCookieTTL : options.refreshTokenTTL
            state.sessions[refresh] = Session(userID: user.id, expires: context.now + ttl)
            return tokenResponse(user, refresh: refresh, mode: mode, now: context.now)
        }
    }

    /// The refresh token and mode of a refresh or logout call (`getCurrentMode` and friends).
    private func refreshToken(_ context: Context, body: JSONValue?) throws -> (token: String, mode: String) {
        let payload = try Self.object(body)
        let bodyToken = payload["refresh_token"].flatMap { value -> String? in
            switch value {
            case .null, .bool(false): return nil
            case .string(let s): return s.isEmpty ? nil : s
            default: return value.text
            }
        }
        let mode = payload["mode"]?.stringValue ?? (bodyToken != nil ? "json" : "cookie")
        let token: String?
        switch mode {
        case "json": token = bodyToken
        case "cookie": token = context.cookie("directus_refresh_token")
        case "session":
            if let cookie = context.cookie("directus_session_token"),
               case .valid(let claims, _) = jwt.verify(cookie, now: 0) { token = claims.session } else { token = nil }
        default: token = nil
        }
        guard let token, !token.isEmpty else {
            throw StandInError.invalidPayload("The refresh token is required in either the payload or cookie")
        }
        return (token, mode)
    }

    /// `POST /auth/refresh`: rotates the refresh token.
    func refresh(_ context: Context, body: JSONValue?) throws -> HTTPResponse {
        let (token, mode) = try refreshToken(context, body: body)
        return try lock.withLock {
            guard let session = state.sessions[token] else { throw StandInError.invalidCredentials }
            guard session.expires > context.now else {
                state.sessions[token] = nil
                throw StandInError.invalidCredentials
            }
            guard let user = state.users[session.userID] else { throw StandInError.invalidCredentials }
            if user.status == "suspended" {
                state.sessions[token] = nil
                throw StandInError(status: 401, code: "USER_SUSPENDED", message: "User suspended.")
            }
            guard user.status == "active" else { throw StandInError.invalidCredentials }
            let next = Self.randomToken(length: 64)
            let ttl = mode == "session" ? options.sessionCookieTTL : options.refreshTokenTTL
            state.sessions[token] = nil
            state.sessions[next] = Session(userID: user.id, expires: context.now + ttl)
            state.refreshCount += 1
            return tokenResponse(user, refresh: next, mode: mode, now: context.now)
        }
    }

    /// `POST /auth/logout`: deletes the refresh session; 204 even when it is unknown.
    func logout(_ context: Context, body: JSONValue?) throws -> HTTPResponse {
        let (token, _) = try refreshToken(context, body: body)
        _ = lock.withLock { state.sessions.removeValue(forKey: token) }
        var headers = HTTPHeaders()
        if context.cookie("directus_refresh_token") != nil {
            headers.add("Set-Cookie", "directus_refresh_token=" + Self.clearedCookieSuffix)
        }
        if context.cookie("directus_session_token") != nil {
            headers.add("Set-Cookie", "directus_session_token=" + Self.clearedCookieSuffix)
        }
        return Self.noContent(headers: headers)
    }

    // MARK: - Joi-like validation

    /// The members of `body`, which must be an object (a missing body is `{}`).
    static func object(_ body: JSONValue?) throws -> JSONValue {
        guard let body else { return .object([]) }
        guard body.objectValue != nil else { throw StandInError.invalidPayload("\"value\" must be of type object") }
        return body
    }

    /// Validates `payload[key]` like `Joi.string()` (`.email()`, `.required()`), returning it.
    static func joiString(_ payload: JSONValue, _ key: String, required: Bool, email: Bool = false) throws -> String? {
        guard let value = payload[key] else {
            if required { throw StandInError.invalidPayload("\"\(key)\" is required") }
            return nil
        }
        guard let text = value.stringValue else { throw StandInError.invalidPayload("\"\(key)\" must be a string") }
        if text.isEmpty { throw StandInError.invalidPayload("\"\(key)\" is not allowed to be empty") }
        if email, !isValidEmail(text) { throw StandInError.invalidPayload("\"\(key)\" must be a valid email") }
        return text
    }

    /// TLDs that Joi's IANA list does not contain (reserved or private use).
    private static let rejectedTLDs: Set<String> = [
        "test", "local", "localhost", "invalid", "example", "internal", "lan", "home", "corp", "localdomain",
    ]

    /// An approximation of Joi's `string().email()` (with the IANA TLD check).
    static func isValidEmail(_ text: String) -> Bool {
        let parts = text.split(separator: "@", omittingEmptySubsequences: false)
        guard parts.count == 2, !parts[0].isEmpty, parts[0].utf8.count <= 64, !parts[1].isEmpty else { return false }
        let localAllowed = Set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789!#$%&'*+-/=?^_`{|}~.")
        guard parts[0].allSatisfy({ localAllowed.contains($0) }),
              !parts[0].hasPrefix("."), !parts[0].hasSuffix("."), !parts[0].contains("..") else { return false }
        let labels = parts[1].split(separator: ".", omittingEmptySubsequences: false)
        guard labels.count >= 2 else { return false }
        for label in labels {
            guard !label.isEmpty, label.count <= 63, !label.hasPrefix("-"), !label.hasSuffix("-"),
                  label.allSatisfy({ $0.isLetter || $0.isNumber || $0 == "-" }) else { return false }
        }
        let tld = labels[labels.count - 1].lowercased()
        return tld.count >= 2 && tld.allSatisfy(\.isLetter) && !rejectedTLDs.contains(tld)
    }
}
