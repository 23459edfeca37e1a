import Foundation
import Synchronization
import Testing
@testable import PosternHTTP
import PosternIO
import PosternTesting

/// A received request's headers are read from its bytes (`HeaderBlock`) and answer every question exactly as
/// a list of strings would; the connection's reuse of that storage never changes a request still held.
@Suite struct HTTPHeaderBlockTests {
    /// A block holding `fields` (as the assembler lays them out: name, then value).
    static func block(_ fields: [(String, String)]) -> HeaderBlock {
        // A small first block, so that filling it grows it (as a large request head does).
        var block = HeaderBlock.make(capacity: 16)
        func put(_ text: String) {
            let bytes = Array(text.utf8)
            bytes.withUnsafeBytes { piece in
                if !block.append(piece) {
                    block = block.grown(adding: piece.count)
                    _ = block.append(piece)
                }
            }
        }
        for (name, value) in fields {
            let nameStart = block.byteCount
            put(name)
            let valueStart = block.byteCount
            put(value)
            let span = HeaderBlock.Span(nameStart: Int32(nameStart), nameEnd: Int32(valueStart),
                                        valueStart: Int32(valueStart), valueEnd: Int32(block.byteCount))
            if !block.add(span) {
                block = block.grown(adding: 0)
                _ = block.add(span)
            }
        }
        return block
    }

    static let sample: [(String, String)] = [
        ("Host", "x"), ("Authorization", "Bearer " + String(repeating: "t", count: 40)), ("x-forwarded-for", "1.1.1.1"),
        ("X-Forwarded-For", "2.2.2.2"), ("Empty", ""), ("X-Ünï", "välue"), ("Accept-Language", "de"),
    ]

    @Test func lookupsOnTheBytesMatchTheListOfStrings() {
        let received = HTTPHeaders(block: HTTPHeaderBlockTests.block(HTTPHeaderBlockTests.sample))
        var list = HTTPHeaders()
        for (name, value) in HTTPHeaderBlockTests.sample { list.add(name, value) }
        #expect(received == list)
        #expect(received.fields.map(\.name) == list.fields.map(\.name))
        #expect(received.fields.map(\.value) == list.fields.map(\.value))
        for name in ["host", "HOST", "Authorization", "X-FORWARDED-FOR", "empty", "X-Ünï", "x-ünï", "Accept-Languagf",
                     "Origin", "", "Hos", "Hostx", "X-Forwarded-Fox", "Accept-Language"] {
            #expect(received[name] == list[name], "\(name)")
            #expect(received.values(name) == list.values(name), "\(name)")
            #expect(received.contains(name) == list.contains(name), "\(name)")
            #expect(received.withFirstValueBytes(name) { Array($0) } == list.withFirstValueBytes(name) { Array($0) }, "\(name)")
        }
        let bridged = NSString(string: "x-Ünï") as String
        #expect(received[bridged] == "välue" && received[NSString(string: "AUTHORIZATION") as String] == list["Authorization"])
        #expect(received.values("x-forwarded-for") == ["1.1.1.1", "2.2.2.2"])
        #expect(received["Empty"] == "")
        #expect(received["X-ÜNÏ"] == nil && received["x-Ünï"] == "välue", "only ASCII letters ignore case")
        #expect(Array(received.map(\.value)) == HTTPHeaderBlockTests.sample.map(\.1))
    }

