import CLLHTTP
import Foundation
import Testing
@testable import PosternHTTP

/// `PlainRequestHead`, the client request heads read without llhttp: which heads are the shape, and, for every
/// request in or out of it (alone or with requests pipelined behind it), in every cut of its reads, under the default
/// and small head limits, that the assembler hands the connection exactly what llhttp alone gives (`RequestReplay`).
@Suite struct PlainRequestHeadTests {
    /// wrk's request in `make instructions` (scripts/instructions.sh, bench/lib.sh).
    static let benchRequest = "GET /api/v1/books HTTP/1.1\r\nHost: 127.0.0.1:18080\r\n"
        + "Authorization: Bearer 0123456789abcdef0123456789abcdef0123456789abcdef\r\n\r\n"

    /// A request with `line` and `fields`, then `body`.
    static func request(_ line: String, _ fields: [String], _ body: String = "") -> [UInt8] {
        Array((line + "\r\n" + fields.map { $0 + "\r\n" }.joined() + "\r\n" + body).utf8)
    }

    /// A GET of `/` with `fields`.
    static func get(_ fields: [String]) -> [UInt8] {
        request("GET / HTTP/1.1", fields)
    }

    /// Every visible ASCII character, `/` first: a target in the shape.
    static let visibleTarget = "/" + String(decoding: (0x21...0x7E).map { UInt8($0) }, as: UTF8.self)

