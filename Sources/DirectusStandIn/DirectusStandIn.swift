import FoundationEssentials
import Glibc
import PosternHTTP
import PosternIO

/// An in-memory, transport-free fake of Directus 11 (auth, users, `posts` items, server routes), quirks included.
///
/// Mount it on any HTTP server by calling `handle(_:)`; it behaves like
/// Directus 11 does on the wire, without the login stall.
package final class DirectusStandIn: @unchecked Sendable {
    /// Settings of the stand-in (Directus environment variables and project settings).
    package struct Options: Sendable {
        /// `ACCESS_TOKEN_TTL` in seconds.
        package var accessTokenTTL: TimeInterval = 900
        /// `REFRESH_TOKEN_TTL` in seconds.
        package var refreshTokenTTL: TimeInterval = 7 * 24 * 3600
        /// `SESSION_COOKIE_TTL` in seconds (session mode).
        package var sessionCookieTTL: TimeInterval = 24 * 3600
        /// Whether the Public role may create users (`POST /users` with email and password only).
        package var publicUserCreate = true
        /// `public_registration`: whether `POST /users/register` is open.
        package var publicRegistration = true
        /// The JWT signing `SECRET`.
        package var secret: String = DirectusStandIn.randomToken(length: 32)
        /// Seed the tutorial users and posts.
        package var seed = true
        /// The admin user's email.
        package var adminEmail = "admin@example.com"
        /// The admin user's password.
        package var adminPassword = "admin-password"
        /// A static token for the admin user (`directus_users.token`), if any.
        package var adminStaticToken: String? = nil
        /// Record every request in `received` (turn off for long benchmarks).
        package var recordRequests = true
        /// `MAX_PAYLOAD_SIZE` in bytes.
        package var maxPayloadBytes = 1_048_576
        /// Start with the tutorial schema as `postern bootstrap` leaves it (`posts`, App User role, policy, rules,
        /// Public registration); false starts from a fresh install with only the admin (no seeded users or posts).
        package var seedSchema = true
        /// The version `/server/info` reports; majors below 11 have no `/policies` or `/access`.
        package var version = DirectusStandIn.version
        /// Node's `server.keepAliveTimeout` (Directus sets none, so Node's 5 s): idle keep-alive connections are
        /// closed after this many milliseconds by the server hosting the stand-in (`serverLimits`).
        package var keepAliveTimeoutMs = 5000

        /// Default options.
        package init() {}

        /// Options with the most used settings.
        package init(accessTokenTTL: TimeInterval = 900, refreshTokenTTL: TimeInterval = 7 * 24 * 3600,
                    publicUserCreate: Bool = true, publicRegistration: Bool = true,
                    secret: String? = nil, seed: Bool = true,
                    adminEmail: String = "admin@example.com", adminPassword: String = "admin-password") {
            self.accessTokenTTL = accessTokenTTL
            self.refreshTokenTTL = refreshTokenTTL
            self.publicUserCreate = publicUserCreate
            self.publicRegistration = publicRegistration
            if let secret { self.secret = secret }
            self.seed = seed
            self.adminEmail = adminEmail
            self.adminPassword = adminPassword
        }
    }

    /// The role uuid of "App User" (seeded users and registered users get it).
    package static let appUserRoleID = "6f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d"
    /// The role uuid of "Administrator".
    package static let adminRoleID = "0a9b8c7d-6e5f-4d3c-9b2a-1f0e9d8c7b6a"
    /// The version `/server/info` reports.
    package static let version = "11.14.1"

    /// The options it was built with.
    package let options: Options

    /// Limits for the `HTTPServer` that hosts the stand-in: idle keep-alive connections close like Node's.
    package var serverLimits: ServerLimits {
        var limits = ServerLimits()
        limits.inactivityTimeoutMilliseconds = options.keepAliveTimeoutMs
        return limits
    }
    /// Signs and checks access tokens.
    let jwt: StandInJWT
    /// Guards `state`.
    let lock = PlainLock()
    /// Everything mutable; only touched with `lock` held.
    var state = State()

    /// Builds a stand-in, seeded unless `options.seed` is false (the admin always exists).
    package init(options: Options = Options()) {
        self.options = options
        self.jwt = StandInJWT(secret: options.secret)
        let admin = User(id: Self.uuid(), email: options.adminEmail, password: options.adminPassword,
                         firstName: "Admin", lastName: "User", role: Self.adminRoleID, status: "active",
                         admin: true, token: options.adminStaticToken)
        state.put(admin)
        seedSystem()
        if options.seed && options.seedSchema { seed() }
    }

    private func seed() {
        let first = User(id: Self.uuid(), email: "x@y.com", password: "123456", firstName: "Ada", lastName: "Lovelace",
                         role: Self.appUserRoleID, status: "active", admin: false, token: nil)
        let second = User(id: Self.uuid(), email: "second@example.com", password: "password2", firstName: "Grace",
                          lastName: "Hopper", role: Self.appUserRoleID, status: "active", admin: false, token: nil)
        state.put(first)
        state.put(second)
        let rows: [(String, String?, String, String)] = [
            ("Hello, world", "The first post of the tutorial.", first.id, "2025-05-01T10:20:30.000Z"),
            ("Second thoughts", "More words about Swift.", first.id, "2025-05-02T08:00:00.000Z"),
            ("Untitled draft", nil, first.id, "2025-05-03T12:30:45.500Z"),
            ("A post by someone else", "Written by the second user.", second.id, "2025-05-04T09:15:00.000Z"),
            ("Another one", "Search for Directus here.", second.id, "2025-05-05T18:45:10.250Z"),
        ]
        for (title, content, owner, date) in rows {
            state.insert(Post(id: state.nextPostID, title: title, content: content, userCreated: owner,
                              dateCreated: date, userUpdated: nil, dateUpdated: nil))
        }
        // A few comments (docs/bootstrap.md, 5b): three on post 1, one on post 2, one on post 4; none on 3 and 5.
        let comments: [(Int64, String, String, String)] = [
            (1, "Welcome to the tutorial!", second.id, "2025-05-01T11:00:00.000Z"),
            (1, "Thanks, glad you like it.", first.id, "2025-05-01T12:30:00.000Z"),
            (1, "Looking forward to more.", second.id, "2025-05-02T09:00:00.000Z"),
            (2, "Swift is a pleasure.", second.id, "2025-05-02T10:15:00.000Z"),
            (4, "Nice to see another author.", first.id, "2025-05-04T10:00:00.000Z"),
        ]
        for (post, body, owner, date) in comments {
            state.comments.append(Comment(id: state.nextCommentID, post: post, body: body, userCreated: owner, dateCreated: date))
            state.nextCommentID += 1
        }
    }

    // MARK: - Public test hooks

    /// Every request received, in order.
    package var received: [HTTPRequest] { lock.withLock { state.received } }

    /// Forgets the recorded requests.
    package func clearReceived() { lock.withLock { state.received.removeAll() } }

    /// Makes every access JWT issued so far expired (later ones are not affected).
    package func expireAllAccessTokens() {
        lock.withLock {
            state.expiredAccess.merge(state.issuedAccess) { a, _ in a }
            state.issuedAccess.removeAll()
            // A token issued in the same second would be byte-identical to an expired one: move `iat` on.
            state.issueFloor = state.lastIssuedAt + 1
        }
    }

    /// The clock used for token times and timestamps (settable), `Date()` by default.
    package var now: @Sendable () -> Date {
        get { lock.withLock { state.clock } }
        set { lock.withLock { state.clock = newValue } }
    }

    /// The current rows of `posts`, in id order, with every field.
    package func posts() -> [JSONValue] {
        let rows = lock.withLock { state.posts }
        return rows.map { post in .object(PostField.allCases.map { ($0.rawValue, post.value($0)) }) }
    }

    /// The id of the user with this email (case-insensitive), if any.
    package func userID(email: String) -> String? {
        lock.withLock { state.user(email: email)?.id }
    }

    /// The number of successful `/auth/refresh` calls.
    package var refreshCount: Int { lock.withLock { state.refreshCount } }

    /// The number of live refresh sessions (logged in and not logged out).
    package var sessionCount: Int { lock.withLock { state.sessions.count } }

    /// Suspends or reactivates a user (`status`), for tests of refused logins.
    package func setStatus(email: String, _ status: String) {
        lock.withLock {
            guard var user = state.user(email: email) else { return }
            user.status = status
            state.put(user)
        }
    }

    // MARK: - Handling

    /// Answers one request (thread-safe; called concurrently from several threads).
    package func handle(_ request: HTTPRequest) -> HTTPResponse {
        let clock = lock.withLock {
            if options.recordRequests { state.received.append(request) }
            return state.clock
        }
        let context = Context(request: request, now: clock().timeIntervalSince1970)
        do {
            return try route(context)
        } catch let error as StandInError {
            return error.response
        } catch {
            return StandInError.internalError.response
        }
    }

    /// One request being answered.
    struct Context {
        /// The request.
        let request: HTTPRequest
        /// The time, seconds since 1970.
        let now: Double
        /// The decoded query parameters.
        let queryItems: [(name: String, value: String)]

        /// Builds the context.
        init(request: HTTPRequest, now: Double) {
            self.request = request
            self.now = now
            self.queryItems = request.queryItems
        }

        /// The first query parameter called `name`.
        func query(_ name: String) -> String? {
            queryItems.first { $0.name == name }?.value
        }

        /// The cookie called `name`.
        func cookie(_ name: String) -> String? {
            guard let header = request.headers["Cookie"] else { return nil }
            for part in header.split(separator: ";") {
                let pair = part.split(separator: "=", maxSplits: 1)
                if pair.count == 2, pair[0].trimmedSpaces() == name {
                    return QueryString.decode(String(pair[1]).trimmedSpaces())
                }
            }
            return nil
        }
    }

    private func route(_ context: Context) throws -> HTTPResponse {
        let request = context.request
        var path = request.path
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        let segments = path.split(separator: "/").map(String.init)
        let method = request.method

        // `/server/ping` is mounted before the body parser and the authenticate middleware.
        if method == .get, segments == ["server", "ping"] {
            var headers = Self.commonHeaders
            headers.set("Content-Type", "text/html; charset=utf-8")
            return HTTPResponse(status: 200, headers: headers, body: Data("pong".utf8))
        }
        let body = try parseBody(request)
        let caller = try authenticate(context)
        if let response = try adminRoute(context, segments: segments, body: body, caller: caller) { return response }

        switch (method, segments.count, segments.first) {
        case (.get, 2, "server") where segments[1] == "health":
            var headers = Self.commonHeaders
            headers.set("Content-Type", "application/health+json; charset=utf-8")
            return HTTPResponse(status: 200, headers: headers, body: JSONValue.object([("status", .string("ok"))]).serialized())
        case (.get, 2, "server") where segments[1] == "info":
            return serverInfo(caller)
        case (.post, 2, "auth") where segments[1] == "login":
            return try login(context, body: body)
        case (.post, 2, "auth") where segments[1] == "refresh":
            return try refresh(context, body: body)
        case (.post, 2, "auth") where segments[1] == "logout":
            return try logout(context, body: body)
        case (.post, 1, "users"):
            return try createUsersUnderRules(context, body: body, caller: caller)
        case (.get, 1, "users"):
            return try listUsers(caller)
        case (.get, 2, "users") where segments[1] == "me":
            return try me(caller)
        case (.post, 2, "users") where segments[1] == "register":
            return try registerUnderSettings(body: body)
        case (_, 2, "items") where method != .put:
            return try items(context, collection: segments[1], id: nil, body: body,
                             caller: try itemCaller(caller, collection: segments[1]))
        case (_, 3, "items") where method != .put && method != .post:
            return try items(context, collection: segments[1], id: segments[2], body: body,
                             caller: try itemCaller(caller, collection: segments[1]))
        default:
            throw StandInError.routeNotFound(request.path)
        }
    }

    private func serverInfo(_ caller: Caller) -> HTTPResponse {
        let project: JSONValue = .object([
            ("project_name", .string("Directus stand-in")),
            ("project_descriptor", .null),
            ("project_logo", .null),
            ("project_color", .string("#6644FF")),
            ("default_language", .string("en-US")),
            ("public_foreground", .null),
            ("public_background", .null),
            ("public_note", .null),
            ("custom_css", .null),
            ("public_registration", .bool(options.publicRegistration)),
            ("public_registration_verify_email", .bool(false)),
        ])
        return Self.dataResponse(.object([("project", project), ("version", .string(options.version))]))
    }

    /// What the body parser left in `req.body`: the parsed JSON, or nil when there was none to parse.
    private func parseBody(_ request: HTTPRequest) throws -> JSONValue? {
        guard !request.body.isEmpty else { return nil }
        // express.json only reads `application/json`; other bodies leave `req.body = {}`.
        guard let type = request.headers["Content-Type"],
              type.split(separator: ";").first?.trimmedSpaces().lowercased() == "application/json"
        else { return nil }
        guard request.body.count <= options.maxPayloadBytes else {
            throw StandInError.invalidPayload("request entity too large")
        }
        let value: JSONValue
        do {
            value = try JSONValue.parse(request.body)
        } catch {
            throw StandInError.invalidPayload("Unexpected token in JSON: \(error.description)")
        }
        // express.json is strict: only objects and arrays at the top level.
        guard value.objectValue != nil || value.arrayValue != nil else {
            throw StandInError.invalidPayload("Unexpected token in JSON at position 0")
        }
        return value
    }

    // MARK: - Helpers

    /// Headers every `respond` answer carries.
    static let commonHeaders: HTTPHeaders = [
        "Content-Type": "application/json; charset=utf-8",
        "Cache-Control": "no-cache",
        "Vary": "Origin, Cache-Control",
        "X-Powered-By": "Directus",
    ]

    /// A JSON response with the Directus headers.
    static func jsonResponse(_ status: Int, _ value: JSONValue, headers extra: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var headers = commonHeaders
        for field in extra { headers.add(field.name, field.value) }
        return HTTPResponse(status: status, headers: headers, body: value.serialized())
    }

    /// `200 {"data": value}`.
    static func dataResponse(_ value: JSONValue, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        jsonResponse(200, .object([("data", value)]), headers: headers)
    }

    /// `204` with no body.
    static func noContent(headers extra: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var headers = HTTPHeaders()
        headers.add("Cache-Control", "no-cache")
        headers.add("X-Powered-By", "Directus")
        for field in extra { headers.add(field.name, field.value) }
        return HTTPResponse(status: 204, headers: headers)
    }

    /// A random v4 uuid, lowercase.
    static func uuid() -> String { UUID().uuidString.lowercased() }

    /// A random string of `A-Za-z0-9_-` (what `nanoid` draws from).
    package static func randomToken(length: Int) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-".utf8)
        var rng = SystemRandomNumberGenerator()
        var bytes = [UInt8]()
        bytes.reserveCapacity(length)
        for _ in 0..<length { bytes.append(alphabet[Int(rng.next() & 63)]) }
        return String(decoding: bytes, as: UTF8.self)
    }

    /// `2025-05-01T10:20:30.000Z` for `seconds` since 1970.
    static func isoTimestamp(_ seconds: Double) -> String {
        var whole = time_t(seconds.rounded(.down))
        let millis = Int(((seconds - Double(whole)) * 1000).rounded(.down))
        var parts = tm()
        gmtime_r(&whole, &parts)
        func pad(_ value: Int32, _ width: Int) -> String {
            let text = String(value)
            return String(repeating: "0", count: max(0, width - text.count)) + text
        }
        return "\(pad(parts.tm_year + 1900, 4))-\(pad(parts.tm_mon + 1, 2))-\(pad(parts.tm_mday, 2))T"
            + "\(pad(parts.tm_hour, 2)):\(pad(parts.tm_min, 2)):\(pad(parts.tm_sec, 2)).\(pad(Int32(millis), 3))Z"
    }
}
