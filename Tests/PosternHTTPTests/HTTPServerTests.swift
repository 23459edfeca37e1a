import Foundation
import Synchronization
import Testing
@testable import PosternHTTP
import PosternIO
import PosternTesting

/// The server's own connection handling, through real sockets: pipelining, requests in pieces, its own
/// refusals (JSON, then close), chunked bodies, slow readers, clients that go away, HTTP/1.0, 100-continue.
@Suite struct HTTPServerTests {
    /// A server on one loop with `handler`, stopped by `body`'s end.
    static func withServer(_ limits: ServerLimits = ServerLimits(), handler: @escaping HTTPHandler,
                           _ body: (HTTPServer) throws -> Void) throws {
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let server = HTTPServer(group: group, limits: limits, handler: handler)
        try server.start(host: "127.0.0.1", port: 0)
        defer { server.shutdown(grace: 1) }
        try body(server)
    }

    /// Answers `METHOD target|x-probe header|body`.
    static let echo: HTTPHandler = { request in
        let text = "\(request.method) \(request.path)\(request.query.isEmpty ? "" : "?" + request.query)|\(request.headers["X-Probe"] ?? "")|"
        return HTTPResponse(status: 200, body: Data(text.utf8) + request.body)
    }

    /// Sends `raw` to a new server and expects the server's own refusal: 400 `invalid_request`, the connection
    /// closed, the handler never called; then `after` (e.g. a later request on a new connection).
    static func expectRefusedAs400(_ raw: String, after: (HTTPServer) throws -> Void = { _ in }) throws {
        let called = Atomic<Int>(0)
        try withServer(handler: { request in
            called.add(1, ordering: .relaxed)
            return await HTTPServerTests.echo(request)
        }) { server in
            let client = RawHTTPClient(port: server.port)
            try client.sendRaw(Array(raw.utf8))
            let answer = try client.readResponse()
            #expect(answer.status == 400)
            #expect(answer.json?["code"] == .string("invalid_request"))
            #expect(client.waitForClose(seconds: 5))
            #expect(called.load(ordering: .relaxed) == 0)
            try after(server)
        }
    }

    @Test func pipelinedRequestsInOneWriteAreAnsweredInOrderOneAtATime() throws {
        let running = Atomic<Int>(0)
        let most = Atomic<Int>(0)
        try HTTPServerTests.withServer(handler: { request in
            let now = running.add(1, ordering: .relaxed).newValue
            _ = most.max(now, ordering: .relaxed)
            // The first answer takes longest: answered out of order, it would come after the others.
            if request.path == "/first" { for _ in 0..<200 { await Task.yield() } }
            running.subtract(1, ordering: .relaxed)
            return await HTTPServerTests.echo(request)
        }) { server in
            let client = RawHTTPClient(port: server.port)
            var bytes = ""
            for path in ["/first", "/second", "/third"] {
                bytes += "GET \(path) HTTP/1.1\r\nHost: x\r\n\r\n"
            }
            bytes += "POST /fourth HTTP/1.1\r\nHost: x\r\nContent-Length: 4\r\n\r\nbody"
            try client.sendRaw(Array(bytes.utf8))
            let texts = try (0..<4).map { _ in try client.readResponse().text }
            #expect(texts == ["GET /first||", "GET /second||", "GET /third||", "POST /fourth||body"])
            #expect(most.load(ordering: .relaxed) == 1)
            #expect(try client.request("GET", "/after").text == "GET /after||")
        }
    }

