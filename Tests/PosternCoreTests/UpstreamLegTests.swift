import Foundation
import Testing
@testable import PosternCore

/// The upstream leg of a request made cheaper without changing what reaches Directus: the list target built
/// once per resource (and its fallback for other lists), the one-pass query encoder, the request bytes on the
/// wire, and the answer headers kept by the response parser.
@Suite(.serialized) struct UpstreamLegTests {
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
        let context = CallContext(requestID: "req-1", clientIP: "10.1.2.3")
        let target = QueryString.target(path: "/items/posts", query: [("fields", "id,title"), ("limit", "20")])
        let body = try await Self.call(peer) { directus throws(DirectusError) in
            try await directus.listItems(target: target, token: "tok.en", context: context)
        }
        #expect(String(decoding: body, as: UTF8.self) == #"{"data":[]}"#)
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
        let context = CallContext(requestID: "evil\r\nX-Injected: 1", clientIP: "10.1.2.3")
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
        let context = CallContext(requestID: String(repeating: "r", count: 2000), clientIP: "10.1.2.3")
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

    // MARK: Answer headers

    @Test func longAndSplitHeaderFieldsAreKeptWhole() async throws {
        let longName = "X-" + String(repeating: "N", count: 300)
        let longValue = String(repeating: "v", count: 700)
        let peer = try ScriptedUpstream { _ in
            [.send("HTTP/1.1 503 Busy\r\n\(longName): \(longValue)\r\nRetry-After: 7\r\nContent-Length: 2\r\n\r\n{}")]
        }
        defer { peer.stop() }
        let all = await UpstreamWireTests.send(peer, [UpstreamWireTests.get])
        let response = try all[0].get()
        #expect(response.headers.fields.map(\.name) == [longName, "Retry-After", "Content-Length"])
        #expect(response.headers[longName] == longValue)
        let kept = await UpstreamWireTests.send(peer, [UpstreamWireTests.get], keptHeaders: UpstreamHTTPClient.gatewayHeaders)
        #expect(try kept[0].get().headers.fields.map { "\($0.name): \($0.value)" } == ["Retry-After: 7"])
    }

    // MARK: Fast response path

    /// What a parser made of one answer.
    private struct Parsed: Equatable {
        var outcome: UpstreamResponseParser.Outcome
        var status: Int
        var fields: [String]
        var body: String
        var keepAlive: Bool
    }

    /// Parses `answer` fed in `pieces` (byte counts; the rest in one last piece), then the end of the stream when
    /// the answer is still incomplete.
    private static func parse(_ answer: String, pieces: [Int], kept: [StaticString]?) -> (Parsed, fast: Bool) {
        let parser = UpstreamResponseParser(keptHeaders: kept)
        parser.reset()
        var bytes = Array(answer.utf8)[...]
        var outcome = UpstreamResponseParser.Outcome.needMore
        for size in pieces + [bytes.count] where outcome == .needMore && !bytes.isEmpty {
            let piece = bytes.prefix(max(1, size))
            bytes = bytes.dropFirst(piece.count)
            outcome = Array(piece).withUnsafeBytes { parser.feed($0) }
        }
        if outcome == .needMore { outcome = parser.feedEndOfStream() }
        let parsed = Parsed(outcome: outcome, status: parser.status, fields: parser.headers.fields.map { "\($0.name): \($0.value)" },
                            body: String(decoding: parser.body, as: UTF8.self), keepAlive: parser.keepAlive)
        return (parsed, parser.fastPath)
    }

    static let nginxHead = "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Tue, 01 Dec 2026 03:00:00 GMT\r\n"
        + "Content-Type: application/json\r\nContent-Length: 11\r\nLast-Modified: Tue, 01 Dec 2026 02:00:00 GMT\r\n"
        + "Connection: keep-alive\r\nETag: \"692d0a-b\"\r\nAccept-Ranges: bytes\r\n\r\n"

