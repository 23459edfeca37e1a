import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternIO
import PosternHTTP
import PosternCoreTesting

/// The upstream leg of a request made cheaper without changing what reaches Directus: the list target built
/// once per resource (and its fallback for other lists), the one-pass query encoder, the request bytes on the
/// wire (the answer headers the response parser keeps: UpstreamWireTests).
@Suite(.serialized) struct UpstreamRequestTests {
    // MARK: Targets

    @Test(arguments: [
        [(String, String)](),
        [("fields", "id,title,content"), ("limit", "20"), ("offset", "0"), ("meta", "filter_count")],
        [("filter[_or][0][title][_icontains]", "héllo wörld & 日本 = ?#%+/"), ("sort", "-date_created,title")],
        [("", ""), ("a.b", "c~d_e-f"), ("x", "\u{0}\r\n\t\"'<>")],
        [("search", String(repeating: "é", count: 200))],
    ])
    func oneTargetPassEncodesAsTheQueryBuilder(items: [(String, String)]) {
        #expect(QueryString.target(path: "/items/posts", query: items) == "/items/posts?" + QueryString.build(items))
    }

    @Test func usualListGoesUpstreamWithTheDefaultQueryAndOtherListsWithTheirOwn() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = try gw.login()
        let mapper = shippedMapper("books")
        let lists = { gw.upstream("/items/posts").filter { $0.method == .get && $0.path == "/items/posts" } }

        // No list parameter (an unknown one is dropped): the target built at start-up.
        for query in ["", "?filter[title][_eq]=x"] {
            let r = try gw.client().json("GET", "/api/v1/books" + query, token: token)
            #expect(r.status == 200, "\(query): \(r.text)")
            #expect(lists().last?.query == QueryString.build(mapper.defaultListQuery), "\(query)")
        }
        // List parameters: the query built for this call.
        let r = try gw.client().json("GET", "/api/v1/books?limit=2&sort=-title&search=o", token: token)
        #expect(r.status == 200, "\(r.text)")
        let sent = try #require(lists().last)
        #expect(sent.query == QueryString.build(try mapper.listQuery(QueryString.parse("limit=2&sort=-title&search=o"))))
        #expect(sent.queryItems.contains { $0.name == "limit" && $0.value == "2" })
        // And the usual list after it is the usual one again.
        #expect(try gw.client().json("GET", "/api/v1/books", token: token).status == 200)
        #expect(lists().last?.query == QueryString.build(mapper.defaultListQuery))
        #expect(lists().count == 4)
    }

    @Test func ownerNarrowedListWithoutParametersCarriesTheOwnerFilter() throws {
        let gw = try TestGateway { config in
            config.resources[0].permissions[.list] = .owner  // books: each caller lists only their own
        }
        defer { gw.stop() }
        let r = try gw.client().json("GET", "/api/v1/books", token: try gw.login())
        #expect(r.status == 200, "\(r.text)")
        let sent = try #require(gw.upstream("/items/posts").last)
        var expected = shippedMapper("books").defaultListQuery
        expected.append(("filter[user_created][_eq]", "$CURRENT_USER"))
        #expect(sent.query == QueryString.build(expected))
    }

    // MARK: Request bytes

    /// Sends `call` through a `DirectusClient` over the real pool to `peer`.
    private static func call<T: Sendable>(_ peer: ScriptedUpstream,
                                          _ call: @escaping @Sendable (DirectusClient) async throws(DirectusError) -> T) async throws -> T {
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let transport = LoopTransport(group: group, endpoint: UpstreamEndpoint(url: peer.url)!, maxConnections: 1)
        return try await call(DirectusClient(transport: transport, timeout: 5))
    }

    @Test func requestBytesOnTheWireAreExactlyTheHead() async throws {
        let peer = try ScriptedUpstream { _ in
            [.send("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"data\":[]}")]
        }
        defer { peer.stop() }
        let context = CallFields(requestID: "req-1", clientIP: "10.1.2.3")
        let target = QueryString.target(path: "/items/posts", query: [("fields", "id,title"), ("limit", "20")])
        let body = try await Self.call(peer) { directus throws(DirectusError) in
            try await directus.listItems(target: target, token: "tok.en", context: context)
        }
        #expect(String(decoding: body.data, as: UTF8.self) == #"{"data":[]}"#)
        #expect(peer.requests == [
            "GET /items/posts?fields=id%2Ctitle&limit=20 HTTP/1.1\r\nHost: 127.0.0.1:\(peer.port)\r\n"
                + "Accept: application/json\r\nX-Request-Id: req-1\r\nX-Forwarded-For: 10.1.2.3\r\n"
                + "Authorization: Bearer tok.en\r\n\r\n",
        ])
    }

    @Test func writeBytesCarryTheBodyAndAFieldWithCRLFIsNotSent() async throws {
        let peer = try ScriptedUpstream { _ in
            [.send("HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n{\"data\":{\"id\":1}}")]
        }
        defer { peer.stop() }
        let context = CallFields(requestID: "evil\r\nX-Injected: 1", clientIP: "10.1.2.3")
        let created = try await Self.call(peer) { directus throws(DirectusError) in
            try await directus.createItem(path: "/items/posts", payload: .object([("title", .string("t"))]), fields: "id",
                                          token: nil, context: context)
        }
        #expect(created.map { String(decoding: $0, as: UTF8.self) } == #"{"data":{"id":1}}"#)
        #expect(peer.requests == [
            "POST /items/posts?fields=id HTTP/1.1\r\nHost: 127.0.0.1:\(peer.port)\r\n"
                + "Accept: application/json\r\nX-Forwarded-For: 10.1.2.3\r\nContent-Type: application/json\r\n"
                + "Content-Length: 13\r\n\r\n{\"title\":\"t\"}",
        ])
    }

    @Test func requestLargerThanTheFirstOutputBufferIsSentWhole() async throws {
        let peer = try ScriptedUpstream { _ in
            [.send("HTTP/1.1 200 OK\r\nContent-Length: 17\r\n\r\n{\"data\":{\"id\":1}}")]
        }
        defer { peer.stop() }
        let text = String(repeating: "0123456789", count: 600)
        let context = CallFields(requestID: String(repeating: "r", count: 2000), clientIP: "10.1.2.3")
        _ = try await Self.call(peer) { directus throws(DirectusError) in
            try await directus.updateItem(path: "/items/posts/1", payload: .object([("content", .string(text))]), fields: "id",
                                          token: "t", context: context)
        }
        let body = #"{"content":""# + text + #""}"#
        #expect(peer.requests == [
            "PATCH /items/posts/1?fields=id HTTP/1.1\r\nHost: 127.0.0.1:\(peer.port)\r\n"
                + "Accept: application/json\r\nX-Request-Id: \(context.requestID)\r\nX-Forwarded-For: 10.1.2.3\r\n"
                + "Authorization: Bearer t\r\nContent-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body,
        ])
    }
}