    /// Requests in the shape and out of it.
    static let requests: [[UInt8]] = {
        var list: [[UInt8]] = [
            Array(benchRequest.utf8),
            request("GET /api/v1/books?limit=100&fields=id,title#top HTTP/1.1", ["Host: example.com", "Accept: */*"]),
            request("HEAD /x HTTP/1.1", ["Host: a"]),
            request("POST /x HTTP/1.1", ["Host: a"]),
            request("PUT /x HTTP/1.1", ["Host: a"]),
            request("DELETE /x/1 HTTP/1.1", ["Host: a"]),
            request("OPTIONS /x HTTP/1.1", ["Host: a", "Origin: http://b"]),
            request("PATCH /x HTTP/1.1", ["Host: a"]),
            request("GET \(visibleTarget) HTTP/1.1", ["Host: a"]),
            request("GET /? HTTP/1.1", ["Host: a"]),
            request("GET /a?b?c#d#e HTTP/1.1", ["Host: a"]),
            get(["Host:"]),
            get(["host:  [::1]:8080 \t", "X-Empty:", "X-Spaces:   ", "X-Tab:\ta\tb\t"]),
            get(["HOST: a-b.c_d~e%41!$&'()*+,;=:99"]),
            get(["Host: a", "Connection: close"]),
            get(["Connection: CLOSE", "Host: a"]),
            get(["Host: a", "Connection: Keep-Alive"]),
            get(["Host: a", "Connection: keep-alive", "Connection: close"]),
            get(["Host: a", "Expect: 100-continue"]),
            get(["Host: a", "Content-Type: application/json", "Accept-Encoding: gzip, br", "Cookie: a=b; c=d",
                 "X-Long: " + String(repeating: "0123456789", count: 30)]),
            get(["Host: a", "!#$%&'*+-.^_`|~09azAZ: token"]),
            // Out of the shape: llhttp reads them (or refuses them).
            request("GET / HTTP/1.0", []),
            request("GET / HTTP/1.0", ["Host: a", "Connection: keep-alive"]),
            request("GET / HTTP/1.0", ["Connection: keep-alive", "Transfer-Encoding: chunked"], "0\r\n\r\n"),
            Array("\r\n".utf8) + get(["Host: a"]),
            Array("\r\n\r\n".utf8) + get(["Host: a"]),
            Array("\n".utf8) + get(["Host: a"]),
            request("POST /x HTTP/1.1", ["Host: a", "Content-Length: 5"], "hello"),
            request("POST /x HTTP/1.1", ["Host: a", "Content-Length: 0"]),
            request("POST /x HTTP/1.1", ["Host: a", "Content-Length: 5", "Expect: 100-continue"], "hello"),
            request("POST /x HTTP/1.1", ["Host: a", "Transfer-Encoding: chunked"], "5\r\nhello\r\n0\r\n\r\n"),
            request("POST /x HTTP/1.1", ["Host: a", "Content-Length: 1", "Content-Length: 1"], "x"),
            request("POST /x HTTP/1.1", ["Host: a", "Content-Length: 1", "Transfer-Encoding: chunked"], "0\r\n\r\n"),
            request("POST /x HTTP/1.1", ["Host: a", "Content-Length: +1"], "x"),
            request("POST /x HTTP/1.1", ["Host: a", "Content-Length: 99999999999"], "x"),
            request("HEAD /x HTTP/1.1", ["Host: a", "Content-Length: 0"]),
            request("HEAD /x HTTP/1.1", ["Host: a", "Content-Length: 2"], "xx"),
            request("TRACE /x HTTP/1.1", ["Host: a"]),
            request("CONNECT a:443 HTTP/1.1", ["Host: a:443"]),
            request("PROPFIND /x HTTP/1.1", ["Host: a"]),
            request("get / HTTP/1.1", ["Host: a"]),
            request("GET  / HTTP/1.1", ["Host: a"]),
            request("GET /  HTTP/1.1", ["Host: a"]),
            request("GET * HTTP/1.1", ["Host: a"]),
            request("GET http://a/b?c HTTP/1.1", ["Host: a"]),
            request("GET /a\tb HTTP/1.1", ["Host: a"]),
            request("GET /é HTTP/1.1", ["Host: a"]),
            request("GET /\u{7F} HTTP/1.1", ["Host: a"]),
            request("GET / HTTP/1.2", ["Host: a"]),
            request("GET / HTTP/2.0", ["Host: a"]),
            request("GET / HTTP/1.1 ", ["Host: a"]),
            request("GET / http/1.1", ["Host: a"]),
            request("GET /", ["Host: a"]),
            get([]),
            get(["Host: a", "Host: a"]),
            get(["Host: a b"]),
            get(["Host: a/b"]),
            get(["Host: [::1"]),
            get(["Host: a:8x"]),
            get(["Host: é"]),
            get(["Host: a", "Upgrade: websocket", "Connection: upgrade"]),
            get(["Host: a", "Upgrade: h2c"]),
            get(["Host: a", "Proxy-Connection: close"]),
            get(["Host: a", "Connection: close, keep-alive"]),
            get(["Host: a", "Connection: closed"]),
            get(["Host: a", "Connection: close "]),
            get(["Host: a", "Connection: upgrade"]),
            get(["Host: a", "Connection:"]),
            get(["Host: a", "X-Folded: a", " b"]),
            get(["Host: a", "X-Folded: a", "\tb"]),
            get(["Host: a", "X Y: z"]),
            get(["Host: a", "X : z"]),
            get(["Host: a", ": z"]),
            get(["Host: a", "X-Ctl: a\u{1}b"]),
            get(["Host: a", "X-Del: a\u{7F}b"]),
            get(["Host: a", "X-Nul: a\u{0}b"]),
            get(["Host: a", "X-Utf8: é"]),
            get(["Host: a", "X-Cr: a\rb"]),
            get(["Host: a", "X-Nocolon"]),
            Array("GET / HTTP/1.1\nHost: a\n\n".utf8),
            Array("GET / HTTP/1.1\r\nHost: a\n\r\n".utf8),
            Array("GET / HTTP/1.1\r\nHost: a\r\r\n\r\n".utf8),
            Array("GET / HTTP/1.1\r\nHost: a\r\n\r".utf8),
            Array("GET / HTTP/1.1\r\nHost: a\r\n\n".utf8),
            Array("GET / HTTP/1.1\r\nHost: a\r\n".utf8),
            Array("GET / HTTP/1.1\r\n\r\n".utf8),
            Array("garbage".utf8),
        ]
        // Around and over the default head limit.
        let padding = ServerLimits().maxHeaderBytes - benchRequest.utf8.count - "X-Padding: \r\n".utf8.count
        for extra in [-1, 0, 1, 2, 3] {
            list.append(Array(benchRequest.dropLast(1).utf8) + Array("X-Padding: \(String(repeating: "p", count: padding + extra))\r\n\r\n".utf8))
        }
        return list
    }()

