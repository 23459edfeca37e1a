import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

/// A transport that always fails to connect, counting its attempts.
private final class RefusingTransport: UpstreamTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var count = 0
    var attempts: Int { lock.withLock { count } }

    func send(_ request: UpstreamRequest, timeout: Double) async throws(UpstreamFailure) -> UpstreamResponse {
        lock.withLock { count += 1 }
        throw .unreachable("connection refused")
    }
}

/// Collects the bootstrap's progress lines (thread-safe).
final class BootstrapLines: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    var all: [String] { lock.withLock { items } }
    func append(_ line: String) { lock.withLock { items.append(line) } }
}

/// `postern bootstrap` against the Directus stand-in started as a fresh install (`seedSchema: false`).
@Suite struct BootstrapTests {
    static let admin = BootstrapCredentials(email: "admin@example.com", password: "admin-password")

    static func fresh(version: String = "11.14.1", token: String? = nil) -> DirectusStandIn {
        var options = DirectusStandIn.Options()
        options.seedSchema = false
        options.version = version
        options.adminStaticToken = token
        return DirectusStandIn(options: options)
    }

    static func bootstrap(_ standIn: DirectusStandIn, registration: String = "users",
                          credentials: BootstrapCredentials = admin, lines: BootstrapLines = BootstrapLines()) -> DirectusBootstrap {
        var config = PosternConfig.testing
        config.directus.url = "http://directus.test:8055"
        config.directus.registration = registration
        let client = DirectusClient(transport: InProcessTransport { standIn.handle($0) }, timeout: 3)
        var bootstrap = DirectusBootstrap(client: client, config: config, credentials: credentials) { lines.append($0) }
        bootstrap.readinessTimeout = 0.3
        bootstrap.retryInterval = 0.05
        return bootstrap
    }

    /// `METHOD /path` of every request the stand-in received.
    static func requests(_ standIn: DirectusStandIn) -> [String] {
        standIn.received.map { "\($0.method) \($0.path)" }
    }

    /// Writes other than the admin login (which is a POST but changes nothing).
    static func writes(_ standIn: DirectusStandIn) -> [HTTPRequest] {
        standIn.received.filter { $0.method != .get && $0.path != "/auth/login" }
    }

    static func body(_ request: HTTPRequest?) -> JSONValue? {
        request.flatMap { try? JSONValue.parse($0.body) }
    }

    // MARK: - First run and rerun

