import Foundation
import Synchronization
import Testing
@testable import PosternHTTP
import PosternTesting

/// The client side of the wire layer through real sockets (docs/api.md, Upstream and edge rules, and Limits and
/// defaults): RFC 9112's line breaks and chunk framing exactly, one valid Host, HTTP/1.0 with Transfer-Encoding
/// closed, the absolute form taken, every byte counted against a limit, bytes outside a request not counted as
/// activity, every request before a client's FIN answered, and a crowd waiting its turn instead of overflowing.
@Suite struct ClientWireTests {
    private static let chunkedHead = "POST /c HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n"

    /// A chunk's data must be followed by exactly CRLF, and the last chunk's section must end in CRLF: llhttp (not
    /// strict) took any two bytes there, and a bare LF as the last line. (And a chunk size past 64 bits is refused.)
    @Test(arguments: [
        chunkedHead + "2\r\nxxZZ0\r\n\r\n",
        chunkedHead + "2\r\nxx\r\n0\r\n\n",
        chunkedHead + "2\r\nxx\n0\r\n\r\n",
        chunkedHead + "2\r\nxx\r\n0\r\nX-T: 1\n\r\n",
        chunkedHead + "1FFFFFFFFFFFFFFFF\r\nxx\r\n0\r\n\r\n",
    ])
    func chunkFramingIsCRLFExactly(_ raw: String) throws {
        try HTTPServerTests.expectRefusedAs400(raw)
        // The same bytes one at a time: the CRLF after a chunk's data may come in a read of its own.
        try expectRefusedByteByByte(raw)
    }

    /// A smuggling payload of the review's kind: a front end that ends chunk data at a bare LF reads one request
    /// (a 0x40-byte chunk holding the hidden one); llhttp, not strict, skipped any two bytes after chunk data (`\n4`),
    /// read `0` as the last chunk and then the hidden request as a second one, which reached the handler. Postern
    /// answers one 400 and closes; the hidden request never reaches a handler.
    @Test func aRequestHiddenBehindABareLFIsNeverHandled() throws {
        let hidden = "GET /hidden HTTP/1.1\r\nHost: a\r\nX-Pad: " + String(repeating: "p", count: 20) + "\r\n\r\n"
        #expect(hidden.utf8.count + 2 == 0x40)
        let raw = ClientWireTests.chunkedHead + "2\r\nxx\n40\r\n\r\n" + hidden + "\r\n0\r\n\r\n"
        let seen = Mutex<[String]>([])
        try HTTPServerTests.withServer(handler: { request in
            seen.withLock { $0.append(request.path) }
            return await HTTPServerTests.echo(request)
        }) { server in
            let client = RawHTTPClient(port: server.port)
            try client.sendRaw(Array(raw.utf8))
            #expect(try client.readResponse().status == 400)
            #expect(client.waitForClose(seconds: 5))
        }
        #expect(seen.withLock { $0 }.isEmpty)
    }

    /// No bare LF and no bare CR anywhere in a head (llhttp took an LF alone after the request line, and a CR
    /// followed by anything as the end of the head).
    @Test(arguments: [
        "GET / HTTP/1.1\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n\n",
        "GET / HTTP/1.1\r\nHost: a\r\n\rX",
        "\nGET / HTTP/1.1\r\nHost: a\r\n\r\n",
    ])
    func lineBreaksInTheHeadAreCRLF(_ raw: String) throws {
        try HTTPServerTests.expectRefusedAs400(raw)
    }

    /// RFC 9112 §3.2: an HTTP/1.1 request without Host, any request with two, or one whose value is not a host, is
    /// a 400; an HTTP/1.0 request may omit it, and names, IPv6 literals, ports and the empty value are valid.
    @Test(arguments: [
        ("GET /x HTTP/1.1\r\n\r\n", 400),
        ("GET /x HTTP/1.1\r\nHost: a\r\nHost: a\r\n\r\n", 400),
        ("GET /x HTTP/1.1\r\nHost: a b\r\n\r\n", 400),
        ("GET /x HTTP/1.1\r\nHost: a/b\r\n\r\n", 400),
        ("GET /x HTTP/1.1\r\nHost: a:8o\r\n\r\n", 400),
        ("GET /x HTTP/1.1\r\nHost: [::1\r\n\r\n", 400),
        ("GET /x HTTP/1.0\r\n\r\n", 200),
        ("GET /x HTTP/1.1\r\nHost: example.com:8080\r\n\r\n", 200),
        ("GET /x HTTP/1.1\r\nHost: [::1]:80\r\n\r\n", 200),
        ("GET /x HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n", 200),
        ("GET /x HTTP/1.1\r\nHost:\r\n\r\n", 200),
    ])
    func oneValidHost(_ raw: String, _ status: Int) throws {
        try HTTPServerTests.withServer(handler: HTTPServerTests.echo) { server in
            let client = RawHTTPClient(port: server.port)
            try client.sendRaw(Array(raw.utf8))
            let answer = try client.readResponse()
            #expect(answer.status == status)
            if status == 400 {
                #expect(answer.json?["code"] == .string("invalid_request"))
                #expect(client.waitForClose(seconds: 5))
            }
        }
    }