    @Test func requestsArrivingWhileOthersAreAnsweredEachGetTheirOwnAnswer() throws {
        // Each handler waits for an upstream answer, read on the server's loop like the new requests: in one turn,
        // runners finish answers while other connections' requests wait for a runner. A runner that has answered
        // takes a waiting request; the rest go to idle runners or new ones. Every client must get its own answers.
        let upstreamGroup = EventLoopGroup(count: 1)
        defer { upstreamGroup.shutdown() }
        let upstream = HTTPServer(group: upstreamGroup, handler: HTTPServerTests.echo)
        try upstream.start(host: "127.0.0.1", port: 0)
        defer { upstream.shutdown(grace: 1) }
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let client = UpstreamHTTPClient(loop: group.loops[0],
                                        endpoint: UpstreamEndpoint(url: "http://127.0.0.1:\(upstream.port)")!,
                                        maxConnections: 8, keepaliveIdle: 3600, pipelineDepth: 4)
        let server = HTTPServer(group: group) { request in
            do throws(UpstreamFailure) {
                let answer = try await client.send(UpstreamRequest(method: .get, target: request.path), timeout: 5)
                return HTTPResponse(status: answer.status, body: answer.body)
            } catch {
                return HTTPResponse(status: 502, body: Data("\(error)".utf8))
            }
        }
        try server.start(host: "127.0.0.1", port: 0)
        defer { server.shutdown(grace: 1) }
        let clients = 24
        let requests = 40
        let wrong = Atomic<Int>(0)
        let answered = Atomic<Int>(0)
        DispatchQueue.concurrentPerform(iterations: clients) { c in
            let connection = RawHTTPClient(port: server.port)
            for r in 0..<requests {
                let path = "/c\(c)/r\(r)"
                if (try? connection.request("GET", path).text) == "GET \(path)||" {
                    answered.add(1, ordering: .relaxed)
                } else {
                    wrong.add(1, ordering: .relaxed)
                }
            }
        }
        #expect(wrong.load(ordering: .relaxed) == 0)
        #expect(answered.load(ordering: .relaxed) == clients * requests)
        #expect(server.inFlight == 0)
    }

    @Test func aRequestSentByteByByteArrivesWhole() throws {
        try HTTPServerTests.withServer(handler: HTTPServerTests.echo) { server in
            let client = RawHTTPClient(port: server.port)
            try client.connect()
            let raw = "PATCH /items/7?fields=a%2Cb HTTP/1.1\r\nHost: x\r\nX-Probe: split value\r\nContent-Length: 11\r\n\r\nhello world"
            for byte in raw.utf8 { try client.sendRaw([byte]) }
            let answer = try client.readResponse()
            #expect(answer.status == 200)
            #expect(answer.text == "PATCH /items/7?fields=a%2Cb|split value|hello world")
            #expect(try client.request("GET", "/again").text == "GET /again||")
        }
    }

    @Test func aChunkedBodyIsDecoded() throws {
        try HTTPServerTests.withServer(handler: HTTPServerTests.echo) { server in
            let client = RawHTTPClient(port: server.port)
            try client.sendRaw(Array("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n".utf8))
            try client.sendRaw(Array("1;ext=1\r\n \r\n6\r\nworld!\r\n0\r\n\r\n".utf8))
            let answer = try client.readResponse()
            #expect(answer.status == 200)
            #expect(answer.text == "POST /c||hello world!")
        }
    }

    @Test func headersAboveTheLimitAreAJSONErrorAndClose() throws {
        var limits = ServerLimits()
        limits.maxHeaderBytes = 2048
        let called = Atomic<Int>(0)
        try HTTPServerTests.withServer(limits, handler: { request in
            called.add(1, ordering: .relaxed)
            return await HTTPServerTests.echo(request)
        }) { server in
            let client = RawHTTPClient(port: server.port)
            let filler = (0..<40).map { "X-Filler-\($0): \(String(repeating: "a", count: 100))\r\n" }.joined()
            try client.sendRaw(Array("GET /big HTTP/1.1\r\nHost: x\r\n\(filler)\r\n".utf8))
            let answer = try client.readResponse()
            #expect(answer.status == 400)
            #expect(answer.headers["Content-Type"]?.hasPrefix("application/json") == true)
            #expect(answer.json?["code"] == .string("invalid_request"))
            #expect(answer.headers["Connection"] == "close")
            #expect(client.waitForClose(seconds: 5))
            #expect(called.load(ordering: .relaxed) == 0)
        }
    }

    @Test(arguments: [false, true])
    func aBodyAboveTheCeilingIs413JSONAndClose(_ chunked: Bool) throws {
        var limits = ServerLimits()
        limits.bodyCeiling = 1000
        let called = Atomic<Int>(0)
        try HTTPServerTests.withServer(limits, handler: { request in
            called.add(1, ordering: .relaxed)
            return await HTTPServerTests.echo(request)
        }) { server in
            let client = RawHTTPClient(port: server.port)
            let body = String(repeating: "b", count: 3000)
            let head = chunked ? "Transfer-Encoding: chunked\r\n\r\n\(String(body.utf8.count, radix: 16))\r\n" : "Content-Length: 3000\r\n\r\n"
            try client.sendRaw(Array("POST /up HTTP/1.1\r\nHost: x\r\n\(head)\(body)".utf8))
            let answer = try client.readResponse()
            #expect(answer.status == 413)
            #expect(answer.json?["code"] == .string("payload_too_large"))
            #expect(answer.headers["Connection"] == "close")
            #expect(client.waitForClose(seconds: 5))
            #expect(called.load(ordering: .relaxed) == 0)
            // A body within the ceiling still passes.
            let fine = RawHTTPClient(port: server.port)
            #expect(try fine.request("POST", "/ok", body: Data(repeating: 0x61, count: 1000)).body.count == "POST /ok||".utf8.count + 1000)
        }
    }

