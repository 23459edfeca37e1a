import FoundationEssentials

/// The tokens Directus hands out on login and refresh.
public struct DirectusTokens: Sendable, Equatable {
    /// The access JWT.
    public var accessToken: String
    /// The refresh token (rotates on every refresh).
    public var refreshToken: String
    /// Access-token lifetime in milliseconds.
    public var expiresMs: Int64
}

/// What every upstream call carries from the client request.
public struct CallContext: Sendable {
    /// Sent as `X-Request-Id`.
    public var requestID: String
    /// Sent as `X-Forwarded-For` (set, not appended).
    public var clientIP: String
    /// Sent as `traceparent` (the gateway's span as the parent) and `tracestate` (nil: neither is sent).
    public var trace: TraceContext?

    /// Builds a context.
    public init(requestID: String, clientIP: String, trace: TraceContext? = nil) {
        self.requestID = requestID
        self.clientIP = clientIP
        self.trace = trace
    }
}

/// Directus's REST API as typed calls: auth, users, items, ping.
public struct DirectusClient: Sendable {
    private let transport: any UpstreamTransport
    /// `transport` when it is the production one, called directly: after a call through the protocol, the
    /// caller hops back to its executor (one `swift_task_switch`, which takes the task's status lock).
    private let guarded: GuardedTransport?
    /// Upstream timeout in seconds.
    public let timeout: Double

    /// Creates a client over `transport`.
    public init(transport: any UpstreamTransport, timeout: Double) {
        self.transport = transport
        guarded = transport as? GuardedTransport
        self.timeout = timeout
    }

    // MARK: Auth (never with an Authorization header: Directus checks it even on /auth/*)

    /// `POST /auth/login`.
    public func login(email: String, password: String, context: CallContext) async throws(DirectusError) -> DirectusTokens {
        let body = JSONValue.object([("email", .string(email)), ("password", .string(password)), ("mode", .string("json"))])
        return try tokens(from: try await call(.post, "/auth/login", body: body, token: nil, context: context))
    }

    /// `POST /auth/refresh` (rotates the refresh token).
    public func refresh(refreshToken: String, context: CallContext) async throws(DirectusError) -> DirectusTokens {
        let body = JSONValue.object([("refresh_token", .string(refreshToken)), ("mode", .string("json"))])
        return try tokens(from: try await call(.post, "/auth/refresh", body: body, token: nil, context: context))
    }

    /// `POST /auth/logout` with the refresh token in the body only.
    public func logout(refreshToken: String, context: CallContext) async throws(DirectusError) {
        let body = JSONValue.object([("refresh_token", .string(refreshToken))])
        _ = try await call(.post, "/auth/logout", body: body, token: nil, context: context)
    }

    // MARK: Users

    /// Registers a user: `POST /users` (public create) or `POST /users/register`.
    public func register(email: String, password: String, viaRegisterEndpoint: Bool, context: CallContext) async throws(DirectusError) {
        let body = JSONValue.object([("email", .string(email)), ("password", .string(password))])
        _ = try await call(.post, viaRegisterEndpoint ? "/users/register" : "/users", body: body, token: nil, context: context)
    }

    /// `GET /users/me` → the `data` object.
    public func me(token: String, context: CallContext) async throws(DirectusError) -> JSONValue {
        let response = try await call(.get, "/users/me?fields=id,email,role", body: nil, token: token, context: context)
        guard let data = (try? JSONValue.parse(response.body))?["data"], data.objectValue != nil else {
            throw .badAnswer("users/me without data object")
        }
        return data
    }

    // MARK: Items

    /// `GET /items/<c>?…` → the raw answer body.
    public func listItems(path: String, query: [(String, String)], token: String?, context: CallContext) async throws(DirectusError) -> Data {
        try await listItems(target: QueryString.target(path: path, query: query), token: token, context: context)
    }

    /// `GET <target>` for a list whose target (`/items/<c>?…`, as `QueryString.target` builds it) is already
    /// built → the raw answer body.
    public func listItems(target: String, token: String?, context: CallContext) async throws(DirectusError) -> Data {
        try await call(.get, target, body: nil, token: token, context: context).body
    }

    /// `GET /items/<c>/<id>?fields=…` → the raw answer body.
    public func getItem(path: String, fields: String, token: String?, context: CallContext) async throws(DirectusError) -> Data {
        try await call(.get, path + "?fields=" + QueryString.encode(fields), body: nil, token: token, context: context).body
    }

    /// `POST /items/<c>` → the raw answer body, or nil when Directus answered 204 (no read-back).
    public func createItem(path: String, payload: JSONValue, fields: String, token: String?, context: CallContext) async throws(DirectusError) -> Data? {
        let response = try await call(.post, path + "?fields=" + QueryString.encode(fields), body: payload, token: token, context: context)
        return response.status == 204 || response.body.isEmpty ? nil : response.body
    }

    /// `PATCH /items/<c>/<id>` → the raw answer body, or nil when Directus answered 204.
    public func updateItem(path: String, payload: JSONValue, fields: String, token: String?, context: CallContext) async throws(DirectusError) -> Data? {
        let response = try await call(.patch, path + "?fields=" + QueryString.encode(fields), body: payload, token: token, context: context)
        return response.status == 204 || response.body.isEmpty ? nil : response.body
    }

    /// `DELETE /items/<c>/<id>`.
    public func deleteItem(path: String, token: String?, context: CallContext) async throws(DirectusError) {
        _ = try await call(.delete, path, body: nil, token: token, context: context)
    }

    // MARK: Server

    /// `GET /server/ping`: true when Directus answers 200.
    public func ping(context: CallContext) async -> Bool {
        do {
            let response = try await transport.send(UpstreamRequest(method: .get, target: "/server/ping",
                                                                    fields: CallFields(requestID: context.requestID, forwardedFor: context.clientIP,
                                                                                       bearer: nil, jsonBody: false, trace: context.trace)), timeout: timeout)
            return response.status == 200
        } catch {
            return false
        }
    }

    // MARK: Plumbing

    /// Sends one call; 2xx answers come back, everything else is thrown as a typed error.
    func call(_ method: HTTPMethod, _ target: String, body: JSONValue?, token: String?, context: CallContext) async throws(DirectusError) -> UpstreamResponse {
        // The head fields go as values: the pooled connection writes them without a header array or an
        // `Authorization` value built per call.
        let fields = CallFields(requestID: context.requestID, forwardedFor: context.clientIP, bearer: token, jsonBody: body != nil,
                                trace: context.trace)
        let request = UpstreamRequest(method: method, target: target, fields: fields, body: body?.serialized() ?? Data())
        let response: UpstreamResponse
        do {
            if let guarded {
                response = try await guarded.send(request, timeout: timeout)
            } else {
                response = try await transport.send(request, timeout: timeout)
            }
        } catch {
            throw .transport(error)
        }
        guard (200..<300).contains(response.status) else { throw DirectusError.from(response) }
        return response
    }

    private func tokens(from response: UpstreamResponse) throws(DirectusError) -> DirectusTokens {
        guard let data = (try? JSONValue.parse(response.body))?["data"],
              let access = data["access_token"]?.stringValue, let refresh = data["refresh_token"]?.stringValue else {
            throw .badAnswer("auth answer without tokens")
        }
        return DirectusTokens(accessToken: access, refreshToken: refresh, expiresMs: data["expires"]?.intValue ?? 900_000)
    }
}