    /// RFC 9112 §6.1: an HTTP/1.0 request with Transfer-Encoding is answered, then the connection closes, even
    /// when it asked for keep-alive.
    @Test func http10WithTransferEncodingIsAnsweredThenClosed() throws {
        try HTTPServerTests.withServer(handler: HTTPServerTests.echo) { server in
            let client = RawHTTPClient(port: server.port)
            try client.sendRaw(Array(("POST /te HTTP/1.0\r\nHost: a\r\nConnection: keep-alive\r\nTransfer-Encoding: chunked\r\n\r\n"
                + "3\r\nabc\r\n0\r\n\r\nGET /next HTTP/1.0\r\nConnection: keep-alive\r\n\r\n").utf8))
            let answer = try client.readResponse()
            #expect(answer.text == "POST /te||abc")
            #expect(answer.headers["Connection"] == "close")
            #expect(client.waitForClose(seconds: 5))
        }
    }

    /// RFC 9112 §3.2.2: a server must accept the absolute form; the path (and query) is what is routed.
    @Test(arguments: [
        ("GET http://example.com/api/v1/books?limit=2 HTTP/1.1", "GET /api/v1/books?limit=2||"),
        ("GET HTTPS://example.com:8443/a HTTP/1.1", "GET /a||"),
        ("GET http://example.com HTTP/1.1", "GET /||"),
        ("GET http://example.com?q=1 HTTP/1.1", "GET /?q=1||"),
    ])
    func absoluteFormTargetsAreAccepted(_ line: String, _ echoed: String) throws {
        try HTTPServerTests.withServer(handler: HTTPServerTests.echo) { server in
            let client = RawHTTPClient(port: server.port)
            try client.sendRaw(Array("\(line)\r\nHost: example.com\r\n\r\n".utf8))
            #expect(try client.readResponse().text == echoed)
        }
    }

    /// Every request that arrived whole before the client's FIN is answered, in order (a POST among them runs).
    @Test(arguments: [["GET /1", "GET /2", "GET /3"], ["GET /1", "POST /2", "GET /3"]])
    func requestsBeforeAFINAreAllAnswered(_ lines: [String]) throws {
        let handled = Mutex<[String]>([])
        try HTTPServerTests.withServer(handler: { request in
            // The first answer takes a while: the FIN arrives while it is being handled.
            if request.path == "/1" { try? await Task.sleep(for: .milliseconds(50)) }
            handled.withLock { $0.append("\(request.method) \(request.path)") }
            return await HTTPServerTests.echo(request)
        }) { server in
            let client = RawHTTPClient(port: server.port)
            let raw = lines.map { line in
                line.hasPrefix("POST") ? "\(line) HTTP/1.1\r\nHost: a\r\nContent-Length: 4\r\n\r\nbody" : "\(line) HTTP/1.1\r\nHost: a\r\n\r\n"
            }.joined()
            try client.sendRaw(Array(raw.utf8))
            client.shutdownWrite()
            let answers = try lines.map { _ in try client.readResponse().text }
            #expect(answers == lines.map { $0.hasPrefix("POST") ? "\($0)||body" : "\($0)||" })
            #expect(client.waitForClose(seconds: 5))
        }
        #expect(handled.withLock { $0 } == lines)
    }

    /// A FIN after part of a request: the whole ones before it are answered, the partial one is dropped.
    @Test func aRequestCutShortByAFINIsDropped() throws {
        try HTTPServerTests.withServer(handler: HTTPServerTests.echo) { server in
            let client = RawHTTPClient(port: server.port)
            try client.sendRaw(Array("GET /whole HTTP/1.1\r\nHost: a\r\n\r\nGET /cut HTTP/1.1\r\nHo".utf8))
            client.shutdownWrite()
            #expect(try client.readResponse().text == "GET /whole||")
            #expect(client.waitForClose(seconds: 5))
        }
    }