    @Test func aSlowReaderGetsTheWholeLargeBody() throws {
        let large = Data((0..<(24 * 1024 * 1024)).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ $0 >> 13) })
        try HTTPServerTests.withServer(handler: { request in
            request.path == "/large" ? HTTPResponse(status: 200, body: large) : await HTTPServerTests.echo(request)
        }) { server in
            let client = RawHTTPClient(port: server.port)
            try client.sendRaw(Array("GET /large HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            // 24 MiB do not fit the socket buffers: the server writes until EAGAIN and finishes on the write event.
            let answer = try client.readResponse()
            #expect(answer.status == 200)
            #expect(answer.body.count == large.count)
            #expect(answer.body == large)
            #expect(try client.readResponse().text == "GET /next||")
        }
    }

    @Test func aClientClosingMidRequestLeavesNothingBehind() async throws {
        let gate = UpstreamGate()
        gate.close { $0.path == "/held" }
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let server = HTTPServer(group: group) { request in
            await gate.pass(request)
            return await HTTPServerTests.echo(request)
        }
        try server.start(host: "127.0.0.1", port: 0)
        defer { server.shutdown(grace: 1) }

        // Half a request, then gone.
        let partial = RawHTTPClient(port: server.port)
        try partial.sendRaw(Array("POST /p HTTP/1.1\r\nHost: x\r\nContent-Length: 10\r\n\r\nabc".utf8))
        partial.close()
        // A whole request whose answer is held, then gone before it is written.
        let waiting = RawHTTPClient(port: server.port)
        try waiting.sendRaw(Array("GET /held HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        try await eventually("the held request is in flight") { gate.heldCount == 1 && server.inFlight == 1 }
        waiting.close()
        gate.open()
        try await eventually("every connection is closed and nothing is in flight") { server.inFlight == 0 && server.openConnections == 0 }
        #expect(try RawHTTPClient(port: server.port).request("GET", "/alive").text == "GET /alive||")
    }

    @Test func http10ClosesUnlessKeepAliveIsAsked() throws {
        try HTTPServerTests.withServer(handler: HTTPServerTests.echo) { server in
            let plain = RawHTTPClient(port: server.port)
            try plain.sendRaw(Array("GET /old HTTP/1.0\r\n\r\n".utf8))
            let answer = try plain.readResponse()
            #expect(answer.text == "GET /old||")
            #expect(answer.headers["Connection"] == "close")
            #expect(plain.waitForClose(seconds: 5))

            let kept = RawHTTPClient(port: server.port)
            try kept.sendRaw(Array("GET /one HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".utf8))
            let first = try kept.readResponse()
            #expect(first.headers["Connection"] == "keep-alive")
            try kept.sendRaw(Array("GET /two HTTP/1.0\r\nConnection: keep-alive\r\n\r\n".utf8))
            #expect(try kept.readResponse().text == "GET /two||")
        }
    }

    @Test func connectionCloseFromTheClientOrTheHandlerCloses() throws {
        try HTTPServerTests.withServer(handler: { request in
            var response = await HTTPServerTests.echo(request)
            if request.path == "/bye" { response.headers.set("Connection", "close") }
            return response
        }) { server in
            let asked = RawHTTPClient(port: server.port)
            let first = try asked.request("GET", "/x", headers: ["Connection": "close"])
            #expect(first.headers["Connection"] == "close")
            #expect(asked.waitForClose(seconds: 5))
            let told = RawHTTPClient(port: server.port)
            let second = try told.request("GET", "/bye")
            #expect(second.headers["Connection"] == "close")
            #expect(told.waitForClose(seconds: 5))
        }
    }

    /// The field is read from the received bytes: its name and value in any case, the value with spaces and tabs around.
    @Test(arguments: ["Expect: 100-continue", "eXpEcT: \t100-CONTINUE "])
    func expectContinueIsAnsweredBeforeTheBody(field: String) throws {
        try HTTPServerTests.withServer(handler: HTTPServerTests.echo) { server in
            let client = try TrickleClient(port: server.port)
            _ = client.trickle([Array("PUT /e HTTP/1.1\r\nHost: x\r\n\(field)\r\nContent-Length: 5\r\n\r\n".utf8)], interval: 0)
            client.waitUntil(seconds: 5) { $0.contains("100 Continue\r\n\r\n") }
            #expect(client.replyText.hasPrefix("HTTP/1.1 100 Continue\r\n\r\n"))
            _ = client.trickle([Array("fives".utf8)], interval: 0)
            client.waitUntil(seconds: 5) { $0.hasSuffix("PUT /e||fives") }
            #expect(client.replyText.hasSuffix("PUT /e||fives"))
        }
    }

    @Test func anUnknownMethodIsAJSONErrorAndClose() throws {
        try HTTPServerTests.withServer(handler: HTTPServerTests.echo) { server in
            let client = RawHTTPClient(port: server.port)
            try client.sendRaw(Array("BREW /pot HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            let answer = try client.readResponse()
            #expect(answer.status == 400)
            #expect(answer.json?["code"] == .string("invalid_request"))
            #expect(client.waitForClose(seconds: 5))
        }
    }

    @Test func bodilessStatusesCarryNoBodyAndTheNextRequestFollows() throws {
        try HTTPServerTests.withServer(handler: { request in
            request.path == "/none" ? HTTPResponse(status: 204, body: Data("ignored".utf8)) : await HTTPServerTests.echo(request)
        }) { server in
            let client = try TrickleClient(port: server.port)
            let pipelined = "DELETE /none HTTP/1.1\r\nHost: x\r\n\r\nGET /next HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n"
            _ = client.trickle([Array(pipelined.utf8)], interval: 0)
            client.waitForClose(seconds: 5)
            let answers = client.replyText.components(separatedBy: "HTTP/1.1 ")
            #expect(answers.count == 3, "\(client.replyText)")
            #expect(answers.dropFirst().first?.hasPrefix("204 ") == true)
            #expect(answers.dropFirst().first?.hasSuffix("\r\n\r\n") == true, "no body after the 204's head")
            #expect(answers.dropFirst().first?.contains("Content-Length") == false)
            #expect(answers.last?.hasSuffix("\r\n\r\nGET /next||") == true)
        }
    }

    @Test(arguments: [
        "\u{0}\u{1}garbage\r\n\r\n",
        "GET / HTTP/9.9\r\nHost: x\r\n\r\n",
        "GET / HTTP/1.1\r\nNo colon here\r\n\r\n",
        "GET / HTTP/1.1\r\nBad\u{1}Name: v\r\n\r\n",
        "POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n",
        "GET /a b HTTP/1.1\r\n\r\n",
    ])
    func malformedRequestsAreA400AndTheServerStaysUp(_ raw: String) throws {
        try HTTPServerTests.expectRefusedAs400(raw) { server throws in
            #expect(try RawHTTPClient(port: server.port).request("GET", "/fine").text == "GET /fine||")
        }
    }

    @Test func aReplyAfterShutdownIsDroppedAndNewConnectionsAreRefused() async throws {
        let gate = UpstreamGate()
        gate.close { $0.path == "/held" }
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let answered = Atomic<Int>(0)
        let server = HTTPServer(group: group) { request in
            await gate.pass(request)
            answered.add(1, ordering: .relaxed)
            return await HTTPServerTests.echo(request)
        }
        try server.start(host: "127.0.0.1", port: 0)
        let port = server.port
        let client = RawHTTPClient(port: port)
        try client.sendRaw(Array("GET /held HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
        try await eventually("the held request is in flight") { gate.heldCount == 1 && server.inFlight == 1 }
        // The grace ends with the request still held: its connection is closed under it.
        server.shutdown(grace: 0.1)
        #expect(client.waitForClose(seconds: 5))
        gate.open()
        try await eventually("the handler answered late") { answered.load(ordering: .relaxed) == 1 }
        // The reply is handed to the closed connection in the same job on the loop: once the loop has run
        // the next job, it is done (and it did not crash the process).
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in group.loops[0].execute { done.resume() } }
        #expect(throws: (any Error).self) { try RawHTTPClient(port: port).request("GET", "/after") }
    }
}