    /// `sameName` (eight bytes a step from eight bytes on) says what a byte-by-byte look says: for names of every
    /// length around the steps, each byte at each place set to every value, against the name with that byte as is,
    /// in the other case, or with another bit changed.
    @Test func sameNameComparesAsAByteByByteLookDoes() {
        func byteByByte(_ a: [UInt8], _ b: [UInt8]) -> Bool {
            zip(a, b).allSatisfy { x, y in
                x == y || (x | 0x20 == y | 0x20 && (x | 0x20) >= UInt8(ascii: "a") && (x | 0x20) <= UInt8(ascii: "z"))
            }
        }
        var failures: [String] = []
        let name = Array("Proxy-Authorization-Extra".utf8)
        for count in 1...name.count {
            for at in 0..<count {
                for byte in 0...255 {
                    var a = Array(name[..<count])
                    a[at] = UInt8(byte)
                    for flip: UInt8 in [0, 0x20, 0x01, 0x80, 0xA0, 0x40] {
                        var b = a
                        b[at] ^= flip
                        let same = a.withUnsafeBufferPointer { x in b.withUnsafeBufferPointer { y in HeaderBlock.sameName(x, y) } }
                        if same != byteByByte(a, b), failures.count < 10 { failures.append("\(a) \(b)") }
                    }
                }
            }
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    @Test func changesTurnTheBytesIntoStringsFirst() {
        let block = HTTPHeaderBlockTests.block(HTTPHeaderBlockTests.sample)
        let original = HTTPHeaders(block: block)
        var added = original
        added.add("X-New", "1")
        #expect(added.fields.count == HTTPHeaderBlockTests.sample.count + 1 && added["x-new"] == "1" && added["Host"] == "x")
        var set = original
        set.set("X-Forwarded-For", "3.3.3.3")
        #expect(set.values("X-Forwarded-For") == ["3.3.3.3"] && set.fields.last?.name == "X-Forwarded-For")
        var removed = original
        removed.remove("authorization")
        #expect(removed["Authorization"] == nil && removed.fields.count == HTTPHeaderBlockTests.sample.count - 1)
        var untouched = original
        untouched.remove("Origin")
        #expect(untouched == original)
        var reserved = original
        reserved.reserve(4)
        #expect(reserved == original && reserved.fields.map(\.name) == original.fields.map(\.name))
        #expect(original.fields.count == HTTPHeaderBlockTests.sample.count && original["Authorization"] != nil)
    }

    /// Answers every header line of the request, `name=value` per line, in order.
    static let headerEcho: HTTPHandler = { request in
        let lines = request.headers.map { "\($0.name)=\($0.value)\n" }.joined()
        return HTTPResponse(status: 200, body: Data("\(request.path)?\(request.query)\n\(lines)".utf8))
    }

    @Test func requestsOnOneConnectionEachSeeTheirOwnHeaders() throws {
        // The second head is shorter than the first and the third longer: none may show another's bytes.
        let heads = [
            "GET /a?x=1 HTTP/1.1\r\nHost: one\r\nX-Long-Name-For-A-Header: \t some value\t \r\nx-dup: 1\r\nX-Dup: 2\r\nEmpty:\r\n\r\n",
            "GET /b HTTP/1.1\r\nHost: 2\r\n\r\n",
            "GET /c?? HTTP/1.1\r\nHost: three\r\nAuthorization: Bearer \(String(repeating: "k", count: 300))\r\n\r\n",
            // Larger than the block's first room, in bytes and in fields: it grows.
            "GET /d HTTP/1.1\r\nHost: d\r\n" + (0..<60).map { "X-Field-\($0): \(String(repeating: "v", count: 40))\r\n" }.joined() + "\r\n",
        ]
        let expected = [
            "/a?x=1\nHost=one\nX-Long-Name-For-A-Header=some value\nx-dup=1\nX-Dup=2\nEmpty=\n",
            "/b?\nHost=2\n",
            "/c??\nHost=three\nAuthorization=Bearer \(String(repeating: "k", count: 300))\n",
            "/d?\nHost=d\n" + (0..<60).map { "X-Field-\($0)=\(String(repeating: "v", count: 40))\n" }.joined(),
        ]
        try HTTPServerTests.withServer(handler: HTTPHeaderBlockTests.headerEcho) { server in
            let client = RawHTTPClient(port: server.port)
            for _ in 0..<2 {
                for (head, answer) in zip(heads, expected) {
                    try client.sendRaw(Array(head.utf8))
                    #expect(try client.readResponse().text == answer)
                }
            }
            try client.sendRaw(Array(heads.joined().utf8))
            #expect(try (0..<heads.count).map { _ in try client.readResponse().text } == expected)
        }
    }

    @Test func aRequestHeldUntilTheNextOneKeepsItsHeaders() throws {
        // The handler holds each request until the next arrives (as a runner task may): the connection takes
        // its spare storage back only once free, and no held request ever reads another's bytes.
        struct State {
            var last: (request: HTTPRequest, lines: [String])?
            var seen: [[String]] = []
            var changed = 0
        }
        let state = Mutex(State())
        try HTTPServerTests.withServer(handler: { request in
            let lines = request.headers.map { "\($0.name)=\($0.value)" }
            state.withLock { s in
                if let last = s.last, last.request.headers.map({ "\($0.name)=\($0.value)" }) != last.lines { s.changed += 1 }
                s.last = (request, lines)
                s.seen.append(lines)
            }
            return HTTPResponse(status: 204)
        }) { server in
            let client = RawHTTPClient(port: server.port)
            let values = (0..<8).map { String(repeating: "\($0)", count: 1 + ($0 * 37) % 11) }
            let raw = values.enumerated().map { "GET /\($0.offset) HTTP/1.1\r\nHost: h\r\nX-V\($0.offset): \($0.element)\r\n\r\n" }.joined()
            try client.sendRaw(Array(raw.utf8))
            for _ in values { #expect(try client.readResponse().status == 204) }
            for (i, value) in values.enumerated() {
                try client.sendRaw(Array("GET /again HTTP/1.1\r\nHost: h\r\nX-W\(i): \(value)\r\n\r\n".utf8))
                #expect(try client.readResponse().status == 204)
            }
            let final = state.withLock { $0 }
            #expect(final.changed == 0)
            #expect(final.seen == values.enumerated().map { ["Host=h", "X-V\($0.offset)=\($0.element)"] }
                + values.enumerated().map { ["Host=h", "X-W\($0.offset)=\($0.element)"] })
        }
    }

    @Test func trailerFieldsOfAChunkedBodyAreNotRequestHeaders() throws {
        // A trailer is no header (RFC 9110 §6.5.1): a `Content-Length` there must not sit beside the
        // request's `Transfer-Encoding` (fuzz finding Fuzz/crashes/http_request_stream-trailer-content-length).
        try HTTPServerTests.withServer(handler: HTTPHeaderBlockTests.headerEcho) { server in
            let client = RawHTTPClient(port: server.port)
            try client.sendRaw(Array(("POST /t HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n"
                + "X-Trailer: 1\r\nContent-Length: 99999\r\nX-Last: 2\r\n\r\n").utf8))
            #expect(try client.readResponse().text == "/t?\nHost=x\nTransfer-Encoding=chunked\n")
            #expect(try client.request("GET", "/next").text == "/next?\nHost=127.0.0.1:\(server.port)\n")
        }
    }

    @Test func aRefusalAfterAWholeRequestCarriesNoneOfItsHeaders() throws {
        // Bytes that are no request at all (no method) after a whole one: the refusal is made before a new
        // request begins, and must not show the headers of the one already handed out.
        let refused = Mutex<[HTTPRequest]>([])
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let server = HTTPServer(group: group, refuse: { refusal in
            if case .badFraming(let request, _) = refusal { refused.withLock { $0.append(request) } }
            return EdgeRefusal.plainAnswer(refusal)
        }, handler: HTTPServerTests.echo)
        try server.start(host: "127.0.0.1", port: 0)
        defer { server.shutdown(grace: 1) }
        let client = RawHTTPClient(port: server.port)
        try client.sendRaw(Array("GET /a HTTP/1.1\r\nHost: x\r\nX-Request-Id: first\r\nX-Probe: p\r\n\r\n\u{1}\u{1}\r\n\r\n".utf8))
        #expect(try client.readResponse().text == "GET /a|p|")
        #expect(try client.readResponse().status == 400)
        let requests = refused.withLock { $0 }
        #expect(requests.count == 1)
        #expect(requests.first?.headers.fields.isEmpty == true)
    }

    @Test func answerHeadsOfEverySizeAreWrittenWhole() throws {
        // Small, then one larger than any buffer so far (it grows), then small again (it shrinks back).
        let sizes = [10, 200_000, 3, 70_000, 0]
        try HTTPServerTests.withServer(handler: { request in
            let size = Int(request.path.dropFirst()) ?? 0
            var headers: HTTPHeaders = ["X-Big": String(repeating: "b", count: size), "x-after": "tail"]
            headers.add("Connection", "keep-alive")
            return HTTPResponse(status: 200, headers: headers, body: Data("\(size)".utf8))
        }) { server in
            let client = RawHTTPClient(port: server.port)
            for size in sizes {
                let answer = try client.request("GET", "/\(size)")
                #expect(answer.status == 200 && answer.text == "\(size)")
                #expect(answer.headers["X-Big"]?.utf8.count == size && answer.headers["X-After"] == "tail")
                #expect(answer.headers["Date"] != nil && answer.headers["Content-Length"] == "\(size)".utf8.count.description)
                #expect(answer.headers.values("Connection").isEmpty, "the server writes Connection itself (none on keep-alive)")
            }
        }
    }

    @Test func aRequestKeptByTheHandlerKeepsItsHeadersWhileLaterOnesArrive() throws {
        let kept = Mutex<[HTTPRequest]>([])
        try HTTPServerTests.withServer(handler: { request in
            kept.withLock { $0.append(request) }
            return HTTPResponse(status: 204)
        }) { server in
            let client = RawHTTPClient(port: server.port)
            var raw = ""
            for i in 0..<5 { raw += "GET /\(i) HTTP/1.1\r\nHost: h\(i)\r\nX-Probe: \(String(repeating: "\(i)", count: 5 - i))\r\n\r\n" }
            try client.sendRaw(Array(raw.utf8))
            for _ in 0..<5 { #expect(try client.readResponse().status == 204) }
            let requests = kept.withLock { $0 }
            #expect(requests.map(\.path) == (0..<5).map { "/\($0)" })
            #expect(requests.map { $0.headers["X-Probe"] } == (0..<5).map { String(repeating: "\($0)", count: 5 - $0) })
            #expect(requests.map { $0.headers.fields.map(\.name) } == Array(repeating: ["Host", "X-Probe"], count: 5))
            #expect(requests.map { $0.headers["host"] } == (0..<5).map { "h\($0)" })
        }
    }
}

/// Header values are checked by the parser (llhttp): a request whose value holds a control byte other than HTAB,
/// or DEL, at its start, middle or end, is refused with the same reason; every other byte is taken.
@Suite struct HeaderValueCheckTests {
    /// The assembler's step for one request carrying `value` in a field.
    private func step(_ value: [UInt8]) -> HTTPRequestAssembler.Step {
        let assembler = HTTPRequestAssembler(limits: ServerLimits(), peer: "192.0.2.7")
        let bytes = Array("GET /v HTTP/1.1\r\nHost: h\r\nX-Probe: ".utf8) + value + Array("\r\n\r\n".utf8)
        return bytes.withUnsafeBytes { assembler.parse($0.baseAddress!, count: $0.count) }.step  // not empty
    }

    @Test func everyControlByteAtTheStartMiddleAndEndIsRefusedAndNothingElse() {
        for byte in UInt8(0)...UInt8(255) where byte != 0x0D && byte != 0x0A {  // CR and LF end the line
            for position in [0, 3, 6] {
                var value = Array("abcdefg".utf8)
                value[position] = byte
                let refused = (byte < 0x20 && byte != 0x09) || byte == 0x7F
                switch step(value) {
                case .refused(.badFraming(_, let reason)) where refused:
                    #expect(reason == "malformed request: invalid character in header", "byte \(byte) at \(position)")
                case .request(let request, _, _) where !refused:
                    // HTAB and spaces around a value are not part of it.
                    var kept = value[...]
                    while kept.first == 0x09 || kept.first == 0x20 { kept = kept.dropFirst() }
                    while kept.last == 0x09 || kept.last == 0x20 { kept = kept.dropLast() }
                    #expect(request.headers["X-Probe"] == String(decoding: kept, as: UTF8.self), "byte \(byte) at \(position)")
                case let other:
                    Issue.record("byte \(byte) at \(position): \(other)")
                }
            }
        }
    }
}
