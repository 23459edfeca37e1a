import Foundation
import Testing
@testable import PosternHTTP

/// `PlainAnswerHead`, the upstream answer heads read without llhttp: which heads are the shape, and, for every
/// answer in or out of it, in every cut of its reads, that the parser hands the connection exactly what llhttp
/// alone gives (`AnswerReplay`).
@Suite struct PlainAnswerHeadTests {
    /// nginx's head for the canned Directus list (as `make instructions` serves it).
    static let nginxHead = "HTTP/1.1 200 OK\r\nServer: nginx/1.22.1\r\nDate: Sun, 06 Dec 2026 14:00:00 GMT\r\n"
        + "Content-Type: application/json\r\nContent-Length: 25\r\nLast-Modified: Sun, 06 Dec 2026 13:00:00 GMT\r\n"
        + "Connection: keep-alive\r\nETag: \"6752f0d0-18\"\r\nAccept-Ranges: bytes\r\n\r\n"
    static let nginxBody = #"{"data":[{"id":1,"n":2}]}"#

    /// An answer with `fields` and `body` (its `Content-Length` among the fields when wanted).
    static func answer(_ statusLine: String, _ fields: [String], _ body: String = "") -> [UInt8] {
        Array((statusLine + "\r\n" + fields.map { $0 + "\r\n" }.joined() + "\r\n" + body).utf8)
    }

    /// A 200 answer with `fields` and `body`.
    static func answer(_ fields: [String], _ body: String = "") -> [UInt8] {
        answer("HTTP/1.1 200 OK", fields, body)
    }

    /// Answers in the shape and out of it, with what may follow them on the connection.
    /// A header name of 70 bytes.
    static let longName = "X-A-Header-Name-Longer-Than-Sixty-Three-Bytes-To-Reach-The-Last-Bit-Ok"

    static let answers: [[UInt8]] = {
        let nginx = Array((nginxHead + nginxBody).utf8)
        let plain = answer(["Content-Length: 5"], "hello")
        var list: [[UInt8]] = [
            nginx,
            nginx + Array("garbage".utf8),
            nginx + nginx,
            nginx + plain + Array("x".utf8),
            answer(["Content-Length: 0"]),
            answer(["Content-Length: 0"]) + plain,
            answer(["Content-Length:0"]),
            answer(["Content-Length: \t007"], "1234567"),
            answer(["content-LENGTH: 3", "connection: Close"], "abc") + plain,
            answer(["Connection: close", "Content-Length: 3", "Connection: keep-alive"], "abc"),
            answer(["Connection: KEEP-ALIVE", "Content-Length: 3"], "abc"),
            answer("HTTP/1.1 503 Service Unavailable", ["Retry-After: 7  ", "X-Empty:", "X-Spaces:   ", "Content-Length: 2"], "{}"),
            // Kept by its name, over 63 bytes long (`keptLengths`' last bit), and a name as long that is not kept.
            answer(["\(longName): kept ", "\(longName.dropLast())X: dropped", "Content-Length: 2"], "{}"),
            answer("HTTP/1.1 404 ", ["Content-Length: 2", "X-Odd: a\tb \t"], "{}"),
            answer("HTTP/1.1 599 Whatever (it is) ~!", ["Content-Length: 1"], "x"),
            answer(["Content-Length: 10"], "short"),
            answer(["Content-Length: 300"], String(repeating: "b", count: 300)),
            // Out of the shape: llhttp reads them.
            answer("HTTP/1.1 200", ["Content-Length: 2"], "{}"),
            answer("HTTP/1.0 200 OK", ["Content-Length: 2"], "{}"),
            answer("HTTP/1.0 200 OK", ["Content-Length: 2", "Connection: keep-alive"], "{}"),
            answer("HTTP/1.1 100 Continue", []) + answer(["Content-Length: 2"], "{}"),
            answer("HTTP/1.1 204 No Content", ["Content-Length: 2"]) + Array("{}".utf8),
            answer("HTTP/1.1 304 Not Modified", ["ETag: \"x\""]),
            answer("HTTP/1.1 199 Odd", ["Content-Length: 2"], "{}"),
            answer("HTTP/1.1 600 Odd", ["Content-Length: 2"], "{}"),
            answer("HTTP/1.1 099 Odd", ["Content-Length: 2"], "{}"),
            answer(["Transfer-Encoding: chunked"], "2\r\n{}\r\n0\r\n\r\n"),
            answer(["Content-Length: 2", "Transfer-Encoding: chunked"], "2\r\n{}\r\n0\r\n\r\n"),
            answer(["Content-Length: 2", "Content-Length: 2"], "{}"),
            answer(["Content-Length: 2", "Content-Length: 3"], "{}x"),
            answer(["Content-Length: +2"], "{}"),
            answer(["Content-Length: -2"], "{}"),
            answer(["Content-Length: 2 "], "{}"),
            answer(["Content-Length: 2, 2"], "{}"),
            answer(["Content-Length: "], "{}"),
            answer(["Content-Length: 99999999999999999999999"], "{}"),
            answer(["X-Folded: a", " b", "Content-Length: 2"], "{}"),
            answer(["Content-Length : 2"], "{}"),
            answer([": empty name", "Content-Length: 2"], "{}"),
            answer(["Connection: upgrade", "Upgrade: websocket", "Content-Length: 2"], "{}"),
            answer(["Upgrade: h2c", "Content-Length: 2"], "{}"),
            answer(["Proxy-Connection: close", "Content-Length: 2"], "{}"),
            answer(["Connection: close, keep-alive", "Content-Length: 2"], "{}"),
            answer(["Connection: closed", "Content-Length: 2"], "{}"),
            answer(["Connection: close ", "Content-Length: 2"], "{}"),
            answer(["X-Ctl: a\u{1}b", "Content-Length: 2"], "{}"),
            answer(["X-Utf8: é", "Content-Length: 2"], "{}"),
            answer([], "body to the close"),
            Array("HTTP/1.1 200 OK\nContent-Length: 2\n\n{}".utf8),
            Array("HTTP/1.1 200 OK\r\nContent-Length: 2\n\r\n{}".utf8),
            Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\r\n\r\n{}".utf8),
            Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r{}".utf8),
            Array("HTTP/1.1 200 O\u{0}K\r\nContent-Length: 2\r\n\r\n{}".utf8),
            Array("HTTP/1.1  200 OK\r\nContent-Length: 2\r\n\r\n{}".utf8),
            Array("HTTP/2.0 200 OK\r\nContent-Length: 2\r\n\r\n{}".utf8),
            Array("http/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}".utf8),
            Array("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n".utf8),
            Array("garbage".utf8),
        ]
        // Over the default ceilings: a head of 64 KiB and more, a body announced over 16 MiB.
        list.append(answer(["X-Padding: " + String(repeating: "p", count: UpstreamResponseParser.headCeiling),
                            "Content-Length: 2"], "{}"))
        list.append(answer(["Content-Length: \(UpstreamHTTPClient.defaultMaxResponseBytes + 1)"], "{}"))
        return list
    }()

