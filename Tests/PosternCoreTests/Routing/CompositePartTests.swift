import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternCoreTesting
import PosternHTTP

/// `Endpoint.answerPart`, the entry point of a composite's parts: a synthesized GET answered through its route's
/// stages, mapping and micro-cache with the caller's identity, without the edge's access line or request count
/// (docs/api.md, Composite endpoints). The parts are routed here as `CompositeResponder` resolves them from config.
@Suite(.serialized) struct CompositePartTests {
    /// A gateway that writes access lines.
    static func gateway(configure: @escaping (inout PosternConfig) -> Void = { _ in }) throws -> TestGateway {
        try TestGateway { config in
            config.logLevel = "info"
            configure(&config)
        }
    }

    /// The context of a caller signed in with `token` (as the composite's authentication leaves it).
    static func caller(_ gw: TestGateway, token: String?) async throws -> RequestContext {
        let context = RequestContext(headers: HTTPHeaders(), clientIP: "10.0.0.9", trace: RequestTrace())
        if let token { context.session = try await gw.app.gateway.sessions.authenticate(token: token) }
        return context
    }

    /// The public router of the gateway's current generation.
    static func router(_ gw: TestGateway) -> Router { gw.app.gateway.generation.routes.router }

    /// Access lines written for `route`.
    static func accessLines(_ gw: TestGateway, route: String) -> [String] {
        gw.logLines.all.filter { $0.contains("\"msg\":\"request\"") && $0.contains("\"route\":\"\(route)\"") }
    }

    @Test func aPartAnswersTheDirectCallsBodyWithTheCallersIdentityAndNoLineOrCountOfItsOwn() async throws {
        let gw = try Self.gateway()
        defer { gw.stop() }
        let token = try gw.login()
        let direct = try gw.client().json("GET", "/api/v1/books?limit=2&sort=-id", token: token)
        #expect(direct.status == 200)
        let caller = try await Self.caller(gw, token: token)
        let part = await Self.router(gw).answerPart(HTTPRequest(method: .get, target: "/api/v1/books?limit=2&sort=-id"),
                                                    for: caller)
        #expect(part.status == 200)
        #expect(try JSONValue.parse(part.body) == direct.json)
        // The part's upstream call carried the caller's request id, and its time went to the caller's trace.
        let sent = try #require(gw.upstream("/items/posts").last)
        #expect(sent.headers["X-Request-Id"] == caller.requestID)
        #expect(sent.headers["Authorization"]?.hasPrefix("Bearer ") == true)
        #expect((caller.trace?.upstreamSeconds ?? 0) > 0)
        // Only the direct call wrote an access line and counted as a request.
        gw.drainGatewayLoops()
        #expect(Self.accessLines(gw, route: "/api/v1/books").count == 1)
        let counted = gw.app.gateway.metrics.render().split(separator: "\n")
            .filter { $0.hasPrefix("postern_requests_total{route=\"/api/v1/books\"") }
        #expect(counted.count == 1 && counted.first?.hasSuffix(" 1") == true, "\(counted)")
    }

    @Test func aPartOfUserMeIsTheCallersAndNeedsAnIdentity() async throws {
        let gw = try Self.gateway()
        defer { gw.stop() }
        let token = try gw.login()
        let router = Self.router(gw)
        let me = await router.answerPart(HTTPRequest(method: .get, target: "/api/v1/user/me"),
                                         for: try await Self.caller(gw, token: token))
        #expect(me.status == 200)
        #expect(try JSONValue.parse(me.body)["user"]?["email"]?.stringValue == "x@y.com")
        let anonymous = await router.answerPart(HTTPRequest(method: .get, target: "/api/v1/user/me"),
                                                for: try await Self.caller(gw, token: nil))
        #expect(anonymous.status == 401)
        #expect(try JSONValue.parse(anonymous.body)["code"]?.stringValue == "unauthorized")
    }

    @Test func aPartIsRefusedAsTheDirectCallWouldBeWithNothingSentUpstream() async throws {
        let gw = try Self.gateway()
        defer { gw.stop() }
        let token = try gw.login()
        let caller = try await Self.caller(gw, token: token)
        let router = Self.router(gw)
        let before = gw.upstream("/items/").count
        let badLimit = await router.answerPart(HTTPRequest(method: .get, target: "/api/v1/books?limit=0"), for: caller)
        #expect(badLimit.status == 400)
        let body = try JSONValue.parse(badLimit.body)
        #expect(body["code"]?.stringValue == "invalid_request" && body["books"] == .array([]))
        #expect(await router.answerPart(HTTPRequest(method: .get, target: "/api/v1/books/abc"), for: caller).status == 404)
        #expect(gw.upstream("/items/").count == before)
    }

    @Test func aPartGoesThroughItsRoutesMicroCache() async throws {
        let gw = try LiveCacheTests.gateway()
        defer { gw.stop() }
        let token = try gw.login()
        let router = Self.router(gw)
        let first = await router.answerPart(HTTPRequest(method: .get, target: "/api/v1/books"),
                                            for: try await Self.caller(gw, token: token))
        let second = await router.answerPart(HTTPRequest(method: .get, target: "/api/v1/books"),
                                             for: try await Self.caller(gw, token: token))
        #expect(first.headers["X-Cache"] == "MISS" && second.headers["X-Cache"] == "HIT")
        #expect(first.body == second.body)
        // The direct call finds the answer the part stored.
        #expect(try gw.client().json("GET", "/api/v1/books", token: token).headers["X-Cache"] == "HIT")
        #expect(LiveCacheTests.listCalls(gw) == 1)
    }
}

extension Router {
    /// Routes `request` as `CompositeResponder` resolves a part's route from config, and answers it as that part,
    /// on behalf of `caller` (authenticated already).
    func answerPart(_ request: HTTPRequest, for caller: RequestContext) async -> HTTPResponse {
        guard let match = match(path: request.path) else {
            Issue.record("no route for \(request.path)")
            return ErrorRenderer.render(.notFound("no such route"), context: caller)
        }
        let context = RequestContext(partOf: caller, routePattern: match.route.pattern,
                                     resourceName: match.route.resource, itemID: match.id)
        do throws(GatewayError) {
            return try await match.route.responder(for: request.method).answerPart(request, context: context)
        } catch {
            return ErrorRenderer.render(error, context: context)
        }
    }
}