    @Test func freshRunSendsTheRecipeInOrder() async throws {
        let standIn = Self.fresh()
        let lines = BootstrapLines()
        let report = try await Self.bootstrap(standIn, lines: lines).run()
        #expect(Self.requests(standIn) == [
            "GET /server/health", "POST /auth/login", "GET /server/info", "GET /policies",
            "GET /collections/posts", "POST /collections",
            "GET /relations/posts/user_created", "POST /relations",
            "GET /relations/posts/user_updated", "POST /relations",
            "GET /collections/comments", "POST /collections", "GET /fields/posts/comments", "POST /fields/posts",
            "GET /relations/comments/post", "POST /relations", "GET /relations/comments/user_created", "POST /relations",
            "GET /roles", "POST /roles", "GET /policies", "POST /policies", "GET /access", "POST /access",
            "GET /permissions", "POST /permissions",
            "GET /access", "GET /permissions", "POST /permissions",
        ])
        #expect(report.version == "11.14.1")
        #expect(report.publicPolicyID == "abf8a154-5b1c-4a46-ac9c-7300570f4f17")
        #expect(report.changed)
        #expect(report.steps.allSatisfy { $0.outcome == .created })

        // No Authorization on /auth/*; the admin token everywhere else.
        let received = standIn.received
        #expect(received[1].headers["Authorization"] == nil)
        #expect(received.dropFirst(2).allSatisfy { $0.headers["Authorization"]?.hasPrefix("Bearer ") == true })

        // The collection with its seven fields and a real table.
        let collection = try #require(Self.body(received[5]))
        #expect(collection["collection"] == .string("posts"))
        #expect(collection["schema"] == .object([]))
        #expect(collection["fields"]?.arrayValue?.compactMap { $0["field"]?.stringValue }
            == ["id", "title", "content", "user_created", "date_created", "user_updated", "date_updated"])
        #expect(Self.body(received[7])?["related_collection"] == .string("directus_users"))
        #expect(Self.body(received[7])?["schema"]?["on_delete"] == .string("SET NULL"))

        // The App User rules: update and delete only the caller's own posts.
        let rows = try #require(Self.body(received[25])?.arrayValue)
        #expect(rows.count == 10)
        #expect(rows.allSatisfy { $0["policy"] == .string(report.policyID) })
        let own = JSONValue.object([("user_created", .object([("_eq", .string("$CURRENT_USER"))]))])
        for row in rows where row["collection"] == .string("posts") {
            let action = row["action"]?.stringValue ?? ""
            #expect(row["permissions"] == (["update", "delete"].contains(action) ? own : .null), "\(action)")
        }
        #expect(rows.map { "\($0["collection"]?.stringValue ?? "") \($0["action"]?.stringValue ?? "")" }
            == ["posts create", "posts read", "posts update", "posts delete", "directus_users read", "directus_users read",
                "comments create", "comments read", "comments update", "comments delete"])

        // Public registration: email and password only, the app role as a preset.
        let publicRows = try #require(Self.body(received[28])?.arrayValue)
        #expect(publicRows == [.object([
            ("policy", .string(report.publicPolicyID)), ("collection", .string("directus_users")),
            ("action", .string("create")), ("fields", .array([.string("email"), .string("password")])),
            ("permissions", .null), ("validation", .null), ("presets", .object([("role", .string(report.roleID))])),
        ])])
        #expect(lines.all.last == report.summary)
        #expect(!lines.all.joined().contains("admin-password"))
    }

    @Test func rerunChangesNothing() async throws {
        let standIn = Self.fresh()
        let first = try await Self.bootstrap(standIn).run()
        standIn.clearReceived()
        let lines = BootstrapLines()
        let second = try await Self.bootstrap(standIn, lines: lines).run()
        #expect(Self.writes(standIn).isEmpty, "\(Self.writes(standIn).map(\.path))")
        #expect(!second.changed)
        #expect(second.roleID == first.roleID && second.policyID == first.policyID)
        #expect(Self.requests(standIn) == [
            "GET /server/health", "POST /auth/login", "GET /server/info", "GET /policies",
            "GET /collections/posts", "GET /fields/posts",
            "GET /relations/posts/user_created", "GET /relations/posts/user_updated",
            "GET /collections/comments", "GET /fields/comments", "GET /fields/posts/comments",
            "GET /relations/comments/post", "GET /relations/comments/user_created",
            "GET /roles", "GET /policies", "GET /access", "GET /permissions", "GET /access", "GET /permissions",
        ])
        #expect(lines.all.last?.contains("nothing changed") == true)
    }

    @Test func rerunWithTheStaticTokenSendsOnlyGets() async throws {
        let standIn = Self.fresh(token: "static-admin-token")
        let credentials = BootstrapCredentials(token: "static-admin-token")
        _ = try await Self.bootstrap(standIn, credentials: credentials).run()
        standIn.clearReceived()
        let report = try await Self.bootstrap(standIn, credentials: credentials).run()
        #expect(!report.changed)
        #expect(standIn.received.allSatisfy { $0.method == .get })
        #expect(!Self.requests(standIn).contains("POST /auth/login"))
    }

    @Test func driftIsRepairedWithOnePatch() async throws {
        let standIn = Self.fresh()
        let report = try await Self.bootstrap(standIn).run()
        // An operator widened the update rule to every post.
        let token = try #require(await Self.adminToken(standIn))
        let list = standIn.handle(HTTPRequest(method: .get,
                                              target: "/permissions?filter%5Baction%5D%5B_eq%5D=update&limit=-1",
                                              headers: ["Authorization": "Bearer \(token)"]))
        let row = try #require((try? JSONValue.parse(list.body))?["data"]?.arrayValue?.first)
        let id = try #require(row["id"]?.intValue)
        _ = standIn.handle(HTTPRequest(method: .patch, target: "/permissions/\(id)",
                                       headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
                                       body: Data(#"{"permissions":null}"#.utf8)))
        standIn.clearReceived()
        let second = try await Self.bootstrap(standIn).run()
        #expect(Self.writes(standIn).map { "\($0.method) \($0.path)" } == ["PATCH /permissions/\(id)"])
        #expect(Self.body(Self.writes(standIn).first)?["permissions"]
            == .object([("user_created", .object([("_eq", .string("$CURRENT_USER"))]))]))
        #expect(second.steps.filter { $0.outcome == .updated }.map(\.name) == ["permission posts update"])
        #expect(second.policyID == report.policyID)
    }

    static func adminToken(_ standIn: DirectusStandIn) async -> String? {
        let client = DirectusClient(transport: InProcessTransport { standIn.handle($0) }, timeout: 3)
        return try? await client.login(email: "admin@example.com", password: "admin-password",
                                       context: CallFields(requestID: "t", clientIP: "127.0.0.1")).accessToken
    }

    @Test func existingCollectionGetsItsMissingFields() async throws {
        let standIn = Self.fresh()
        let token = try #require(await Self.adminToken(standIn))
        let made = standIn.handle(HTTPRequest(method: .post, target: "/collections",
                                              headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
                                              body: Data(#"{"collection":"posts","schema":{},"fields":[{"field":"title","type":"string"}]}"#.utf8)))
        #expect(made.status == 200)
        standIn.clearReceived()
        let report = try await Self.bootstrap(standIn).run()
        let writes = Self.writes(standIn).map { "\($0.method) \($0.path)" }
        #expect(Array(writes.prefix(5)) == Array(repeating: "POST /fields/posts", count: 5))
        #expect(Self.writes(standIn).prefix(5).compactMap { Self.body($0)?["field"]?.stringValue }
            == ["content", "user_created", "date_created", "user_updated", "date_updated"])
        #expect(report.steps.first == BootstrapReport.Step(name: "collection posts", outcome: .unchanged))
    }

    @Test func standInAdminRoutesNeedAnAdminAndVersion11() async throws {
        let standIn = DirectusStandIn()
        let user = try #require(try? await DirectusClient(transport: InProcessTransport { standIn.handle($0) }, timeout: 3)
            .login(email: "x@y.com", password: "123456", context: CallFields(requestID: "t", clientIP: "127.0.0.1")).accessToken)
        for path in ["/collections/posts", "/roles", "/policies", "/permissions", "/settings"] {
            let answer = standIn.handle(HTTPRequest(method: .get, target: path, headers: ["Authorization": "Bearer \(user)"]))
            #expect(answer.status == 403, "\(path)")
        }
        let old = Self.fresh(version: "10.13.4")
        let token = try #require(await Self.adminToken(old))
        let probe = old.handle(HTTPRequest(method: .get, target: "/policies?limit=1", headers: ["Authorization": "Bearer \(token)"]))
        #expect(probe.status == 404)
        #expect((try? JSONValue.parse(probe.body))?["errors"]?.arrayValue?.first?["extensions"]?["code"] == .string("ROUTE_NOT_FOUND"))
    }

    // MARK: - The tutorial works afterwards

    @Test func afterBootstrapARegisteredUserPostsAndCannotEditAnothers() async throws {
        var options = DirectusStandIn.Options()
        options.seedSchema = false
        let gw = InProcessGateway(standInOptions: options)
        // A fresh Directus: no registration, no posts collection.
        #expect(await gw.send(.post, "/api/v1/user", #"{"email":"u1@example.com","password":"pw-one-1"}"#).status == 403)

        _ = try await Self.bootstrap(gw.standIn).run()
        #expect(await gw.send(.post, "/api/v1/user", #"{"email":"u1@example.com","password":"pw-one-1"}"#).status == 200)
        #expect(await gw.send(.post, "/api/v1/user", #"{"email":"u2@example.com","password":"pw-two-2"}"#).status == 200)
        let u1 = try await gw.login("u1@example.com", "pw-one-1")
        let u2 = try await gw.login("u2@example.com", "pw-two-2")

        let created = await gw.send(.post, "/api/v1/posts", #"{"title":"hi","content":"first"}"#, token: u1)
        #expect(created.status == 201)
        let id = try #require(created.json?["posts"]?.arrayValue?.first?["id"]?.stringValue)
        #expect(await gw.send(.get, "/api/v1/posts", token: u2).json?["total"]?.intValue == 1)
        #expect(await gw.send(.patch, "/api/v1/posts/\(id)", #"{"title":"mine now"}"#, token: u2).status == 403)
        #expect(await gw.send(.delete, "/api/v1/posts/\(id)", token: u2).status == 403)
        #expect(await gw.send(.patch, "/api/v1/posts/\(id)", #"{"title":"edited"}"#, token: u1).status == 200)
        #expect(await gw.send(.get, "/api/v1/user/me", token: u1).json?["user"]?["email"] == .string("u1@example.com"))
        #expect(await gw.send(.delete, "/api/v1/posts/\(id)", token: u1).status == 204)
    }

    @Test func registerModeSetsTheSettingsOnce() async throws {
        let gw = InProcessGateway(standInOptions: {
            var options = DirectusStandIn.Options()
            options.seedSchema = false
            return options
        }(), configure: { $0.directus.registration = "register" })
        let report = try await Self.bootstrap(gw.standIn, registration: "register").run()
        let patch = try #require(gw.standIn.received.last)
        #expect("\(patch.method) \(patch.path)" == "PATCH /settings")
        #expect(Self.body(patch) == .object([("public_registration", .bool(true)),
                                             ("public_registration_role", .string(report.roleID)),
                                             ("public_registration_verify_email", .bool(false))]))
        #expect(report.steps.last == BootstrapReport.Step(name: "settings /users/register", outcome: .updated))

        gw.standIn.clearReceived()
        let again = try await Self.bootstrap(gw.standIn, registration: "register").run()
        #expect(Self.writes(gw.standIn).isEmpty)
        #expect(!again.changed)

        #expect(await gw.send(.post, "/api/v1/user", #"{"email":"reg@example.com","password":"pw-reg-1"}"#).status == 200)
        #expect(gw.standIn.received.contains { $0.path == "/users/register" })
        let token = try await gw.login("reg@example.com", "pw-reg-1")
        #expect(await gw.send(.post, "/api/v1/posts", #"{"title":"registered"}"#, token: token).status == 201)
    }

    // MARK: - Refusals and failures

    @Test(arguments: ["10.13.4", "12.0.0", "9.22.4"])
    func unsupportedVersionIsRefusedBeforeAnyWrite(version: String) async throws {
        let standIn = Self.fresh(version: version)
        await #expect {
            try await Self.bootstrap(standIn).run()
        } throws: { error in
            guard case BootstrapError.unsupportedVersion(let reported, _) = error else { return false }
            return reported == version && (error as? BootstrapError)?.description.contains("Directus \(version)") == true
                && (error as? BootstrapError)?.description.contains("11") == true
        }
        #expect(Self.writes(standIn).isEmpty)
    }

    @Test func badAdminPasswordIsAClearError() async throws {
        let standIn = Self.fresh()
        let wrong = BootstrapCredentials(email: "admin@example.com", password: "nope")
        await #expect(throws: BootstrapError.credentialsRejected) { try await Self.bootstrap(standIn, credentials: wrong).run() }
        #expect(BootstrapError.credentialsRejected.description.contains("admin credentials rejected"))
        #expect(Self.writes(standIn).isEmpty)
        let badToken = BootstrapCredentials(token: "not-a-token")
        await #expect(throws: BootstrapError.credentialsRejected) { try await Self.bootstrap(standIn, credentials: badToken).run() }
    }

    @Test func missingCredentialsAreNamed() async throws {
        await #expect(throws: BootstrapError.missingCredentials) {
            try await Self.bootstrap(Self.fresh(), credentials: BootstrapCredentials(email: "admin@example.com")).run()
        }
    }

    @Test func nonAdminAccountIsRefused() async throws {
        let standIn = DirectusStandIn()
        let user = BootstrapCredentials(email: "x@y.com", password: "123456")
        await #expect(throws: BootstrapError.notAdmin(path: "/policies")) {
            try await Self.bootstrap(standIn, credentials: user).run()
        }
        #expect(Self.writes(standIn).isEmpty)
    }

    @Test func unreachableDirectusIsRetriedThenNamesTheURL() async throws {
        let transport = RefusingTransport()
        var config = PosternConfig.testing
        config.directus.url = "http://directus.test:8055"
        let lines = BootstrapLines()
        var bootstrap = DirectusBootstrap(client: DirectusClient(transport: transport, timeout: 1), config: config,
                                          credentials: Self.admin) { lines.append($0) }
        bootstrap.readinessTimeout = 0.2
        bootstrap.retryInterval = 0.05
        do {
            _ = try await bootstrap.run()
            Issue.record("bootstrap succeeded without Directus")
        } catch {
            #expect(error.description.contains("http://directus.test:8055"))
            #expect(error == .unreachable(url: "http://directus.test:8055", reason: "connection refused"))
        }
        #expect(transport.attempts > 1)
        #expect(lines.all.contains { $0.contains("waiting up to") })
    }

    @Test func seededStandInIsAlreadyBootstrapped() async throws {
        let standIn = DirectusStandIn()
        let report = try await Self.bootstrap(standIn).run()
        #expect(!report.changed, "\(report.steps.filter { $0.outcome != .unchanged })")
        #expect(report.roleID == DirectusStandIn.appUserRoleID)
    }
}
