import Foundation
import Testing
@testable import PosternHTTP
import PosternTesting

/// Inputs that made a libFuzzer target (`Fuzz/Targets/`, run by `make fuzz`) fail, replayed through the
/// invariant that target checks. Each case names the crash file kept in `Fuzz/crashes/`.
@Suite struct FuzzRegressionTests {
    /// json_roundtrip: parse → serialize → parse gives an equal value and the same text.
    private func roundTrips(_ bytes: [UInt8]) throws -> Bool {
        let first = try JSONValue.parse(Data(bytes))
        let text = first.serialized()
        let second = try JSONValue.parse(text)
        return first == second && second.serialized() == text
    }

    /// `Fuzz/crashes/json_roundtrip-duplicate-keys`: `==` was not reflexive on an object with a repeated key
    /// (each key was looked up by its first occurrence only).
    @Test func equalityIsReflexiveWithDuplicateKeys() throws {
        #expect(try roundTrips(Array(#"{"a":1,"a":2}"#.utf8)))
        let v = try JSONValue.parse(#"{"a":1,"a":2}"#)
        #expect(v == v)
        // Key order still does not matter, but the values of a repeated key keep their order.
        #expect(try JSONValue.parse(#"{"a":1,"b":0,"a":2}"#) == JSONValue.parse(#"{"b":0,"a":1,"a":2}"#))
        #expect(try JSONValue.parse(#"{"a":1,"a":2}"#) != JSONValue.parse(#"{"a":2,"a":1}"#))
        #expect(try JSONValue.parse(#"{"a":1,"a":1}"#) != JSONValue.parse(#"{"a":1,"b":1}"#))
        #expect(try JSONValue.parse(#"{"b":1,"a":1}"#) == JSONValue.parse(#"{"a":1.0,"b":1}"#))
    }

    /// `Fuzz/crashes/json_roundtrip-infinity`: `1e3901` parsed as a Double infinity, which serializes as `null`.
    @Test(arguments: ["[1e3901,-9223744073709551616,9224775807]", "1e999", "-1e999", "[0.5E+400]"])
    func refusesNumbersOutOfRange(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    /// Neighbours of the infinity crash that must keep working: huge integers become doubles, tiny ones zero.
    @Test(arguments: ["-9223744073709551616", "9223372036854775808", "1e308", "1e-400", "-0.0"])
    func keepsLargeFiniteNumbers(_ text: String) throws {
        #expect(try roundTrips(Array(text.utf8)))
    }
}

/// Inputs kept from `http_request_stream` and `http_response_stream`: the bytes after the first three (which
/// choose the read boundaries) replayed through the request assembler and the answer parser, in one read
/// and byte by byte.
@Suite struct HTTPStreamFuzzRegressionTests {
    /// The bytes of `Fuzz/crashes/<name>` after the three that choose the reads.
    private func stream(_ name: String) throws -> [UInt8] {
        let root = repositoryRoot
        return Array(try Data(contentsOf: root.appendingPathComponent("Fuzz/crashes/\(name)")).dropFirst(3))
    }

    /// What the server's assembler hands out for `reads`: the requests' targets, and the refusal's reason.
    private func requests(_ reads: [[UInt8]]) -> (targets: [String], refusal: String?) {
        var limits = ServerLimits()
        limits.maxHeaderBytes = 1024
        limits.bodyCeiling = 2048
        let (taken, refusal) = assembled(reads, limits: limits)
        return (taken.map(\.path), refusal)
    }

    /// The requests the assembler hands out for `reads` up to a refusal, and the refusal's reason.
    private func assembled(_ reads: [[UInt8]], limits: ServerLimits = ServerLimits()) -> (taken: [HTTPRequest], refusal: String?) {
        let assembler = HTTPRequestAssembler(limits: limits, peer: "192.0.2.7")
        var taken: [HTTPRequest] = []
        var pending: [UInt8] = []
        for read in reads {
            pending += read
            var start = 0
            while start < pending.count {
                let (n, step) = pending.withUnsafeBytes { raw in
                    assembler.parse(raw.baseAddress! + start, count: raw.count - start)  // start < count: not empty
                }
                start += n
                switch step {
                case .needMore: break
                case .request(let request, _, _): taken.append(request)
                case .refused(.badFraming(_, let reason)): return (taken, reason)
                case .refused(let other): return (taken, "\(other)")
                }
            }
            pending.removeFirst(start)
        }
        return (taken, nil)
    }

    /// The answer parser's outcome for `reads`, with the status and body of a complete answer.
    private func answer(_ reads: [[UInt8]]) -> (UpstreamResponseParser.Outcome, Int, Data) {
        let parser = UpstreamResponseParser(keptHeaders: nil)
        var outcome: UpstreamResponseParser.Outcome = .needMore
        for read in reads where outcome == .needMore {
            outcome = read.withUnsafeBytes { parser.feed($0) }
        }
        if outcome == .needMore { outcome = parser.feedEndOfStream() }
        return (outcome, parser.status, parser.body.data)
    }

    /// `http_request_stream-nul-value`: a NUL as the first byte of a header value (http-parser checks every
    /// byte of a value but the first) reached the handler; now the request is refused, whatever the reads.
    @Test func controlCharacterStartingAHeaderValueIsRefused() throws {
        let bytes = try stream("http_request_stream-nul-value")
        for reads in [[bytes], bytes.map { [$0] }] {
            let seen = requests(reads)
            #expect(seen.targets.isEmpty)
            #expect(seen.refusal == "malformed request: invalid character in header")
        }
        let probe = Array("GET / HTTP/1.1\r\nX-A: \u{7F}x\r\n\r\n".utf8)
        #expect(requests([probe]).refusal == "malformed request: invalid character in header")
        #expect(requests([Array("GET /ok HTTP/1.1\r\nHost: a\r\nX-A: \tx y\r\n\r\n".utf8)]).targets == ["/ok"])
    }

    /// `http_request_stream-connect-with-length`: http-parser reads no body for a CONNECT (what follows is the
    /// tunnel), so a Content-Length on one frames nothing; the request is handed over with keep-alive off, so the
    /// connection ends after its answer and the bytes behind it are never read as a request.
    @Test func connectEndsTheConnectionWhateverItsContentLength() throws {
        let assembler = HTTPRequestAssembler(limits: ServerLimits(), peer: "192.0.2.7")
        let bytes = Array("CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nContent-Length: 26\r\n\r\nGET /smuggled HTTP/1.1\r\n\r\n".utf8)
        let (_, step) = bytes.withUnsafeBytes { assembler.parse($0.baseAddress!, count: $0.count) }  // not empty
        guard case .request(let request, let keepAlive, _) = step else {
            Issue.record("expected the CONNECT request, got \(step)")
            return
        }
        #expect(request.method == .other("CONNECT"))
        #expect(!keepAlive)
        #expect(try stream("http_request_stream-connect-with-length").count > 0)
    }

    /// `http_request_stream-space-before-colon`: `HEAD` with `Content-Length :3` and a body was taken (http-parser
    /// read the body; the framing rules saw no Content-Length). Whitespace in a header name is refused.
    @Test func whitespaceBeforeTheColonIsRefused() throws {
        let bytes = try stream("http_request_stream-space-before-colon")
        for reads in [[bytes], bytes.map { [$0] }] {
            let seen = requests(reads)
            #expect(seen.targets.isEmpty)
            #expect(seen.refusal == "malformed request: invalid character in header")
        }
    }

    /// `http_request_stream-empty-name`: a line `:Host: a` (no name before the colon) was handed out as a field
    /// with an empty name (llhttp, not strict, takes it). A field name is a token: the request is refused.
    @Test func aHeaderLineWithoutANameIsRefused() throws {
        let bytes = try stream("http_request_stream-empty-name")
        for reads in [[bytes], bytes.map { [$0] }] {
            let seen = requests(reads)
            #expect(seen.targets.isEmpty)
            #expect(seen.refusal == "malformed request: invalid character in header")
        }
        #expect(requests([Array("GET / HTTP/1.1\r\nHost: a\r\n:\r\n\r\n".utf8)]).refusal == "malformed request: invalid character in header")
    }

    /// `http_request_stream-trailer-content-length`: the trailer fields after a chunked body (one of them a
    /// `Content-Length`) were added to the request's headers, beside its `Transfer-Encoding`. Trailers are not
    /// headers: every request handed out has only the fields of its head. (The crash file's second request ends
    /// its trailers with a bare LF inside a field, which llhttp refuses. Its first request has no Host, which is
    /// refused now too, RFC 9112 §3.2: nothing is handed out.)
    @Test func trailerFieldsAreNotAddedToTheHeaders() throws {
        let bytes = try stream("http_request_stream-trailer-content-length")
        for reads in [[bytes], bytes.map { [$0] }] {
            let (taken, refusal) = assembled(reads)
            #expect(taken.isEmpty && refusal == "missing Host")
        }
        // The same shape, well formed: a chunked request whose trailers hold a Content-Length, then another one.
        let wellFormed = Array(("POST /a HTTP/1.1\r\nHost: a\r\nTransfer-Encoding: chunked\r\n\r\n7\r\n{\"a\":1,\r\n9;ext=1\r\n\"b\":\"xy\"}\r\n"
            + "0\r\nX-Trailer: t\r\nContent-Length: 5\r\n\r\nGET /b HTTP/1.1\r\nHost: a\r\n\r\n").utf8)
        for reads in [[wellFormed], wellFormed.map { [$0] }] {
            let taken = assembled(reads).taken
            #expect(taken.map(\.path) == ["/a", "/b"])
            #expect(taken.first?.headers.fields.map(\.name) == ["Host", "Transfer-Encoding"])
            #expect(taken.first.map { String(decoding: $0.body, as: UTF8.self) } == #"{"a":1,"b":"xy"}"#)
            #expect(taken.allSatisfy { $0.headers.values("Content-Length").isEmpty && $0.headers["X-Trailer"] == nil })
        }
    }

    /// `http_request_stream-refusal-after-complete-parse`: a head with a bare CR (`Transfer-Encodikg:\r/X-…`) that
    /// llhttp parsed without an error was refused by the line-break check after it, and llhttp, not in an error state,
    /// then parsed the next bytes as a request. Nothing is parsed after any refusal.
    @Test func nothingIsParsedAfterALineBreakRefusal() throws {
        let bytes = try stream("http_request_stream-refusal-after-complete-parse")
        let assembler = HTTPRequestAssembler(limits: ServerLimits(), peer: "192.0.2.7")
        let (_, step) = bytes.withUnsafeBytes { assembler.parse($0.baseAddress!, count: $0.count) }  // not empty
        guard case .refused = step else {
            Issue.record("expected a refusal, got \(step)")
            return
        }
        let next = Array("GET / HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        let (_, after) = next.withUnsafeBytes { assembler.parse($0.baseAddress!, count: $0.count) }  // not empty
        if case .request = after { Issue.record("a request was parsed after a refusal") }
    }

    /// `http_request_stream-connect-question-mark`: `CONNECT ?x` (an authority form holding a `?`) splits into
    /// an empty path and a query, as it always did; the fuzz target's form check now allows that. It is handed
    /// over with keep-alive off, like every CONNECT. (The crash file itself ends its head with a bare LF, which is
    /// refused now: the same request with a Host and CRLFs is checked.)
    @Test func aConnectTargetWithAQuestionMarkSplitsAtIt() throws {
        #expect(assembled([try stream("http_request_stream-connect-question-mark")]).refusal == "malformed request: a line must end in CRLF")
        let bytes = Array("CONNECT ?NOeIySal4 HTTP/1.1\r\nHost: a\r\n\r\n".utf8)
        let assembler = HTTPRequestAssembler(limits: ServerLimits(), peer: "192.0.2.7")
        let (_, step) = bytes.withUnsafeBytes { assembler.parse($0.baseAddress!, count: $0.count) }  // not empty
        guard case .request(let request, let keepAlive, _) = step else {
            Issue.record("expected the CONNECT request, got \(step)")
            return
        }
        #expect(request.method == .other("CONNECT") && request.path == "" && request.query == "NOeIySal4" && !keepAlive)
    }

    /// `http_response_stream-status-30`: `HTTP/1.1 30 304` completed as an answer with status 30.
    @Test func statusOutsideHTTPsCodesIsInvalid() throws {
        let bytes = try stream("http_response_stream-status-30")
        for reads in [[bytes], bytes.map { [$0] }] {
            #expect(answer(reads).0 == .invalid("status code out of range"))
        }
    }

    /// `http_response_stream-negative-length`: `Content-Length: -66` (it crashed the fuzz target's own reference
    /// decoder, which took the sign); the parser refuses the answer, whatever the reads.
    @Test func negativeContentLengthIsInvalid() throws {
        let bytes = try stream("http_response_stream-negative-length")
        for reads in [[bytes], bytes.map { [$0] }] {
            let (outcome, _, body) = answer(reads)
            guard case .invalid = outcome else {
                Issue.record("expected an invalid answer, got \(outcome)")
                continue
            }
            #expect(body.isEmpty)
        }
    }

    /// `http_response_stream-te-prefix-304`: a field named `Transfer-Encodingng` made http-parser read a 304's
    /// following bytes as its body, up to the close.
    @Test func bodilessAnswerWithATransferEncodingLikeFieldHasNoBody() throws {
        let bytes = try stream("http_response_stream-te-prefix-304")
        for reads in [[bytes], bytes.map { [$0] }] {
            let (outcome, status, body) = answer(reads)
            guard case .complete(let leftover) = outcome else {
                Issue.record("expected a complete answer, got \(outcome)")
                continue
            }
            #expect(status == 304)
            #expect(body.isEmpty)
            #expect(leftover > 0 || reads.count > 1, "the bytes after the head are not the 304's")
        }
    }

    /// `http_response_stream-empty-body-to-the-close`: a 503 without `Content-Length` or `chunked` (a body that runs
    /// to the close) whose head ends the stream: the parser paused at the head's end, before llhttp had framed the
    /// body, and the close then found the answer truncated; it is complete with an empty body, whatever the reads.
    @Test func emptyBodyDelimitedByTheCloseIsComplete() throws {
        let bytes = try stream("http_response_stream-empty-body-to-the-close")
        for reads in [[bytes], bytes.map { [$0] }] {
            let (outcome, status, body) = answer(reads)
            #expect(outcome == .complete(leftover: 0))
            #expect(status == 503)
            #expect(body.isEmpty)
        }
    }
}
