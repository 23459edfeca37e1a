import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternCoreTesting
import PosternHTTP
import PosternTesting

/// Composite endpoints through real sockets, against the Directus stand-in (docs/api.md, Composite endpoints).
@Suite(.serialized) struct CompositeLiveTests {
    /// A composite of `parts` at `path` (`configure` adjusts it).
    static func composite(_ name: String = "screen", path: String, _ parts: [(key: String, route: String, required: Bool, query: [(String, String)])],
                          configure: (inout CompositeConfig) -> Void = { _ in }) -> CompositeConfig {
        var composite = CompositeConfig(name: name, path: path, parts: parts.map { spec in
            var part = CompositePartConfig(key: spec.key, route: spec.route)
            part.required = spec.required
            part.query = spec.query
            return part
        })
        configure(&composite)
        return composite
    }

    /// The `/items/posts` calls the stand-in received.
    static func itemCalls(_ gw: TestGateway) -> [HTTPRequest] { gw.upstream("/items/") }

    @Test func homeAnswersEveryPartAsItsDirectCallInConfigOrderWithOneUpstreamCallEach() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        let r = try gw.client().json("GET", "/api/v1/home", token: token)
        #expect(r.status == 200, "\(r.text)")
        #expect(r.headers["X-Postern-Complete"] == "true")
        #expect(r.headers["Cache-Control"] == "no-store")
        #expect(r.headers["Content-Type"] == "application/json; charset=utf-8")
        // Config order, and nothing else (no `errors` when every part succeeded).
        #expect(r.text.hasPrefix(#"{"me":{"user":"#), "\(r.text)")
        #expect(r.json?.objectValue?.map(\.0) == ["me", "mine", "latest"])
        // Two parts read Directus, once each; `me` needs no call; the token was not checked upstream again.
        let calls = gw.standIn.received
        #expect(calls.count == 2, "\(calls.map { $0.path + "?" + $0.query })")
        #expect(calls.allSatisfy { $0.path == "/items/posts" })
        // Each part's body is the body of the direct call.
        let me = try gw.client().json("GET", "/api/v1/user/me", token: token)
        let mine = try gw.client().json("GET", "/api/v1/books?mine=true&limit=5", token: token)
        let latest = try gw.client().json("GET", "/api/v1/posts?sort=-date_created&limit=3", token: token)
        #expect(r.json?["me"] == me.json)
        #expect(r.json?["mine"] == mine.json)
        let myID = try #require(me.json?["user"]?["id"]?.stringValue)
        let books = try #require(r.json?["mine"]?["books"]?.arrayValue)
        #expect(!books.isEmpty && books.allSatisfy { $0["user"]?.stringValue == myID })  // `mine`: the caller's only
        #expect(r.json?["latest"] == latest.json)
        #expect(r.json?["latest"]?["posts"]?.arrayValue?.count == 3)
        // One access-log line for the composite, none for its parts.
        try eventually("the composite's access line") { gw.finishedRequests(route: "/api/v1/home").count == 1 }
        #expect(gw.finishedRequests(route: "/api/v1/posts").count == 1)  // the direct call above, not the part
    }

    @Test func noTokenOrABadTokenIs401AndNothingIsSentUpstream() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        _ = try gw.login()
        gw.standIn.clearReceived()
        let none = try gw.client().json("GET", "/api/v1/home")
        #expect(none.status == 401)
        #expect(none.json?["code"] == .string("unauthorized"))
        #expect(none.headers["WWW-Authenticate"] == #"Bearer error="invalid_token""#)
        let bad = try gw.client().json("GET", "/api/v1/home", token: "pst_not-a-token")
        #expect(bad.status == 401)
        #expect(gw.standIn.received.isEmpty, "\(gw.standIn.received.map { $0.path + "?" + $0.query })")
    }

    @Test func thePerTokenRateLimitCountsTheCompositeOnce() throws {
        let gw = try TestGateway { $0.rateLimits.requestsPerTokenPerMinute = 2 }
        defer { gw.stop() }
        let token = try gw.login()
        // Three parts each, yet two composites fit in a limit of two requests; the third request is refused.
        #expect(try gw.client().json("GET", "/api/v1/home", token: token).status == 200)
        #expect(try gw.client().json("GET", "/api/v1/home", token: token).status == 200)
        gw.standIn.clearReceived()
        let refused = try gw.client().json("GET", "/api/v1/home", token: token)
        #expect(refused.status == 429)
        #expect(refused.headers["Retry-After"] != nil)
        #expect(gw.standIn.received.isEmpty)
    }

    @Test(arguments: ["nobody", "role:00000000-0000-4000-8000-000000000000"])
    func aPermissionThatSaysNoIs403AndNothingIsSentUpstream(rule: String) throws {
        let gw = try TestGateway { config in
            config.composites = [Self.composite(path: "/api/v1/screen",
                                                [("books", "GET /api/v1/books", false, [])]) { $0.permission = PermissionRule(rule)! }]
        }
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        let r = try gw.client().json("GET", "/api/v1/screen", token: token)
        #expect(r.status == 403, "\(r.text)")
        #expect(r.json?["code"] == .string("forbidden"))
        #expect(r.json?["books"] == nil)  // the composite's error has no collection key
        #expect(gw.standIn.received.isEmpty)
    }

    @Test func aPublicCompositeRunsItsPartsWithoutIdentityAndEachPartKeepsItsRule() throws {
        let gw = try TestGateway { config in
            config.composites = [Self.composite(path: "/api/v1/open", [("books", "GET /api/v1/books", false, [])]) {
                $0.permission = .public
            }]
        }
        defer { gw.stop() }
        gw.standIn.clearReceived()
        let r = try gw.client().json("GET", "/api/v1/open")
        // `books` lists for signed-in users only: the part is 401, optional, so the composite is 200 with it null.
        #expect(r.status == 200, "\(r.text)")
        #expect(r.headers["X-Postern-Complete"] == "false")
        #expect(r.json?["books"] == .null)
        #expect(r.json?["errors"]?["books"]?["status"] == .int(401))
        #expect(r.json?["errors"]?["books"]?["code"] == .string("unauthorized"))
        #expect(gw.standIn.received.isEmpty)
        // A token that is sent is checked even on a public composite.
        #expect(try gw.client().json("GET", "/api/v1/open", token: "pst_nope").status == 401)
    }

    /// `post_page` of the design, over today's resources: the post, and books searched by the same value.
    static let postPage = composite("post_page", path: "/api/v1/screens/posts/{id}", [
        ("post", "GET /api/v1/posts/{id}", true, []),
        ("same", "GET /api/v1/books/{id}", false, []),
        ("page", "GET /api/v1/books", false, [("limit", "2"), ("offset", "{id}")]),
    ])

    @Test func placeholdersGoIntoThePartsPathsAndQueries() throws {
        let gw = try TestGateway { $0.composites = [Self.postPage] }
        defer { gw.stop() }
        let token = try gw.login()
        let r = try gw.client().json("GET", "/api/v1/screens/posts/2", token: token)
        #expect(r.status == 200, "\(r.text)")
        #expect(r.json?["post"] == (try gw.client().json("GET", "/api/v1/posts/2", token: token)).json)
        #expect(r.json?["same"] == (try gw.client().json("GET", "/api/v1/books/2", token: token)).json)
        #expect(r.json?["page"] == (try gw.client().json("GET", "/api/v1/books?limit=2&offset=2", token: token)).json)
        #expect(r.json?["post"]?["posts"]?.arrayValue?.first?["id"] == .string("2"))
    }

    @Test func eachPartValidatesAPlaceholderValueAsItsRouteDoes() throws {
        let gw = try TestGateway { $0.composites = [Self.postPage] }
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        // Not an integer key: the required read is 404 with no upstream call; the composite answers it.
        let bad = try gw.client().json("GET", "/api/v1/screens/posts/abc", token: token)
        #expect(bad.status == 404, "\(bad.text)")
        #expect(bad.json?["code"] == .string("not_found"))
        #expect(bad.json?["posts"] == nil && bad.json?["request_id"]?.stringValue == bad.headers["X-Request-Id"])
        #expect(Self.itemCalls(gw).isEmpty, "\(Self.itemCalls(gw).map { $0.path + "?" + $0.query })")
        // A post that does not exist: 404 from the read (the others ran, but the required part decides).
        let missing = try gw.client().json("GET", "/api/v1/screens/posts/999", token: token)
        #expect(missing.status == 404)
    }

    @Test func anOptionalPartThatFailsIsNullWithItsErrorAndTheAnswerIsIncomplete() throws {
        let gw = try TestGateway { $0.composites = [Self.postPage] }
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        // offset -1 is a bad list parameter: the optional `page` is 400 (no upstream call for it), the rest succeed.
        let r = try gw.client().json("GET", "/api/v1/screens/posts/-1", token: token)
        #expect(r.status == 404)  // the required read refuses "-1" first
        let composite = Self.composite(path: "/api/v1/screens/shelf/{n}", [
            ("me", "GET /api/v1/user/me", true, []),
            ("page", "GET /api/v1/books", false, [("offset", "{n}")]),
            ("missing", "GET /api/v1/posts/{n}", false, []),
        ])
        let gw2 = try TestGateway { $0.composites = [composite] }
        defer { gw2.stop() }
        let token2 = try gw2.login()
        gw2.standIn.clearReceived()
        let shelf = try gw2.client().json("GET", "/api/v1/screens/shelf/999", token: token2)
        #expect(shelf.status == 200, "\(shelf.text)")
        #expect(shelf.headers["X-Postern-Complete"] == "false")
        #expect(shelf.json?.objectValue?.map(\.0) == ["me", "page", "missing", "errors"])
        #expect(shelf.json?["missing"] == .null)
        #expect(shelf.json?["page"]?["books"] == .array([]))
        #expect(shelf.json?["errors"]?.objectValue?.map(\.0) == ["missing"])
        let error = try #require(shelf.json?["errors"]?["missing"])
        #expect(error.objectValue?.map(\.0) == ["status", "code", "error"])
        #expect(error["status"] == .int(404) && error["code"] == .string("not_found"))
        // The access-log line names the failed part.
        try eventually("the composite's access line") {
            gw2.logLines.all.contains { $0.contains(#""route":"/api/v1/screens/shelf/{n}""#) && $0.contains(#""failed_parts":{"missing":404}"#) }
        }
        let bad = try gw2.client().json("GET", "/api/v1/screens/shelf/x", token: token2)
        #expect(bad.status == 200)
        #expect(bad.json?["errors"]?["page"]?["status"] == .int(400))
        #expect(bad.json?["errors"]?["page"]?["error"]?.stringValue?.contains("offset") == true)
    }

    @Test(arguments: [true, false])
    func aRequiredFailureAnswersWithThatPartsErrorTheFirstInConfigOrder(pageFirst: Bool) throws {
        let page: (key: String, route: String, required: Bool, query: [(String, String)]) = ("page", "GET /api/v1/books", true, [("page", "{v}")])
        let read: (key: String, route: String, required: Bool, query: [(String, String)]) = ("read", "GET /api/v1/posts/{v}", true, [])
        let gw = try TestGateway { $0.composites = [Self.composite(path: "/api/v1/two/{v}", pageFirst ? [page, read] : [read, page])] }
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        let r = try gw.client().json("GET", "/api/v1/two/zero", token: token)
        #expect(r.status == (pageFirst ? 400 : 404), "\(r.text)")
        #expect(r.json?["code"] == .string(pageFirst ? "invalid_request" : "not_found"))
        #expect(gw.standIn.received.isEmpty)
    }

    @Test func thePartsRunAtOnceAndAPartNotDoneInTimeIs504WithItsCallSentOnce() throws {
        let gw = try TestGateway { config in
            config.directus.timeoutMs = 5000
            config.composites[0].timeoutMs = 400
        }
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        // Hold both list calls: both reach Directus before either is answered (the parts overlap).
        gw.upstreamGate.close(holding: 2) { $0.path == "/items/posts" }
        let answer = Answer()
        let port = gw.port
        Thread.detachNewThread { answer.set(try? RawHTTPClient(port: port).json("GET", "/api/v1/home", token: token)) }
        try eventually("both parts' calls held upstream at once") { gw.upstreamGate.heldCount == 2 }
        // The timeout passes with both held: the two optional parts are 504, `me` is there.
        try eventually("the composite answered") { answer.value != nil }
        let r = try #require(answer.value)
        gw.upstreamGate.open()
        #expect(r.status == 200, "\(r.text)")
        #expect(r.headers["X-Postern-Complete"] == "false")
        #expect(r.json?["me"]?["user"]?["email"] == .string("x@y.com"))
        #expect(r.json?["mine"] == .null && r.json?["latest"] == .null)
        #expect(r.json?["errors"]?["latest"]?["status"] == .int(504))
        #expect(r.json?["errors"]?["latest"]?["code"] == .string("upstream_timeout"))
        // The held calls finish later; none is sent again.
        gw.drainGatewayLoops()
        #expect(Self.itemCalls(gw).count == 2)
        #expect(try gw.client().json("GET", "/api/v1/books", token: token).status == 200)
        #expect(Self.itemCalls(gw).count == 3)
    }

    @Test func aRequiredPartNotDoneInTimeMakesTheComposite504() throws {
        let gw = try TestGateway { config in
            config.composites = [Self.composite(path: "/api/v1/slow", [("books", "GET /api/v1/books", true, [])]) { $0.timeoutMs = 300 }]
        }
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        gw.upstreamGate.close(holding: 1) { $0.path == "/items/posts" }
        let r = try gw.client().json("GET", "/api/v1/slow", token: token)
        gw.upstreamGate.open()
        #expect(r.status == 504, "\(r.text)")
        #expect(r.json?["code"] == .string("upstream_timeout"))
        try eventually("the held call was answered") { gw.upstreamGate.heldCount == 0 }
        #expect(Self.itemCalls(gw).count == 1)
    }

    @Test func aFailedRequiredPartAnswersWithoutWaitingForTheOthers() throws {
        let gw = try TestGateway { config in
            config.directus.timeoutMs = 60_000
            config.composites = [Self.composite(path: "/api/v1/early/{id}", [
                ("slow", "GET /api/v1/books", false, []),
                ("post", "GET /api/v1/posts/{id}", true, []),
                ("later", "GET /api/v1/posts", false, []),
            ]) { $0.timeoutMs = 60_000 }]
        }
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        gw.upstreamGate.close(holding: 1) { $0.path == "/items/posts" }
        // `post` refuses "x" at once: the answer is its 404 while `slow`'s call is held (a minute's timeout is never
        // waited for), and `later` never runs.
        let answer = Answer()
        let port = gw.port
        Thread.detachNewThread { answer.set(try? RawHTTPClient(port: port).json("GET", "/api/v1/early/x", token: token)) }
        try eventually("answered while a part's call is held") { answer.value != nil }
        let r = try #require(answer.value)
        #expect(r.status == 404, "\(r.text)")
        try eventually("the slow part's call held") { gw.upstreamGate.heldCount == 1 }
        gw.upstreamGate.open()
        try eventually("the held call was answered") { gw.upstreamGate.heldCount == 0 }
        gw.drainGatewayLoops()
        #expect(Self.itemCalls(gw).count == 1)
    }

    @Test func partsUseTheirRoutesMicroCacheWithTheCallersIdentity() throws {
        let gw = try TestGateway { config in
            for i in config.resources.indices { config.resources[i].cache.ttlMs = 60_000 }
        }
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        #expect(try gw.client().json("GET", "/api/v1/home", token: token).status == 200)
        #expect(Self.itemCalls(gw).count == 2)
        // The direct calls find the parts' answers in the cache; a second composite calls nothing.
        let direct = try gw.client().json("GET", "/api/v1/books?mine=true&limit=5", token: token)
        #expect(direct.headers["X-Cache"] == "HIT")
        #expect(try gw.client().json("GET", "/api/v1/home", token: token).status == 200)
        #expect(Self.itemCalls(gw).count == 2)
        // Another user's composite is their own (scope user): two more calls.
        let other = try gw.login("second@example.com", "password2")
        let theirs = try gw.client().json("GET", "/api/v1/home", token: other)
        #expect(theirs.json?["me"]?["user"]?["email"] == .string("second@example.com"))
        #expect(Self.itemCalls(gw).count == 4)
    }

    @Test func theCompositeHasItsOwnRowInTheMetricsAndTheConsoleAndThePartsCountUpstream() throws {
        let adminToken = "composite-admin-token-0123456789"
        let gw = try TestGateway { $0.admin.token = adminToken }
        defer { gw.stop() }
        let token = try gw.login()
        #expect(try gw.client().json("GET", "/api/v1/home", token: token).status == 200)
        let admin = RawHTTPClient(port: gw.app.adminPort)
        let metrics = try admin.request("GET", "/metrics").text
        #expect(metrics.contains(#"postern_requests_total{route="/api/v1/home",method="GET",status="200"} 1"#), "\(metrics)")
        #expect(!metrics.contains(#"postern_requests_total{route="/api/v1/books""#))
        // The two parts' calls (the login is a POST).
        #expect(metrics.contains(#"postern_upstream_duration_seconds_count{method="GET"} 2"#), "\(metrics)")
        let stats = try admin.request("GET", "/admin/stats", headers: ["Authorization": "Bearer \(adminToken)"])
        let routes = stats.json?["routes"]?.arrayValue?.compactMap { $0["route"]?.stringValue } ?? []
        #expect(routes.contains("/api/v1/home"), "\(stats.text)")
        #expect(!routes.contains("/api/v1/books"))
    }

    @Test func theShippedPostPageAnswersThePostAndItsComments() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        let r = try gw.client().json("GET", "/api/v1/screens/posts/1", token: token)
        #expect(r.status == 200, "\(r.text)")
        #expect(r.headers["X-Postern-Complete"] == "true")
        #expect(r.json?.objectValue?.map(\.0) == ["post", "comments"])
        #expect(gw.standIn.received.count == 2)
        #expect(r.json?["post"] == (try gw.client().json("GET", "/api/v1/posts/1", token: token)).json)
        let comments = try gw.client().json("GET", "/api/v1/comments?post=1&limit=20", token: token)
        #expect(r.json?["comments"] == comments.json)
        #expect(comments.json?["comments"]?.arrayValue?.isEmpty == false)
        // The comments' `post` filter validates the value as an integer too; the read refuses it first.
        gw.standIn.clearReceived()
        #expect(try gw.client().json("GET", "/api/v1/screens/posts/first", token: token).status == 404)
        #expect(gw.standIn.received.isEmpty)
    }

    @Test func theOpenAPIDocumentDescribesTheComposite() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let document = try #require(try gw.client().json("GET", "/api/v1/openapi.json").json)
        let home = try #require(document["paths"]?["/api/v1/home"]?["get"])
        #expect(home["operationId"] == .string("compositeHome"))
        #expect(home["responses"]?["200"]?["headers"]?["X-Postern-Complete"] != nil)
        let schema = try #require(document["components"]?["schemas"]?["HomeComposite"])
        #expect(schema["properties"]?.objectValue?.map(\.0) == ["me", "mine", "latest", "errors"])
        #expect(schema["required"] == .array([.string("me"), .string("mine"), .string("latest")]))
        #expect(schema["properties"]?["me"] == .object([("$ref", .string("#/components/schemas/MeAnswer"))]))
        let page = try #require(document["paths"]?["/api/v1/screens/posts/{id}"]?["get"])
        #expect(page["parameters"]?.arrayValue?.first?["name"] == .string("id"))
        #expect(page["parameters"]?.arrayValue?.first?["in"] == .string("path"))
        // A read part answers as the direct read does: posts' detail shape (its comments).
        let pageSchema = try #require(document["components"]?["schemas"]?["PostPageComposite"])
        #expect(pageSchema["properties"]?["post"] == .object([("$ref", .string("#/components/schemas/PostsDetailList"))]))
    }
}

/// A value set once from another thread.
final class Answer: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: RawHTTPClient.Response?
    func set(_ value: RawHTTPClient.Response?) { lock.withLock { stored = value } }
    var value: RawHTTPClient.Response? { lock.withLock { stored } }
}
