import DirectusStandIn
import Foundation
import Synchronization
import Testing
@testable import PosternCore
import PosternTesting
import PosternIO
import PosternHTTP
import PosternCoreTesting

/// The answers given on the loop thread without a handler task (a micro-cache hit for a cached session):
/// the server's `immediate` hook and its fallback, and the gateway's hits behaving exactly like the answers of
/// the asynchronous path (headers, CORS, metrics, access log, authentication, policy, rate limits).
@Suite(.serialized) struct ImmediatePathTests {
    @Test func theServerSendsAnImmediateAnswerAndFallsBackToTheHandlerOnNil() throws {
        let handled = Atomic<Int>(0)
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let server = HTTPServer(group: group, immediate: { request in
            request.path == "/now" ? HTTPResponse(status: 200, body: Data("immediate".utf8)) : nil
        }) { request in
            handled.add(1, ordering: .relaxed)
            return HTTPResponse(status: 200, body: Data("handler \(request.path)".utf8))
        }
        try server.start(host: "127.0.0.1", port: 0)
        defer { server.shutdown(grace: 1) }
        let client = RawHTTPClient(port: server.port)
        // Alternating on one keep-alive connection: each answer goes to its own request.
        for _ in 0..<3 {
            #expect(try client.request("GET", "/now").text == "immediate")
            #expect(try client.request("GET", "/later").text == "handler /later")
        }
        #expect(handled.load(ordering: .relaxed) == 3)
        #expect(server.inFlight == 0)
    }

    @Test func pipelinedImmediateAndHandlerAnswersKeepTheirOrder() throws {
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let server = HTTPServer(group: group, immediate: { request in
            request.path.hasPrefix("/now") ? HTTPResponse(status: 200, body: Data(request.path.utf8)) : nil
        }) { request in
            for _ in 0..<50 { await Task.yield() }  // the handler's answer takes longer than the next one
            return HTTPResponse(status: 200, body: Data(request.path.utf8))
        }
        try server.start(host: "127.0.0.1", port: 0)
        defer { server.shutdown(grace: 1) }
        let client = RawHTTPClient(port: server.port)
        var bytes = ""
        for path in ["/later1", "/now1", "/later2", "/now2"] { bytes += "GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n" }
        try client.sendRaw(Array(bytes.utf8))
        var bodies: [String] = []
        for _ in 0..<4 { bodies.append(try client.readResponse().text) }
        #expect(bodies == ["/later1", "/now1", "/later2", "/now2"])
    }

    /// What the immediate hook left for a request it did not answer is what the handler is given with it.
    @Test func theServerHandsWhatTheImmediateHookPreparedToTheHandler() throws {
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let server = HTTPServer(group: group, handling: NoteEcho())
        try server.start(host: "127.0.0.1", port: 0)
        defer { server.shutdown(grace: 1) }
        let client = RawHTTPClient(port: server.port)
        for _ in 0..<2 {
            #expect(try client.request("GET", "/a").text == "prepared for /a")
            #expect(try client.request("GET", "/now").text == "immediate")
            #expect(try client.request("GET", "/b").text == "prepared for /b")
        }
    }

    /// A value the immediate step hands over, typed (captured in the `PreparedAnswer`).
    struct Note: Sendable {
        let text: String
    }

    /// Answers `/now` at once; prepares a `Note` for every other path, whose rest answers with its text.
    struct NoteEcho: HTTPRequestHandler {
        func handle(_ request: HTTPRequest) async -> HTTPResponse { HTTPResponse(status: 200, body: Data("nothing".utf8)) }
        func handleImmediately(_ request: HTTPRequest, rest: inout PreparedAnswer?) -> HTTPResponse? {
            if request.path == "/now" { return HTTPResponse(status: 200, body: Data("immediate".utf8)) }
            let note = Note(text: "prepared for \(request.path)")
            rest = .task { HTTPResponse(status: 200, body: Data(note.text.utf8)) }
            return nil
        }
    }