    /// What may follow a request on the connection.
    static let followers: [[UInt8]] = [
        [],
        Array(benchRequest.utf8),
        request("POST /y HTTP/1.1", ["Host: a", "Content-Length: 3"], "abc") + get(["Host: b", "Connection: close"]),
        Array("\r\n".utf8) + get(["Host: c"]),
        get(["Host: a", "Host: b"]),
        Array("x".utf8),
    ]

    /// The head limits the requests meet at every size around them (beside the default).
    static func smallLimits(_ stream: [UInt8]) -> [Int] {
        let head = stream.count
        return [25, 64, head - 3, head - 2, head - 1, head, head + 1].filter { $0 > 0 }
    }

    /// Compares the plain reading with llhttp's on `reads` under the head limit `maxHead` (and a small body
    /// ceiling); records the difference.
    static func compare(_ reads: [[UInt8]], maxHead: Int, bodyCeiling: Int = ServerLimits().bodyCeiling) -> Bool {
        let limits = RequestReplay.limits(maxHead: maxHead, bodyCeiling: bodyCeiling)
        let plain = RequestReplay.run(reads, plain: true, limits: limits)
        let reference = RequestReplay.run(reads, plain: false, limits: limits)
        guard plain == reference else {
            Issue.record("""
                \(String(decoding: reads.joined().prefix(120), as: UTF8.self).debugDescription) in \(reads.map(\.count)) \
                (head limit \(maxHead), body ceiling \(bodyCeiling)):
                  plain: \(plain)
                  llhttp: \(reference)
                """)
            return false
        }
        return true
    }

