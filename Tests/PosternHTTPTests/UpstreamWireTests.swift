import Foundation
import Testing
@testable import PosternHTTP
import PosternIO
import PosternTesting

/// The upstream client's HTTP/1.1 framing, through real sockets against a raw-TCP peer that writes scripted
/// answers: chunked, trickled byte by byte, delimited by the close, larger than the read buffer, malformed,
/// and answered then closed at once.
@Suite(.serialized) struct UpstreamWireTests {
    /// Sends `requests` one after another through a one-connection pool to `peer`; the results in order.
    static func send(_ peer: ScriptedUpstream, _ requests: [UpstreamRequest], keptHeaders: [StaticString]? = nil)
        async -> [Result<UpstreamResponse, UpstreamFailure>] {
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let client = UpstreamHTTPClient(loop: loop, endpoint: UpstreamEndpoint(url: peer.url)!, maxConnections: 1,
                                        keepaliveIdle: 3600, keptHeaders: keptHeaders)
        var results: [Result<UpstreamResponse, UpstreamFailure>] = []
        for request in requests {
            let result = await Task(executorPreference: loop) { () -> Result<UpstreamResponse, UpstreamFailure> in
                do throws(UpstreamFailure) {
                    return .success(try await client.send(request, timeout: 5))
                } catch {
                    return .failure(error)
                }
            }.value
            results.append(result)
        }
        return results
    }