    /// On a miss the asynchronous path goes on from what the immediate path did (route, context, session, cache
    /// key) instead of doing it again: the answer carries the request id the immediate path drew, and one access
    /// line is written, under that id.
    @Test func aMissGoesOnFromWhatTheImmediatePathPrepared() async throws {
        let gw = try Self.gateway { $0.logLevel = "info" }
        defer { gw.stop() }
        let token = try gw.login()
        let gateway = gw.app.gateway
        let request = Self.request("/api/v1/books", token: token)  // no X-Request-Id: a new id is drawn
        var rest: PreparedAnswer?
        #expect(gateway.handleImmediately(request, rest: &rest) == nil, "a miss needs Directus")
        guard case .task(let prepared)? = rest else {
            Issue.record("a cached resource's miss goes on in a task")
            return
        }
        let answer = await prepared()
        let drawn = try #require(answer.headers["X-Request-Id"])
        #expect(answer.status == 200 && answer.headers["X-Cache"] == "MISS")
        #expect(LiveCacheTests.listCalls(gw) == 1)
        let lines = gw.logLines.all.filter { $0.contains("\"msg\":\"request\"") && $0.contains("\"route\":\"/api/v1/books\"") }
        #expect(lines.count == 1 && lines.first?.contains(drawn) == true, "\(lines)")
        // With nothing prepared, `handle` starts from the start (a new request id), and finds the stored answer.
        let fresh = await gateway.handle(request)
        #expect(fresh.headers["X-Cache"] == "HIT" && fresh.headers["X-Request-Id"] != drawn)
    }

    /// A gateway whose resources are cached for a minute (user scope), with `configure` applied after.
    static func gateway(configure: (inout PosternConfig) -> Void = { _ in }) throws -> TestGateway {
        try LiveCacheTests.gateway(configure: configure)
    }

    /// The gateway's immediate answer to `request`, if any (what it prepared otherwise is dropped).
    static func immediate(_ gateway: Gateway, _ request: HTTPRequest) -> HTTPResponse? {
        var rest: PreparedAnswer?
        return gateway.handleImmediately(request, rest: &rest)
    }

    /// `GET path` as the gateway's public listener receives it.
    static func request(_ path: String, token: String?, headers: [String: String] = [:]) -> HTTPRequest {
        var fields = HTTPHeaders()
        if let token { fields.add("Authorization", "Bearer \(token)") }
        for (name, value) in headers { fields.add(name, value) }
        return HTTPRequest(method: .get, path: path, query: "", headers: fields, body: Data())
    }

    @Test func onlyAFreshHitOfACachedSessionIsAnsweredImmediately() throws {
        let gw = try Self.gateway()
        defer { gw.stop() }
        let token = try gw.login()
        let gateway = gw.app.gateway
        #expect(Self.immediate(gateway, Self.request("/api/v1/books", token: token)) == nil, "a miss needs Directus")
        #expect(try gw.client().json("GET", "/api/v1/books", token: token).headers["X-Cache"] == "MISS")
        let hit = try #require(Self.immediate(gateway, Self.request("/api/v1/books", token: token)))
        #expect(hit.status == 200 && hit.headers["X-Cache"] == "HIT")
        #expect(Self.immediate(gateway, Self.request("/api/v1/books/1", token: token)) == nil, "read not cached yet")
        #expect(Self.immediate(gateway, Self.request("/api/v1/user/me", token: token)) == nil, "not a cached route")
        #expect(Self.immediate(gateway, Self.request("/nowhere", token: token)) == nil)
        // A token the session cache does not hold goes to the asynchronous path (which asks the store).
        #expect(Self.immediate(gateway, Self.request("/api/v1/books", token: "pst_unknown")) == nil)
        #expect(LiveCacheTests.listCalls(gw) == 1)
    }