    @Test func theBenchRequestIsTheShape() throws {
        let bytes = Array(Self.benchRequest.utf8)
        var fields: [String] = []
        let head = try #require(bytes.withUnsafeBufferPointer { p in
            PlainRequestHead.read(p.baseAddress!, count: p.count, maxLength: 16 * 1024) { nameStart, nameEnd, valueStart, valueEnd in
                let base = 28  // after the request line
                fields.append(String(decoding: p[(base + nameStart)..<(base + nameEnd)], as: UTF8.self) + ": "
                              + String(decoding: p[(base + valueStart)..<(base + valueEnd)], as: UTF8.self))
            }
        })
        #expect(head.method == HTTP_GET)
        #expect(String(decoding: bytes[head.targetStart..<head.targetEnd], as: UTF8.self) == "/api/v1/books")
        #expect(head.fieldsStart == 28)
        #expect(head.keepAlive)
        #expect(head.length == bytes.count)
        #expect(fields == ["Host: 127.0.0.1:18080", "Authorization: Bearer 0123456789abcdef0123456789abcdef0123456789abcdef"])
    }

    /// The block-at-a-time scans stop exactly where a byte-by-byte look stops: every byte value at every place in two
    /// sixteen-byte blocks, a word and a tail, after runs of every class, and seeded runs of mixed bytes.
    @Test func theScansStopWhereAByteByByteLookStops() {
        var failures: [String] = []
        func check(_ bytes: [UInt8]) {
            bytes.withUnsafeBufferPointer { buffer in
                let p = buffer.baseAddress!, n = buffer.count
                for from in 0..<min(n, 3) {
                    let plain = bytes[from...].firstIndex { !($0 >= 0x20 && $0 <= 0x7E) } ?? n
                    let visible = bytes[from...].firstIndex { !($0 >= 0x21 && $0 <= 0x7E) } ?? n
                    func isWord(_ b: UInt8, dot: Bool) -> Bool {
                        (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || (b >= 0x30 && b <= 0x39) || b == 0x2D || (dot && b == 0x2E)
                    }
                    let word = bytes[from...].firstIndex { !isWord($0, dot: false) } ?? n
                    let host = bytes[from...].firstIndex { !isWord($0, dot: true) } ?? n
                    if PlainBytes.plainEnd(p, from: from, to: n) != plain || PlainBytes.visibleEnd(p, from: from, to: n) != visible
                        || PlainBytes.wordEnd(p, from: from, to: n, dot: false) != word
                        || PlainBytes.wordEnd(p, from: from, to: n, dot: true) != host, failures.count < 10 {
                        failures.append("\(bytes) from \(from)")
                    }
                }
            }
        }
        // 43 bytes: from each of the first three, two blocks, a word and one to three bytes one by one.
        for filler in Array("aZ0-. ~".utf8) {
            for byte in 0...255 {
                for at in 0..<43 {
                    var bytes = [UInt8](repeating: filler, count: 43)
                    bytes[at] = UInt8(byte)
                    check(bytes)
                }
            }
        }
        var random = SplitMix(seed: 9112)
        let classes: [UInt8] = Array("aZz09-._:/ \t\r\n\u{7F}".utf8) + [0, 0x80, 0xFF, 0x40, 0x5B, 0x60, 0x7B, 0x2F, 0x3A, 0x1F]
        for _ in 0..<5_000 {
            check((0..<random.next(70)).map { _ in random.next(2) == 0 ? classes[random.next(classes.count)] : UInt8(random.next(256)) })
        }
        #expect(failures.isEmpty, "\(failures)")
    }

    /// `holdsLineBreakOrNUL` says what a byte-by-byte look says, for every length up to 17 and the lengths around the
    /// ends of one to three 32-byte steps (the byte loop, two words, blocks of sixteen and of thirty-two and the last
    /// block that overlaps), reading none of the bytes after: every byte value at every place, after runs of bytes just
    /// above CR, below it and of other classes; and `HeadWriter.safe` says the opposite, for short and long strings.
    @Test func theLineBreakTestFindsEveryCRLFAndNUL() {
        var failures: [String] = []
        for filler: UInt8 in [0x61, 0x0E, 0x0C, 0xFF] {
            for count in Array(0...17) + [31, 32, 33, 47, 48, 49, 63, 64, 65, 80] {
                for at in 0..<max(count, 1) {
                    for byte in 0...255 {
                        // A CR after the bytes: found only if the test read past them.
                        var bytes = [UInt8](repeating: filler, count: count) + [0x0D]
                        if count > 0 { bytes[at] = UInt8(byte) }
                        let expected = bytes[..<count].contains { $0 == 0 || $0 == 0x0A || $0 == 0x0D }
                        let found = bytes.withUnsafeBufferPointer { buffer in
                            // Not nil: the buffer holds at least the CR.
                            PlainBytes.holdsLineBreakOrNUL(buffer.baseAddress!, count)
                        }
                        if found != expected, failures.count < 10 { failures.append("\(bytes)") }
                        if count == 0 { break }
                    }
                }
            }
        }
        #expect(failures.isEmpty, "\(failures)")
        for text in ["", "x", "10.0.0.1", String(repeating: "ab", count: 40)] {
            #expect(HeadWriter.safe(text))
            for bad in ["\r", "\n", "\u{0}"] {
                #expect(!HeadWriter.safe(bad + text) && !HeadWriter.safe(text + bad), "\(text.utf8.count) bytes")
            }
        }
    }

    /// `spells` (eight bytes a step from eight bytes on) says what a byte-by-byte `| 0x20` compare says: each name
    /// the heads are checked for, as sent in either case, and with every byte at every place changed to every value.
    @Test func spellsComparesAsAByteByByteLookDoes() {
        let names: [StaticString] = ["host", "close", "upgrade", "keep-alive", "connection", "content-length",
                                     "proxy-connection", "transfer-encoding"]
        for name in names {
            let expected = Array(UnsafeBufferPointer(start: name.utf8Start, count: name.utf8CodeUnitCount))
            let spelt = { (bytes: [UInt8]) in bytes.withUnsafeBufferPointer { PlainBytes.spells($0.baseAddress!, $0.count, name) } }
            #expect(spelt(expected))
            #expect(spelt(expected.map { $0 >= 0x61 && $0 <= 0x7A ? $0 - 0x20 : $0 }), "\(name) in capitals")
            #expect(!spelt(expected + [0x61]) && !spelt(Array(expected.dropLast())), "\(name) one byte longer or shorter")
            for at in expected.indices {
                for byte in 0...255 {
                    var bytes = expected
                    bytes[at] = UInt8(byte)
                    #expect(spelt(bytes) == (UInt8(byte) | 0x20 == expected[at]), "\(name) with \(byte) at \(at)")
                }
            }
        }
    }

    /// Which of the requests above are the shape (the others go to llhttp), under the default head limit, whole.
    @Test func theShapeIsNarrow() {
        let plain = Self.requests.filter { request in
            request.withUnsafeBufferPointer { PlainRequestHead.read($0.baseAddress!, count: $0.count, maxLength: 16 * 1024) { _, _, _, _ in } != nil }
        }
        #expect(plain.count == 23, "\(plain.map { String(decoding: $0.prefix(40), as: UTF8.self) })")
        // A head cut short is not the shape, wherever the cut.
        let bench = Array(Self.benchRequest.utf8)
        for end in 0..<bench.count {
            let read = bench.withUnsafeBufferPointer { PlainRequestHead.read($0.baseAddress!, count: end, maxLength: 1 << 16) { _, _, _, _ in } }
            #expect(read == nil, "head cut at \(end)")
        }
    }

    /// Every request, with each follower behind it, whole and byte by byte; alone and with the bench request behind
    /// it, cut in two at every offset: under the default head limit and the small ones around its size, the
    /// connection gets the same from the plain reading as from llhttp.
    @Test func everyCutGivesWhatLLHTTPGives() {
        for request in Self.requests {
            let defaultHead = ServerLimits().maxHeaderBytes
            for follower in Self.followers {
                let stream = request + follower
                var cuts: [[[UInt8]]] = [[stream]]
                if stream.count < 4096 { cuts.append(stream.map { [$0] }) }
                for reads in cuts {
                    for maxHead in [defaultHead] + Self.smallLimits(request) {
                        guard Self.compare(reads, maxHead: maxHead) else { return }
                    }
                }
            }
            for stream in [request, request + Self.followers[1]] where stream.count < 4096 {
                for offset in 1..<stream.count {
                    let reads = AnswerReplay.cut(stream, at: [offset])
                    for maxHead in [defaultHead, request.count - 1, request.count] {
                        guard Self.compare(reads, maxHead: maxHead) else { return }
                    }
                }
            }
        }
    }

    /// Requests pipelined in every order of three (plain, llhttp's, refused), in one read and cut after each.
    @Test func pipelinesGiveWhatLLHTTPGives() {
        let kinds: [[UInt8]] = [
            Array(Self.benchRequest.utf8),
            Self.get(["Host: a", "Connection: keep-alive"]),
            Self.request("POST /x HTTP/1.1", ["Host: a", "Content-Length: 2"], "{}"),
            Self.request("GET / HTTP/1.0", ["Host: a", "Connection: keep-alive"]),
            Array("\r\n".utf8) + Self.get(["Host: a"]),
            Self.request("PUT /x HTTP/1.1", ["Host: a", "Transfer-Encoding: chunked"], "2\r\n{}\r\n0\r\n\r\n"),
            Self.get(["Host: a", "Connection: close"]),
            Self.get([]),
        ]
        for a in kinds {
            for b in kinds {
                for c in kinds {
                    let stream = a + b + c
                    for reads in [[stream], AnswerReplay.cut(stream, at: [a.count, a.count + b.count]),
                                  AnswerReplay.cut(stream, at: [a.count - 1, a.count + b.count + 1])] {
                        for maxHead in [ServerLimits().maxHeaderBytes, 64, 90] {
                            guard Self.compare(reads, maxHead: maxHead, bodyCeiling: 2) else { return }
                        }
                    }
                }
            }
        }
    }

    /// The requests above with a byte changed, inserted or removed here and there (a fixed seed), with a follower,
    /// whole and cut in two: the same steps from the plain reading as from llhttp.
    @Test func mutatedRequestsGiveWhatLLHTTPGives() {
        var random = SplitMix(seed: 33)
        let bytes: [UInt8] = Array(" \t\r\n:,-/?#0129aAzZ\u{7F}".utf8) + [0, 0x80, 0xFF, 0x01]
        let sources = Self.requests.filter { $0.count < 4096 }
        for _ in 0..<20_000 {
            var request = sources[random.next(sources.count)]
            random.mutate(&request, bytes: bytes)
            let stream = request + Self.followers[random.next(Self.followers.count)]
            let maxHead = random.next(4) == 0 ? 20 + random.next(120) : ServerLimits().maxHeaderBytes
            for reads in [[stream], AnswerReplay.cut(stream, at: [random.next(stream.count + 1)])] {
                guard Self.compare(reads, maxHead: maxHead, bodyCeiling: random.next(8)) else { return }
            }
        }
    }
}