    /// Answers the fast path reads (true) or leaves to http-parser (false); either way the result must be what
    /// http-parser makes of the same bytes fed one byte first (which never takes the fast path).
    static let answers: [(String, Bool)] = [
        (nginxHead + #"{"data":[]}"#, true),
        (nginxHead + #"{"data":[]}HTTP/1.1 200 OK"#, true),
        ("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 2\r\n\r\n{}", true),
        ("HTTP/1.1 201 Created\r\nconnection: Keep-Alive\r\ncontent-length: 002\r\nX_Odd-Name9: a b  c\r\n\r\n{}", true),
        ("HTTP/1.1 503 Service Unavailable\r\nRetry-After:    7\r\nContent-Length: 0\r\n\r\n", true),
        ("HTTP/1.1 429 Too Many Requests\r\nretry-after: 30\r\nContent-Length: 5\r\n\r\n{}", true),  // body still to come
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n", false),
        ("HTTP/1.1 200 OK\r\nTransfer-Encoding-X: 1\r\nContent-Length: 2\r\n\r\n{}", false),
        ("HTTP/1.0 200 OK\r\nContent-Length: 2\r\n\r\n{}", false),
        ("HTTP/1.1 204 No Content\r\nContent-Length: 2\r\n\r\n", false),
        ("HTTP/1.1 304 Not Modified\r\nContent-Length: 2\r\n\r\n", false),
        ("HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}", false),
        ("HTTP/1.1 200 OK\r\nConnection: upgrade\r\nUpgrade: websocket\r\nContent-Length: 2\r\n\r\n{}", false),
        ("HTTP/1.1 200 OK\r\nProxy-Connection: close\r\nContent-Length: 2\r\n\r\n{}", false),
        ("HTTP/1.1 200 OK\r\nX-Empty:\r\nRetry-After: 3\r\nContent-Length: 2\r\n\r\n{}", false),
        ("HTTP/1.1 200 OK\r\nRetry-After: 3 \r\nContent-Length: 2\r\n\r\n{}", false),
        ("HTTP/1.1 200 OK\r\nRetry-After:\t3\r\nContent-Length: 2\r\n\r\n{}", false),
        ("HTTP/1.1 200 OK\r\nX-Name: caf\u{e9}\r\nContent-Length: 2\r\n\r\n{}", false),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}", false),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2x\r\n\r\n{}", false),
        ("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"a\":1}", false),
        ("HTTP/1.1 200\r\nContent-Length: 2\r\n\r\n{}", false),
        ("HTTP/1.1 200 OK\nContent-Length: 2\n\n{}", false),
        ("HTTP/1.1 000 Zero\r\nContent-Length: 2\r\n\r\n{}", false),
        ("HTTP/1.1 200 OK\r\nX.Dot: 1\r\nContent-Length: 2\r\n\r\n{}", false),
        ("HTTP/1.1 200 OK\r\n Retry-After: 1\r\nContent-Length: 2\r\n\r\n{}", false),
        ("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n", false),  // head cut short
    ]

    @Test(arguments: answers.indices)
    func fastPathReadsAsHTTPParserDoes(index: Int) {
        let (answer, fast) = Self.answers[index]
        for kept in [nil, UpstreamHTTPClient.gatewayHeaders] {
            let (reference, referenceFast) = Self.parse(answer, pieces: [1], kept: kept)
            #expect(!referenceFast)
            // Bytes after a complete answer are counted from the feed it completed in: split only answers without.
            var splits = [[Int]()]
            if case .complete(let leftover) = reference.outcome, leftover > 0 {} else { splits.append([answer.utf8.count - 1]) }
            for pieces in splits {
                let (parsed, tookFast) = Self.parse(answer, pieces: pieces, kept: kept)
                #expect(parsed == reference, "\(answer.debugDescription) in pieces \(pieces)")
                // Split, the fast path needs the whole head in the first piece.
                let headLength = (answer.range(of: "\r\n\r\n").map { answer.utf8.distance(from: answer.startIndex, to: $0.upperBound) }) ?? .max
                #expect(tookFast == (fast && (pieces.isEmpty || headLength <= pieces[0])), "\(answer.debugDescription) in pieces \(pieces)")
            }
        }
    }

    @Test func fastPathAnswerThenAGeneralOneOnTheSameConnection() async throws {
        let peer = try ScriptedUpstream { index in
            index == 0 ? [.send(Self.nginxHead + #"{"data":[]}"#)]
                : [.send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n")]
        }
        defer { peer.stop() }
        let results = await UpstreamWireTests.send(peer, [UpstreamWireTests.get, UpstreamWireTests.get, UpstreamWireTests.get])
        #expect(results.map(UpstreamWireTests.text) == [#"{"data":[]}"#, "{}", "{}"])
        #expect(peer.connections == 1)
    }
}
