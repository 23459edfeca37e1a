import Foundation
import Testing
@testable import PosternHTTP
import PosternTesting

/// RFC 9112 details at the wire (issue 34), through real sockets: a quoted-pair in a chunk extension is valid
/// (§7.1.1); a TAB in the request target (§3.2) and an obs-fold (§5.2) are refused with 400 and a close, as Node and
/// nginx do. The strict framing of HTTPFramingTests stays.
extension HTTPServerTests {
    /// Chunked bodies whose extensions hold quoted-pairs, whole and cut at every byte: the body arrives decoded.
    @Test(arguments: [
        "5;a=\"b\\\"c\"\r\nhello\r\n0\r\n\r\n",
        "5;a=\"\\\\\";b=\"x\\ty\"\r\nhello\r\n0\r\n\r\n",
        "2;a=\"\\\"\"\r\nhe\r\n3;q=\"\\\\\\\"\"\r\nllo\r\n0;z=\"\\a\"\r\n\r\n",
    ])
    func aQuotedPairInAChunkExtensionIsAccepted(_ chunks: String) throws {
        let head = "POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n"
        let raw = Array((head + chunks).utf8)
        try HTTPServerTests.withServer(handler: HTTPServerTests.echo) { server in
            let client = RawHTTPClient(port: server.port)
            try client.sendRaw(raw)
            let answer = try client.readResponse()
            #expect(answer.status == 200 && answer.text == "POST /p||hello", "\(answer.status) \(answer.text)")
        }
        // Cut at every offset into two reads (the backslash last in the first one, too): the same body.
        for cut in 1..<raw.count {
            let assembler = HTTPRequestAssembler(limits: ServerLimits(), peer: "127.0.0.1")
            var body: Data?
            for piece in [Array(raw[..<cut]), Array(raw[cut...])] {
                var offset = 0
                while offset < piece.count {
                    let (parsed, step) = piece[offset...].withUnsafeBytes { assembler.parse($0.baseAddress!, count: $0.count) }
                    offset += parsed
                    switch step {
                    case .needMore: break
                    case .request(let request, _, _): body = request.body
                    case .refused(let refusal): Issue.record("cut \(cut): refused \(refusal)"); return
                    }
                }
            }
            #expect(body == Data("hello".utf8), "cut \(cut)")
        }
    }

    /// A backslash quoting a CR, an LF or a control character, or a backslash outside a quoted value, stays refused.
    @Test(arguments: [
        "5;a=\"b\\\r\nc\"\r\nhello\r\n0\r\n\r\n",
        "5;a=\"b\\\u{1}c\"\r\nhello\r\n0\r\n\r\n",
        "5;a=b\\c\r\nhello\r\n0\r\n\r\n",
    ])
    func aBadQuotedPairIsStillA400(_ chunks: String) throws {
        try HTTPServerTests.expectRefusedAs400("POST /p HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks)
    }

    /// A TAB inside the request target is a 400 (llhttp, not strict, took it into the path).
    @Test(arguments: ["GET /a\tb HTTP/1.1\r\nHost: x\r\n\r\n", "GET /a?q=\t HTTP/1.1\r\nHost: x\r\n\r\n",
                      "GET /\t HTTP/1.1\r\nHost: x\r\n\r\n"])
    func aTabInTheRequestTargetIsA400(_ raw: String) throws {
        try HTTPServerTests.expectRefusedAs400(raw)
    }

    /// obs-fold: a header line starting with SP or HTAB is a 400 (llhttp unfolded it into the value before).
    @Test(arguments: [
        "GET / HTTP/1.1\r\nHost: x\r\nX-Probe: a\r\n b\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: x\r\nX-Probe: a\r\n\tb\r\n\r\n",
        "GET / HTTP/1.1\r\nHost: x\r\nX-Probe:\r\n b\r\n\r\n",
        "GET / HTTP/1.1\r\n Host: x\r\n\r\n",
        "POST / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n0\r\nX-Trailer: a\r\n b\r\n\r\n",
    ])
    func anObsFoldIsA400(_ raw: String) throws {
        try HTTPServerTests.expectRefusedAs400(raw)
    }

    /// Whitespace where it belongs is not an obs-fold: inside values, around them, and at the start of a body.
    @Test func whitespaceThatIsNoFoldStillPasses() throws {
        try HTTPServerTests.withServer(handler: HTTPServerTests.echo) { server in
            let client = RawHTTPClient(port: server.port)
            try client.sendRaw(Array("POST /p HTTP/1.1\r\nHost: x\r\nX-Probe: \t a b \t\r\nContent-Length: 3\r\n\r\n  x".utf8))
            let answer = try client.readResponse()
            #expect(answer.status == 200 && answer.text == "POST /p|a b|  x", "\(answer.text)")
            try client.sendRaw(Array("POST /c HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n3\r\n  y\r\n0\r\n\r\n".utf8))
            let chunked = try client.readResponse()
            #expect(chunked.status == 200 && chunked.text == "POST /c||  y", "\(chunked.text)")
        }
    }
}