    /// Empty lines before a request count against the head's limit (16 KiB by default), whitespace before a value
    /// and the line breaks of many short lines too: only names and values were counted (4,000 × `a: b`, 24 KB,
    /// passed).
    @Test(arguments: [
        String(repeating: "\r\n", count: 9000) + "GET / HTTP/1.1\r\nHost: a\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\nX-A:" + String(repeating: " ", count: 20000) + "v\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: a\r\n" + String(repeating: "a: b\r\n", count: 4000) + "\r\n",
    ])
    func everyByteBeforeTheBodyCountsAgainstTheHeadLimit(_ raw: String) throws {
        try HTTPServerTests.expectRefusedAs400(raw)
    }

    /// A few empty lines before a request are fine (RFC 9112 §2.2).
    @Test func aFewEmptyLinesBeforeARequestAreSkipped() throws {
        try HTTPServerTests.withServer(handler: HTTPServerTests.echo) { server in
            let client = RawHTTPClient(port: server.port)
            try client.sendRaw(Array("\r\n\r\nGET /after HTTP/1.1\r\nHost: a\r\n\r\n".utf8))
            #expect(try client.readResponse().text == "GET /after||")
        }
    }

    /// A chunked body's size lines and extensions count against the body's limit with its data: 413.
    @Test func chunkExtensionsCountAgainstTheBodyLimit() throws {
        var limits = ServerLimits()
        limits.bodyCeiling = 1024
        try HTTPServerTests.withServer(limits, handler: HTTPServerTests.echo) { server in
            let small = RawHTTPClient(port: server.port)
            try small.sendRaw(Array((ClientWireTests.chunkedHead + "1;e=1\r\nx\r\n0\r\n\r\n").utf8))
            #expect(try small.readResponse().text == "POST /c||x")

            let client = RawHTTPClient(port: server.port)
            let extensions = (0..<20).map { _ in "1;ext=\(String(repeating: "e", count: 100))\r\nx\r\n" }.joined()
            try client.sendRaw(Array((ClientWireTests.chunkedHead + extensions + "0\r\n\r\n").utf8))
            let answer = try client.readResponse()
            #expect(answer.status == 413)
            #expect(client.waitForClose(seconds: 5))
        }
    }

    /// A connection that sends only empty lines is closed after the inactivity timeout like a silent one: bytes
    /// outside a request are no activity (it was kept open for as long as it trickled them).
    @Test func emptyLinesAloneDoNotKeepAConnectionOpen() throws {
        var limits = ServerLimits()
        limits.inactivityTimeoutMilliseconds = 300
        try HTTPServerTests.withServer(limits, handler: HTTPServerTests.echo) { server in
            let client = RawHTTPClient(port: server.port)
            var closedWhileTrickling = false
            // Up to 4 s of an empty line every 50 ms: the server must close within its 300 ms (plus its sweep).
            for _ in 0..<80 {
                do {
                    try client.sendRaw([13, 10])
                } catch {
                    closedWhileTrickling = true
                    break
                }
                usleep(50_000)
            }
            #expect(closedWhileTrickling)
        }
    }

    /// More clients than a worker hands to its handler at once (`ServerLimits.maxHandling`): the rest wait their
    /// turn and every one is answered, none refused, never more than the cap handled at once.
    @Test func aCrowdWaitsItsTurnAndIsAnswered() throws {
        var limits = ServerLimits()
        limits.maxHandling = 2
        let running = Atomic<Int>(0)
        let most = Atomic<Int>(0)
        try HTTPServerTests.withServer(limits, handler: { request in
            let now = running.add(1, ordering: .relaxed).newValue
            _ = most.max(now, ordering: .relaxed)
            try? await Task.sleep(for: .milliseconds(20))
            running.subtract(1, ordering: .relaxed)
            return await HTTPServerTests.echo(request)
        }) { server in
            let answers = Mutex<[String]>([])
            DispatchQueue.concurrentPerform(iterations: 12) { i in
                let client = RawHTTPClient(port: server.port)
                let text = (try? client.request("GET", "/\(i)"))?.text ?? "failed"
                answers.withLock { $0.append(text) }
            }
            #expect(answers.withLock { $0 }.sorted() == (0..<12).map { "GET /\($0)||" }.sorted())
        }
        #expect(most.load(ordering: .relaxed) <= 2)
        #expect(most.load(ordering: .relaxed) >= 1)
    }

    /// Sends `raw` one byte per write and expects a 400 and the connection closed.
    private func expectRefusedByteByByte(_ raw: String) throws {
        try HTTPServerTests.withServer(handler: HTTPServerTests.echo) { server in
            let client = RawHTTPClient(port: server.port)
            for byte in raw.utf8 {
                do { try client.sendRaw([byte]) } catch { break }  // refused before the last byte: the server may close
            }
            let answer = try client.readResponse()
            #expect(answer.status == 400)
            #expect(client.waitForClose(seconds: 5))
        }
    }
}