    /// The small ceilings (body, head) that the answers above meet at every size around them.
    static let smallCeilings: [(body: Int, head: Int)] = {
        let nginx = nginxHead.utf8.count, shortest = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n".utf8.count
        return [(4096, 64), (4096, shortest), (4096, shortest - 1), (2, 64), (1, 64), (0, 64),
                (25, nginx), (24, nginx), (25, nginx - 1)]
    }()

    @Test func nginxsHeadIsTheShape() throws {
        let bytes = Array((Self.nginxHead + Self.nginxBody).utf8)
        var fields: [String] = []
        let head = try #require(bytes.withUnsafeBytes { bytes in
            PlainAnswerHead.read(bytes, maxLength: UpstreamResponseParser.headCeiling, maxBody: 1 << 20) {
                fields.append(String(decoding: $0, as: UTF8.self) + ": " + String(decoding: $1, as: UTF8.self))
            }
        })
        #expect(head.status == 200)
        #expect(head.contentLength == 25)
        #expect(head.keepAlive)
        #expect(head.length == Self.nginxHead.utf8.count)
        #expect(fields == ["Server: nginx/1.22.1", "Date: Sun, 06 Dec 2026 14:00:00 GMT", "Content-Type: application/json",
                           "Content-Length: 25", "Last-Modified: Sun, 06 Dec 2026 13:00:00 GMT", "Connection: keep-alive",
                           "ETag: \"6752f0d0-18\"", "Accept-Ranges: bytes"])
    }

    /// Which of the answers above are the shape (the others go to llhttp), under the default ceilings, with their
    /// whole head in the read.
    @Test func theShapeIsNarrow() {
        let plain = Self.answers.filter { answer in
            answer.withUnsafeBytes {
                PlainAnswerHead.read($0, maxLength: UpstreamResponseParser.headCeiling,
                                     maxBody: UpstreamHTTPClient.defaultMaxResponseBytes) { _, _ in } != nil
            }
        }
        #expect(plain.count == 17, "\(plain.map { String(decoding: $0.prefix(40), as: UTF8.self) })")
        // A head cut short is not the shape, wherever the cut.
        let nginx = Array(Self.nginxHead.utf8)
        for end in 0..<nginx.count {
            let read = nginx.withUnsafeBytes { PlainAnswerHead.read(UnsafeRawBufferPointer(rebasing: $0[..<end]), maxLength: 1 << 16, maxBody: 100) { _, _ in } }
            #expect(read == nil, "head cut at \(end)")
        }
    }

    /// Every answer, whole, byte by byte and cut in two at every offset, under the default and small ceilings,
    /// keeping every field or the gateway's: the connection gets the same from the plain reading as from llhttp.
    @Test func everyCutGivesWhatLLHTTPGives() {
        let ceilings = [(body: UpstreamHTTPClient.defaultMaxResponseBytes, head: UpstreamResponseParser.headCeiling)]
            + Self.smallCeilings
        for answer in Self.answers {
            // The answers over the default ceilings are read whole only.
            var cuts: [[[UInt8]]] = [[answer]]
            if answer.count < 4096 {
                cuts.append(answer.map { [$0] })
                for offset in 1..<answer.count { cuts.append(AnswerReplay.cut(answer, at: [offset])) }
            }
            for reads in cuts {
                for kept in [nil, ["Retry-After"], ["retry-after", "X-A-Header-Name-Longer-Than-Sixty-Three-Bytes-To-Reach-The-Last-Bit-Ok"]]
                    as [[StaticString]?] {
                    for (body, head) in ceilings {
                        let plain = AnswerReplay.run(reads, plain: true, kept: kept, maxBody: body, maxHead: head)
                        let reference = AnswerReplay.run(reads, plain: false, kept: kept, maxBody: body, maxHead: head)
                        guard plain == reference else {
                            Issue.record("""
                                \(String(decoding: answer.prefix(60), as: UTF8.self).debugDescription) in \(reads.map(\.count)) \
                                (ceilings \(body), \(head)):
                                  plain: \(plain)
                                  llhttp: \(reference)
                                """)
                            return
                        }
                    }
                }
            }
        }
    }

    /// The answers above with a byte changed, inserted or removed here and there (a fixed seed), whole and cut in
    /// two: the same outcome from the plain reading as from llhttp.
    @Test func mutatedAnswersGiveWhatLLHTTPGives() {
        var random = SplitMix(seed: 33)
        let bytes: [UInt8] = Array(" \t\r\n:,-0129aAzZ\u{7F}".utf8) + [0, 0x80, 0xFF, 0x01]
        let sources = Self.answers.filter { $0.count < 4096 }
        for _ in 0..<20_000 {
            var answer = sources[random.next(sources.count)]
            random.mutate(&answer, bytes: bytes)
            let (body, head) = random.next(4) == 0 ? Self.smallCeilings[random.next(Self.smallCeilings.count)]
                : (UpstreamHTTPClient.defaultMaxResponseBytes, UpstreamResponseParser.headCeiling)
            for reads in [[answer], AnswerReplay.cut(answer, at: [random.next(answer.count + 1)])] {
                let plain = AnswerReplay.run(reads, plain: true, maxBody: body, maxHead: head)
                let reference = AnswerReplay.run(reads, plain: false, maxBody: body, maxHead: head)
                guard plain == reference else {
                    Issue.record("""
                        \(String(decoding: answer, as: UTF8.self).debugDescription) in \(reads.map(\.count)) (ceilings \(body), \(head)):
                          plain: \(plain)
                          llhttp: \(reference)
                        """)
                    return
                }
            }
        }
    }
}

/// A small seeded generator (SplitMix64), so that the mutated answers are the same on every run.
struct SplitMix {
    private var state: UInt64
    init(seed: UInt64) { state = seed }

    /// A number in 0..<bound.
    mutating func next(_ bound: Int) -> Int {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        z ^= z >> 31
        return Int(z % UInt64(bound))
    }

    /// Changes, inserts or removes one to three bytes of `message` at places drawn from this generator; a byte
    /// written is one of `bytes` two times in three, else any.
    mutating func mutate(_ message: inout [UInt8], bytes: [UInt8]) {
        for _ in 0...next(2) {
            let at = next(message.count + 1)
            let byte = next(3) == 0 ? UInt8(truncatingIfNeeded: next(256)) : bytes[next(bytes.count)]
            switch next(3) {
            case 0 where at < message.count: message[at] = byte
            case 1 where at < message.count: message.remove(at: at)
            default: message.insert(byte, at: at)
            }
        }
    }
}
