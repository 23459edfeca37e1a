import Foundation
import Testing
@testable import PosternHTTP
import PosternTesting

/// What the `http_request_stream` fuzz target found in the server's request parsing, through real sockets.
extension HTTPServerTests {
    /// A control character as the first byte of a header value (http-parser checks all but that one) is a 400,
    /// and the handler never sees the request.
    @Test(arguments: ["X-Probe: \u{0}evil", "X-Probe:\u{1}", "X-Probe: \u{7F}x"])
    func aControlCharacterStartingAHeaderValueIsA400(_ line: String) throws {
        try HTTPServerTests.expectRefusedAs400("GET / HTTP/1.1\r\nHost: x\r\n\(line)\r\n\r\n")
    }

    /// Whitespace in a header name or before its colon is a 400 (RFC 9112 §5.1), and so is a line with no name:
    /// http-parser took `Content-Length :3` as a Content-Length, and so read a body on a HEAD that the framing
    /// rules never saw; llhttp takes `X Probe` and an empty name.
    @Test(arguments: [
        "HEAD / HTTP/1.1\r\nHost: x\r\nContent-Length :3\r\n\r\nabc",
        "POST / HTTP/1.1\r\nHost: x\r\nContent-Length : 3\r\nContent-Length: 3\r\n\r\nabc",
        "GET / HTTP/1.1\r\nHost: x\r\nX Probe: v\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: x\r\n: v\r\n\r\n",
    ])
    func whitespaceInAHeaderNameIsA400(_ raw: String) throws {
        try HTTPServerTests.expectRefusedAs400(raw)
    }

    /// A field whose name only begins with `Transfer-Encoding` is an ordinary header: the request is framed by
    /// its Content-Length (http-parser took it for a Transfer-Encoding and refused the pair).
    @Test func aHeaderNamedLikeTransferEncodingIsAnOrdinaryHeader() throws {
        try HTTPServerTests.withServer(handler: HTTPServerTests.echo) { server in
            let client = RawHTTPClient(port: server.port)
            try client.sendRaw(Array("POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encodings: x\r\nContent-Length: 4\r\n\r\nbody".utf8))
            let answer = try client.readResponse()
            #expect(answer.status == 200)
            #expect(answer.text == "POST /p||body")
            #expect(try client.request("GET", "/next").text == "GET /next||")
        }
    }
}

/// What the `http_response_stream` fuzz target found in the upstream client's answer parser, through real sockets.
extension UpstreamWireTests {
    /// A status line whose code is not HTTP's (`000`, two digits, 600 and above) is a bad response, and so is
    /// an answer framed both ways.
    @Test(arguments: [
        "HTTP/1.1 000 OK\r\nContent-Length: 2\r\n\r\n{}",
        "HTTP/1.1 30 304\r\nContent-Length: 2\r\n\r\n{}",
        "HTTP/1.1 600 Nope\r\nContent-Length: 2\r\n\r\n{}",
        "HTTP/1.1 999 Nope\r\n\r\n",
        // A field name with a space before its colon (`Transfer-Encoding :`) is refused.
        "HTTP/1.1 200 OK\r\nTransfer-Encoding : chunked\r\nContent-Length: 2\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    ])
    func statusOutsideHTTPsCodesIsABadResponse(_ answer: String) async throws {
        try await Self.expectBadResponse(answer)
    }

    /// 204 and 304 answers have no body, whatever their fields say: the answer is complete at the end of its
    /// head and the connection is reused (http-parser waited for a body by Content-Length, or until the close
    /// after a field named like Transfer-Encoding).
    @Test(arguments: [
        "HTTP/1.1 204 No Content\r\nContent-Length: 5\r\n\r\n",
        "HTTP/1.1 304 Not Modified\r\nTransfer-Encodings: x\r\n\r\n",
        "HTTP/1.1 204 No Content\r\nTransfer-Encoding-Hint: gzip\r\nContent-Length: 1\r\n\r\n",
    ])
    func bodilessAnswersEndWithTheirHead(_ answer: String) async throws {
        let peer = try ScriptedUpstream { _ in [.send(answer)] }
        defer { peer.stop() }
        let results = await Self.send(peer, [Self.get, Self.get])
        for result in results {
            let response = try result.get()
            #expect([204, 304].contains(response.status))
            #expect(response.body.isEmpty)
        }
        #expect(peer.connections == 1)
    }

    /// An interim answer's Content-Length does not give it a body: the final answer follows its head at once.
    @Test func interimAnswerWithAContentLengthIsSkippedWhole() async throws {
        let peer = try ScriptedUpstream { _ in
            [.send("HTTP/1.1 100 Continue\r\nContent-Length: 2\r\n\r\nHTTP/1.1 201 Created\r\nContent-Length: 2\r\n\r\n{}")]
        }
        defer { peer.stop() }
        let results = await Self.send(peer, [Self.post])
        let response = try results[0].get()
        #expect(response.status == 201)
        #expect(String(decoding: response.body, as: UTF8.self) == "{}")
    }
}
