import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP

/// The request path's allocation-free shortcuts answer exactly as the general code they stand in for.
@Suite struct ShortcutEquivalenceTests {
    @Test func tokenKeysAreTheSHA256OfTheToken() {
        let tokens = ["", "a", "pat_" + String(repeating: "x", count: 51), "pat_" + String(repeating: "y", count: 52),
                      "pat_" + String(repeating: "z", count: 60), String(repeating: "é😀", count: 40)]
        for token in tokens {
            #expect(TokenKey(token: token).hex == Crypto.sha256Hex(token), "\(token.utf8.count) bytes")
            #expect(TokenKey(token: ("x" + token + "y").dropFirst().dropLast()) == TokenKey(token: token))
        }
        #expect(TokenKey(token: "a") != TokenKey(token: "b"))
    }

    @Test func theCachedSessionIsTheOneAuthenticateGivesWhileLive() async throws {
        let f = SessionManagerTests.Fixture(idle: 100, max: 1000)
        let issued = try await f.open()
        let session = try await f.manager.authenticate(token: issued.accessToken)
        let header = "Bearer  \(issued.accessToken) "
        #expect(f.manager.cachedLiveSession(token: header[try #require(AuthenticationStage.bearerRange(header))]) == session)
        #expect(f.manager.cachedLiveSession(token: issued.accessToken[...]) == session)
        #expect(f.manager.cachedLiveSession(token: (issued.accessToken + "x")[...]) == nil)
        #expect(f.manager.cachedLiveSession(token: issued.refreshToken[...]) == nil)
        f.clock.advance(90)
        #expect(f.manager.cachedLiveSession(token: issued.accessToken[...])?.id == session.id, "use slides the idle expiry")
        f.clock.advance(90)
        #expect(f.manager.cachedLiveSession(token: issued.accessToken[...])?.id == session.id)
        f.clock.advance(101)
        #expect(f.manager.cachedLiveSession(token: issued.accessToken[...]) == nil, "expired: authenticate decides")
        await #expect(throws: GatewayError.self) { try await f.manager.authenticate(token: issued.accessToken) }
    }

    @Test func upstreamTargetsAreThePathAndTheBuiltQuery() {
        let queries: [[(String, String)]] = [
            [],
            [("fields", "id,title,content"), ("limit", "20"), ("offset", "0"), ("meta", "filter_count")],
            [("filter[_or][0][title][_icontains]", "a&b=c d+é😀"), ("sort", "-id"), ("x", "")],
            [("", ""), ("~._-", "%25")],
        ]
        for query in queries {
            for path in ["/items/posts", "/items/a%20b", ""] {
                #expect(QueryString.target(path: path, query: query) == path + "?" + QueryString.build(query))
            }
        }
    }

    @Test func aListWithoutListParametersGetsTheDefaultQuery() throws {
        var resource = ResourceConfig(name: "books", collection: "posts", fields: [("id", "id"), ("title", "title")])
        resource.defaultLimit = 7
        let mapper = ResourceMapper(resource)
        let expected = try mapper.listQuery([("limit", "7")])  // the general path, with the default spelled out
        #expect(mapper.defaultListQuery.map { "\($0.0)=\($0.1)" } == expected.map { "\($0.0)=\($0.1)" })
        for query: [(name: String, value: String)] in [[], [("filter[x]", "1")], [("fields", "secret"), ("deep", "")]] {
            #expect(mapper.isDefaultListQuery(query))
            let got = try mapper.listQuery(query)
            #expect(got.map { "\($0.0)=\($0.1)" } == expected.map { "\($0.0)=\($0.1)" })
        }
        #expect(!mapper.isDefaultListQuery([("limit", "3")]))
        #expect(try mapper.listQuery([("limit", "3")]).contains { $0.0 == "limit" && $0.1 == "3" })
    }