    static let get = UpstreamRequest(method: .get, target: "/items/posts")
    static let post = UpstreamRequest(method: .post, target: "/auth/login", body: Data(#"{"a":1}"#.utf8))

    static func text(_ result: Result<UpstreamResponse, UpstreamFailure>) -> String? {
        (try? result.get()).map { String(decoding: $0.body, as: UTF8.self) }
    }

    @Test func chunkedAnswerIsJoinedAndTheConnectionReused() async throws {
        let peer = try ScriptedUpstream { _ in
            [.send("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "5\r\n{\"a\":\r\n3;ext=1\r\n\"b\"\r\n1\r\n}\r\n0\r\nX-Trailer: t\r\n\r\n")]
        }
        defer { peer.stop() }
        let results = await Self.send(peer, [Self.get, Self.get])
        #expect(results.map(Self.text) == [#"{"a":"b"}"#, #"{"a":"b"}"#])
        #expect(peer.connections == 1, "a complete chunked answer leaves the connection reusable")
        #expect(peer.requests.count == 2)
    }

    @Test func answerTrickledByteByByteIsParsedWhole() async throws {
        let body = #"{"data":{"id":7,"title":"slow"}}"#
        let peer = try ScriptedUpstream { _ in
            [.trickle("HTTP/1.1 429 Too Many\r\nretry-after: 12\r\nX-Dropped: 1\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)")]
        }
        defer { peer.stop() }
        let results = await Self.send(peer, [Self.get, Self.get], keptHeaders: ["Retry-After"])
        for result in results {
            let response = try result.get()
            #expect(response.status == 429)
            #expect(response.headers.fields.map(\.name) == ["retry-after"])
            #expect(response.headers["Retry-After"] == "12")
            #expect(String(decoding: response.body, as: UTF8.self) == body)
        }
        #expect(peer.connections == 1)
    }

    @Test func answerDelimitedByTheCloseIsCompleteAndTheConnectionNotReused() async throws {
        let peer = try ScriptedUpstream { request in
            [.send("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\r\n{\"n\":\(request.index)}"), .close]
        }
        defer { peer.stop() }
        let results = await Self.send(peer, [Self.get, Self.post])
        #expect(results.map(Self.text) == [#"{"n":0}"#, #"{"n":1}"#])
        #expect(peer.connections == 2, "a body delimited by the close ends its connection")
    }

    @Test func answerLargerThanTheReadBufferArrivesWhole() async throws {
        let size = UpstreamConnection.readBufferSize * 12 + 123
        let body = String((0..<size).map { Character(UnicodeScalar(UInt8(97 + $0 % 26))) })
        let peer = try ScriptedUpstream { request in
            request.index == 0
                ? [.send("HTTP/1.1 200 OK\r\nContent-Length: \(size)\r\n\r\n\(body)")]
                : [.send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
                    + String(size, radix: 16) + "\r\n\(body)\r\n0\r\n\r\n")]
        }
        defer { peer.stop() }
        let results = await Self.send(peer, [Self.get, Self.get])
        #expect(results.map { Self.text($0)?.count } == [size, size])
        #expect(results.map(Self.text) == [body, body])
        #expect(peer.connections == 1)
    }

    @Test(arguments: [
        "HELLO\r\n\r\n",
        "HTTP/1.1 200 OK\r\nContent-Length: 12x\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n{}\r\n0\r\n\r\n",
        "HTTP/1.1 2000 OK\r\nContent-Length: 2\r\n\r\n{}",
        "HTTP/1.1 200 OK\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}",
    ])
    func malformedAnswerIsABadResponse(_ answer: String) async throws {
        try await Self.expectBadResponse(answer)
    }

    /// A peer that sends `answer` and closes: the GET sent to it fails with `badResponse`.
    static func expectBadResponse(_ answer: String) async throws {
        let peer = try ScriptedUpstream { _ in [.send(answer), .close] }
        defer { peer.stop() }
        let results = await Self.send(peer, [Self.get])
        guard case .failure(.badResponse) = results[0] else {
            Issue.record("expected badResponse, got \(results[0])")
            return
        }
    }

    @Test func answerFollowedByAnImmediateCloseSucceedsAndTheNextCallsGoOnFreshConnections() async throws {
        // No `Connection: close`: the peer just hangs up after each answer, possibly before the client has read it.
        let peer = try ScriptedUpstream { request in
            [.send("HTTP/1.1 201 Created\r\nContent-Length: 7\r\n\r\n{\"n\":\(request.index)}"), .close]
        }
        defer { peer.stop() }
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let client = UpstreamHTTPClient(loop: loop, endpoint: UpstreamEndpoint(url: peer.url)!, maxConnections: 1,
                                        keepaliveIdle: 3600)
        @Sendable func call(_ request: UpstreamRequest) async -> Result<UpstreamResponse, UpstreamFailure> {
            await Task(executorPreference: loop) { () -> Result<UpstreamResponse, UpstreamFailure> in
                do throws(UpstreamFailure) {
                    return .success(try await client.send(request, timeout: 5))
                } catch {
                    return .failure(error)
                }
            }.value
        }
        #expect(Self.text(await call(Self.post)) == #"{"n":0}"#)
        // Once the peer's close has reached the gateway's socket, a POST must not go out on that connection.
        try await eventually("peer.closes == 1") { peer.closes == 1 }
        #expect(Self.text(await call(Self.post)) == #"{"n":1}"#)
        #expect(peer.requests.count == 2, "the second POST was not lost on the closed connection")
        // Right after the close, whether or not the gateway has seen it: a GET succeeds (a fresh connection, or
        // one retry).
        let last = try await call(Self.get).get()
        #expect(last.status == 201)
        #expect(peer.requests.last?.hasPrefix("GET ") == true)
        #expect(peer.connections == peer.requests.count)
    }

    @Test func connectionThePeerClosesWhileIdleLeavesThePool() async throws {
        let peer = try ScriptedUpstream { _ in [.send("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}"), .close] }
        defer { peer.stop() }
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let client = UpstreamHTTPClient(loop: loop, endpoint: UpstreamEndpoint(url: peer.url)!, maxConnections: 2,
                                        keepaliveIdle: 3600)
        let status = try await Task(executorPreference: loop) { try await client.send(Self.get, timeout: 5).status }.value
        #expect(status == 200)
        try await eventually("peer.closes == 1") { peer.closes == 1 }
        // Without a request on it, the pool notices the close and forgets the connection.
        try await eventually("loop.runAndWait { client.openConnections } == 0") { loop.runAndWait { client.openConnections } == 0 }
    }

    @Test func requestIsSerializedWithHostLengthAndHeaders() async throws {
        let peer = try ScriptedUpstream { _ in [.send("HTTP/1.1 204 No Content\r\n\r\n")] }
        defer { peer.stop() }
        var request = Self.post
        request.headers.add("X-Request-Id", "abc")
        request.headers.add("X-Bad", "a\r\nInjected: 1")
        let results = await Self.send(peer, [request, UpstreamRequest(method: .delete, target: "/items/posts/1")])
        #expect(results.map { (try? $0.get())?.status } == [204, 204])
        let first = peer.requests.first ?? ""
        #expect(first.hasPrefix("POST /auth/login HTTP/1.1\r\nHost: 127.0.0.1:\(peer.port)\r\n"), "\(first)")
        #expect(first.contains("\r\nX-Request-Id: abc\r\n"))
        #expect(first.contains("\r\nContent-Length: 7\r\n"))
        #expect(!first.contains("Injected"), "a header holding CR/LF is not sent")
        #expect(first.hasSuffix("\r\n\r\n" + #"{"a":1}"#))
        #expect(peer.requests.last?.hasPrefix("DELETE /items/posts/1 HTTP/1.1\r\n") == true)
        #expect(peer.connections == 1, "a 204 has no body: the connection is reused")
    }
}

extension UpstreamWireTests {
    // MARK: Answer headers

    @Test func longAndSplitHeaderFieldsAreKeptWhole() async throws {
        let longName = "X-" + String(repeating: "N", count: 300)
        let longValue = String(repeating: "v", count: 700)
        let peer = try ScriptedUpstream { _ in
            [.send("HTTP/1.1 503 Busy\r\n\(longName): \(longValue)\r\nRetry-After: 7\r\nContent-Length: 2\r\n\r\n{}")]
        }
        defer { peer.stop() }
        let all = await Self.send(peer, [Self.get])
        let response = try all[0].get()
        #expect(response.headers.fields.map(\.name) == [longName, "Retry-After", "Content-Length"])
        #expect(response.headers[longName] == longValue)
        let kept = await Self.send(peer, [Self.get], keptHeaders: ["Retry-After"])
        #expect(try kept[0].get().headers.fields.map { "\($0.name): \($0.value)" } == ["Retry-After: 7"])
    }
}