    /// A list or read of a resource that is not cached is never answered at once, and goes on without a task: its
    /// upstream read starts on the loop thread and its completion gives the answer, with the edge's headers, one
    /// access line and the metrics, as the task's path gives them. Other routes go on in a task.
    @Test func uncachedReadsGoOnWithoutATaskAndOtherRoutesInOne() async throws {
        let gw = try TestGateway(configure: { $0.logLevel = "info" })
        defer { gw.stop() }
        let token = try gw.login()
        let gateway = gw.app.gateway
        let loop = try #require(gw.app.group?.loops.first)
        let requests = [Self.request("/api/v1/books", token: token, headers: ["X-Request-Id": "cb-1"]),
                        Self.request("/api/v1/books/1", token: token, headers: ["X-Request-Id": "cb-2"]),
                        Self.request("/api/v1/books/999999", token: token, headers: ["X-Request-Id": "cb-3"])]
        var answers: [HTTPResponse] = []
        for request in requests {
            // On the loop, as the server calls it: the read starts there and the answer comes back there.
            let answer = await withCheckedContinuation { (done: CheckedContinuation<HTTPResponse, Never>) in
                loop.execute {
                    var rest: PreparedAnswer?
                    #expect(gateway.handleImmediately(request, rest: &rest) == nil)
                    guard case .later(let work)? = rest else {
                        Issue.record("an uncached read goes on without a task")
                        return done.resume(returning: HTTPResponse(status: 599))
                    }
                    work.start(LaterAnswer { response in
                        #expect(loop.inLoop, "answered on the loop thread")
                        done.resume(returning: response)
                    })
                }
            }
            answers.append(answer)
        }
        #expect(answers.map(\.status) == [200, 200, 404])
        let list = try JSONValue.parse(answers[0].body)
        #expect(list["books"]?.arrayValue?.isEmpty == false && list["total"] != nil)
        #expect(answers.map { $0.headers["X-Request-Id"] } == ["cb-1", "cb-2", "cb-3"])
        #expect(answers.allSatisfy { $0.headers["X-Content-Type-Options"] == "nosniff" })
        #expect(try JSONValue.parse(answers[2].body)["code"]?.stringValue == "not_found", "\(String(decoding: answers[2].body, as: UTF8.self))")
        for id in ["cb-1", "cb-2", "cb-3"] {
            #expect(gw.logLines.all.filter { $0.contains("\"msg\":\"request\"") && $0.contains(id) }.count == 1, "\(id)")
        }
        // A write is not a read: it goes on in a task.
        var rest: PreparedAnswer?
        var fields = HTTPHeaders()
        fields.add("Authorization", "Bearer \(token)")
        let write = HTTPRequest(method: .post, path: "/api/v1/books", query: "", headers: fields, body: Data(#"{"title":"t"}"#.utf8))
        #expect(gateway.handleImmediately(write, rest: &rest) == nil)
        guard case .task? = rest else {
            Issue.record("a write goes on in a task")
            return
        }
    }

    @Test func aHitCarriesTheSameHeadersAndCORSAsAMiss() throws {
        let gw = try Self.gateway { $0.cors.allowedOrigins = ["https://app.example"] }
        defer { gw.stop() }
        let token = try gw.login()
        let client = gw.client()
        let origin = ["Origin": "https://app.example"]
        let miss = try client.json("GET", "/api/v1/books", token: token, headers: origin.merging(["X-Request-Id": "m-1"]) { $1 })
        let hit = try client.json("GET", "/api/v1/books", token: token, headers: origin.merging(["X-Request-Id": "h-1"]) { $1 })
        #expect(miss.headers["X-Cache"] == "MISS" && hit.headers["X-Cache"] == "HIT")
        #expect(hit.headers["X-Request-Id"] == "h-1")
        for name in ["Access-Control-Allow-Origin", "Access-Control-Expose-Headers", "Vary", "X-Content-Type-Options",
                     "Cache-Control", "Content-Type"] {
            #expect(hit.headers[name] != nil && hit.headers[name] == miss.headers[name], "\(name)")
        }
        // The same fields, each once as on the miss (a stored answer carries some of them already).
        let names = { (r: RawHTTPClient.Response) in r.headers.fields.map { $0.name.lowercased() }.filter { $0 != "date" }.sorted() }
        #expect(names(hit) == names(miss))
        #expect(Set(names(hit)).count == names(hit).count, "no field twice: \(names(hit))")
        #expect(hit.body == miss.body)
        // A generated request id on a hit, too (no client id given).
        let generated = try client.json("GET", "/api/v1/books", token: token)
        #expect(generated.headers["X-Cache"] == "HIT" && generated.headers["X-Request-Id"]?.utf8.count == 32)
    }

    @Test func aHitIsLoggedAndCountedLikeAMiss() throws {
        let gw = try Self.gateway { $0.logLevel = "info" }
        defer { gw.stop() }
        let token = try gw.login()
        let client = gw.client()
        _ = try client.json("GET", "/api/v1/books", token: token, headers: ["X-Request-Id": "miss-1"])
        let hit = try client.json("GET", "/api/v1/books", token: token, headers: ["X-Request-Id": "hit-1"])
        #expect(hit.headers["X-Cache"] == "HIT")
        let lines = gw.logLines.all.filter { $0.contains("\"msg\":\"request\"") }
        let miss = try #require(lines.first { $0.contains("miss-1") }.flatMap { try? JSONValue.parse($0) })
        let hitLines = lines.filter { $0.contains("hit-1") }
        #expect(hitLines.count == 1)
        let logged = try #require(hitLines.first.flatMap { try? JSONValue.parse($0) })
        for field in ["msg", "method", "route", "status", "client_ip", "user_id"] {
            #expect(logged[field] != nil && logged[field] == miss[field], "\(field)")
        }
        #expect(logged["user_id"]?.stringValue == gw.standIn.userID(email: "x@y.com"))
        #expect(logged["duration_ms"] != nil && logged["upstream_ms"] != nil)
        let metrics = try RawHTTPClient(port: gw.app.adminPort).request("GET", "/metrics").text
        #expect(metrics.contains(#"postern_requests_total{route="/api/v1/books",method="GET",status="200"} 2"#))
        #expect(metrics.contains(#"postern_request_duration_seconds_count{route="/api/v1/books"} 2"#))
        #expect(metrics.contains("postern_cache_hits_total 1\n"))
    }

    @Test func errorsOfTheStagesBeforeAHitAreAnsweredAndLoggedAsUsual() throws {
        let gw = try Self.gateway { $0.logLevel = "info" }
        defer { gw.stop() }
        let token = try gw.login()
        #expect(try gw.client().json("GET", "/api/v1/books", token: token).headers["X-Cache"] == "MISS")
        let none = try gw.client().json("GET", "/api/v1/books", headers: ["X-Request-Id": "anon-1"])
        #expect(none.status == 401 && none.json?["code"] == .string("unauthorized") && none.headers["X-Cache"] == nil)
        #expect(none.headers["X-Request-Id"] == "anon-1" && none.headers["Cache-Control"] == "no-store")
        let bad = try gw.client().json("GET", "/api/v1/books?sort=nope", token: token)
        #expect(bad.status == 400 && bad.headers["X-Cache"] == nil)
        #expect(gw.logLines.all.contains { $0.contains("\"msg\":\"request\"") && $0.contains("anon-1") && $0.contains("401") })
        #expect(LiveCacheTests.listCalls(gw) == 1)
    }

    @Test func thePerTokenRateLimitStillCountsEveryHit() throws {
        let gw = try Self.gateway { $0.rateLimits.requestsPerTokenPerMinute = 3 }
        defer { gw.stop() }
        let token = try gw.login()
        var statuses: [Int] = []
        var caches: [String?] = []
        for _ in 0..<4 {
            let r = try gw.client().json("GET", "/api/v1/books", token: token)
            statuses.append(r.status)
            caches.append(r.headers["X-Cache"])
        }
        #expect(statuses == [200, 200, 200, 429])
        #expect(caches == ["MISS", "HIT", "HIT", nil])
    }

    @Test func headOfACachedListIsAnsweredWithoutABody() throws {
        let gw = try Self.gateway()
        defer { gw.stop() }
        let token = try gw.login()
        let client = gw.client()
        #expect(try client.json("GET", "/api/v1/books", token: token).headers["X-Cache"] == "MISS")
        let head = try client.request("HEAD", "/api/v1/books", headers: ["Authorization": "Bearer \(token)"])
        #expect(head.status == 200 && head.body.isEmpty && head.headers["X-Cache"] == "HIT")
        // The connection stays in step: the next answer is whole.
        #expect(try client.json("GET", "/api/v1/books", token: token).headers["X-Cache"] == "HIT")
    }
}