    @Test func routesMatchAsWhenSplitIntoAnArray() {
        let router = Router(routes: [
            Route("/api/v1/books", resource: "books", methods: []), Route("/api/v1/books/{id}", resource: "books", methods: []),
            Route("/api/v1/\u{212A}", methods: []),
            Route("/healthz", methods: []), Route("/", methods: []),
        ])
        // The matcher as it was: the path split into an array, the piece before the first `/` dropped, one
        // trailing empty piece dropped, then compared segment by segment.
        func reference(_ path: String) -> (String, String?)? {
            var raw = Router.segments(of: path).dropFirst()
            if raw.last == "" { raw = raw.dropLast() }
            for pattern in ["/api/v1/books", "/api/v1/books/{id}", "/api/v1/\u{212A}", "/healthz", "/"] {
                let segments = pattern.split(separator: "/")
                guard segments.count == raw.count else { continue }
                var id: String?
                var matched = true
                for (segment, piece) in zip(segments, raw) {
                    if segment == "{id}" {
                        id = QueryString.decodePath(String(piece))
                        if id!.isEmpty { matched = false }  // set on the line above
                    } else if segment != piece {
                        matched = false
                    }
                }
                if matched { return (pattern, id) }
            }
            return nil
        }
        let paths = ["", "/", "//", "/healthz", "/healthz/", "/healthz//", "healthz", "x/healthz", "//healthz", "/api/v1/books",
                     "/api/v1/books/", "/api/v1/books//", "/api/v1/books/12", "/api/v1/books/12/", "/api/v1/books/%31%2F2",
                     "/api/v1/books/a+b", "/api/v1/books/%", "/api/v1/books/12/x", "/api/v1/bóoks", "/api/v1/books/é", "/api/v1/K", "/api/v1/\u{212A}", "/api/v1/k"]
        for path in paths {
            let got = router.match(path: path)
            let want = reference(path)
            #expect(got?.route.pattern == want?.0 && got?.id == want?.1, "\(path)")
        }
    }

    @Test func routeLiteralsCompareAsText() {
        let pairs: [(String, Substring)] = [("books", "books"), ("books", "book"), ("books", "Books"), ("K", "\u{212A}"),
                                            ("\u{212A}", "K"), ("é", "e\u{301}"), ("é", "é"), ("", ""), ("a", "")]
        for (literal, piece) in pairs {
            #expect(Router.same(literal, piece) == (literal == piece), "\(literal) vs \(piece)")
        }
    }

    @Test func headerLookupsIgnoreCaseAndKeepDuplicates() {
        var headers = HTTPHeaders()
        headers.add("X-Forwarded-For", "1.1.1.1")
        headers.add("Accept", "a")
        headers.add("x-forwarded-for", "2.2.2.2")
        headers.add("X-Forwarded-Fox", "3.3.3.3")
        #expect(headers["X-FORWARDED-FOR"] == "1.1.1.1")
        #expect(headers.values("x-forwarded-for") == ["1.1.1.1", "2.2.2.2"])
        #expect(headers["X-Forwarded"] == nil && headers["X-Forwarded-For-"] == nil && headers["accepT"] == "a")
        headers.set("X-FORWARDED-FOR", "9.9.9.9")
        #expect(headers.values("X-Forwarded-For") == ["9.9.9.9"] && headers["X-Forwarded-Fox"] == "3.3.3.3")
        headers.remove("ACCEPT")
        #expect(headers.fields.map(\.name) == ["X-Forwarded-Fox", "X-FORWARDED-FOR"])
    }

    @Test func cacheKeysOfASessionEqualTheirTextForm() {
        func session(_ user: String, role: String?) -> Session {
            Session(id: "s", tokenDigest: "t", refreshDigest: "r", userID: user, email: "e", role: role, directusAccessToken: "a",
                    directusAccessExpiresAt: Date(), directusRefreshToken: "r", createdAt: Date(), lastUsedAt: Date(), expiresAt: Date())
        }
        let query = [("fields", "id"), ("limit", "20")]
        for (caller, scope, perUser) in [(session("A", role: "R"), CacheScope.role, false), (session("A", role: "R"), .role, true),
                                         (session("A", role: nil), .role, false), (session("B", role: "R"), .user, false)] {
            let direct = CacheKey(resource: "books", path: "/items/posts", query: query,
                                  sharedBy: CacheKey.Audience(session: caller, scope: scope, perUser: perUser))
            let text = CacheKey(resource: "books", path: "/items/posts", query: query,
                                audience: CacheKey.audience(session: caller, scope: scope, perUser: perUser))
            #expect(direct == text && direct.hashValue == text.hashValue && direct.audience == text.audience)
        }
        let anonymous = CacheKey(resource: "books", path: "/items/posts", query: query, sharedBy: .anonymous)
        #expect(anonymous == CacheKey(resource: "books", path: "/items/posts", query: query, audience: "anonymous"))
        #expect(anonymous != CacheKey(resource: "books", path: "/items/posts", query: query, audience: "u:anonymous"))
        #expect(CacheKey(resource: "books", path: "/p", query: query, sharedBy: .user("1"))
            != CacheKey(resource: "books", path: "/p", query: query, sharedBy: .role("1")))
    }
}

extension SessionManager {
    /// `cachedLiveSession(tokenBytes:)` of a token given as text (the tests' way to name one).
    func cachedLiveSession(token: Substring) -> Session? {
        var text = String(token)
        return text.withUTF8 { cachedLiveSession(tokenBytes: $0) }
    }
}
