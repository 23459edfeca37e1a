import Foundation
@testable import PosternCore
@testable import PosternHTTP

/// The upstream client's answer parser (`UpstreamResponseParser`, fed the way `UpstreamConnection` feeds it:
/// reads until the answer is complete, then the end of the stream if it is not). The first three input bytes
/// choose where the rest is cut into reads. Checks: no crash; a complete answer has a final status (200–599);
/// the same bytes in one read, cut into several, or byte by byte give the same outcome; the parser keeping
/// only `Retry-After` keeps exactly those lines of the one keeping all; and for an answer a strict reference
/// decoder (below) reads, the status, headers, body and keep-alive verdict are the reference's.
///
/// The ceilings, with a parser whose are small (a 128-byte head, a 256-byte body as sent): it never holds
/// more than the two together; an answer whose head (interim answers included) is over the head ceiling,
/// or whose body as sent (chunk framing included) is over the body ceiling, is a bad response, however the
/// reads are cut; under both, the outcome is the same as without them. And bytes after a complete answer
/// (which nothing asked for) are reported, never parsed as another answer: the connection drops them.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 3 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: bytes, count: size))
    let stream = Array(input[3...])
    let whole = ResponseStream.run([stream], kept: nil)
    let split = ResponseStream.run(ReadCut.cut(stream, at: input[0..<3]), kept: nil)
    Fuzz.check(whole == split, "split reads differ:\n  whole: \(whole)\n  split: \(split)")
    let bytewise = ResponseStream.run(stream.map { [$0] }, kept: nil)
    Fuzz.check(whole == bytewise, "byte-by-byte reads differ:\n  whole: \(whole)\n  bytes: \(bytewise)")
    let filtered = ResponseStream.run(ReadCut.cut(stream, at: input[0..<3]), kept: UpstreamHTTPClient.gatewayHeaders)
    var expected = whole
    expected.headers = whole.headers.filter { $0.0.lowercased() == "retry-after" }
    Fuzz.check(filtered == expected, "kept headers differ:\n  all: \(whole)\n  kept: \(filtered)")
    if case .complete = whole.end {
        Fuzz.check((200...599).contains(whole.status), "complete answer with status \(whole.status)")
    }
    let small = ResponseStream.run([stream], kept: nil, ceilings: ResponseStream.small)
    let smallSplit = ResponseStream.run(ReadCut.cut(stream, at: input[0..<3]), kept: nil, ceilings: ResponseStream.small)
    Fuzz.check(small == smallSplit, "split reads differ under the ceilings:\n  whole: \(small)\n  split: \(smallSplit)")
    if let reference = ReferenceAnswer.decode(stream) {
        Fuzz.check(whole.end == .complete, "well-formed answer not complete: \(whole) (reference \(reference))")
        Fuzz.check(whole.stray == (reference.end < stream.count),
                   "bytes after the answer: stray \(whole.stray), reference ends at \(reference.end) of \(stream.count)")
        let (maxBody, maxHead) = ResponseStream.small
        if reference.headLength > maxHead || reference.end - reference.headLength > maxBody {
            Fuzz.check(small.end == .badResponse, "over the ceilings (head \(reference.headLength), body \(reference.end - reference.headLength)) but \(small)")
        } else {
            Fuzz.check(small == whole, "under the ceilings but different:\n  small: \(small)\n  whole: \(whole)")
        }
        Fuzz.check(whole.status == reference.status, "status \(whole.status), reference \(reference.status)")
        Fuzz.check(whole.body == reference.body, "body \(whole.body.count) bytes, reference \(reference.body.count): \(whole)")
        Fuzz.check(whole.headers.map { [$0.0, trim($0.1)] } == reference.headers.map { [$0.0, $0.1] },
                   "headers \(whole.headers), reference \(reference.headers)")
        if let keepAlive = reference.keepAlive { Fuzz.check(whole.keepAlive == keepAlive, "keepAlive \(whole.keepAlive), reference \(keepAlive)") }
    }
    return 0
}

private func trim(_ value: String) -> String {
    value.trimmingCharacters(in: CharacterSet(charactersIn: " \t"))
}

/// Cuts a stream into reads.
private enum ReadCut {
    /// `stream` cut at the offsets the three `choosers` bytes pick (some may coincide).
    static func cut(_ stream: [UInt8], at choosers: ArraySlice<UInt8>) -> [[UInt8]] {
        guard !stream.isEmpty else { return [stream] }
        let offsets = choosers.map { Int($0) * stream.count / 256 }.sorted()
        var pieces: [[UInt8]] = []
        var from = 0
        for offset in offsets + [stream.count] where offset > from {
            pieces.append(Array(stream[from..<offset]))
            from = offset
        }
        return pieces
    }
}

/// Drives one parser as an upstream connection does.
private enum ResponseStream {
    /// How the stream ended for the client.
    enum End: Equatable { case complete, badResponse, closed }

    /// What the client made of the stream.
    struct Outcome: Equatable, CustomStringConvertible {
        var end: End
        var status = 0
        var headers: [(String, String)] = []
        var body = Data()
        var keepAlive = false
        /// Bytes came after the complete answer: the connection is dropped (they answer nothing that was asked).
        var stray = false
        /// Bytes after the answer in the read that completed it.
        var leftover = 0
        static func == (a: Outcome, b: Outcome) -> Bool {
            a.end == b.end && a.status == b.status && a.body == b.body && a.keepAlive == b.keepAlive
                && a.stray == b.stray && a.headers.map { [$0.0, $0.1] } == b.headers.map { [$0.0, $0.1] }
        }
        var description: String { "\(end) \(status) \(headers) body=\(body.count) keepAlive=\(keepAlive) stray=\(stray)" }
    }

    /// The small ceilings (body as sent, head) of the parser that checks them.
    static let small = (body: 256, head: 128)

    /// Feeds the reads until the answer is complete or invalid, then the end of the stream; with `ceilings`,
    /// checks after every read that the parser holds no more than they allow.
    static func run(_ reads: [[UInt8]], kept: [StaticString]?, ceilings: (body: Int, head: Int)? = nil) -> Outcome {
        let parser = ceilings.map { UpstreamResponseParser(keptHeaders: kept, maxBodyBytes: $0.body, maxHeadBytes: $0.head) }
            ?? UpstreamResponseParser(keptHeaders: kept)
        parser.reset()
        var result: UpstreamResponseParser.Outcome = .needMore
        var stray = false
        for (index, read) in reads.enumerated() {
            result = read.withUnsafeBytes { parser.feed($0) }
            if let ceilings {
                Fuzz.check(parser.heldBytes <= ceilings.body + ceilings.head, "holds \(parser.heldBytes) bytes over the ceilings")
            }
            if result != .needMore {
                // As the connection does: anything after the complete answer, in this read or a later one.
                stray = reads[(index + 1)...].contains { !$0.isEmpty }
                break
            }
        }
        if result == .needMore { result = parser.feedEndOfStream() }
        switch result {
        case .complete(let leftover):
            return Outcome(end: .complete, status: parser.status, headers: parser.headers.map { ($0.0, $0.1) },
                           body: parser.body.data, keepAlive: parser.keepAlive, stray: stray || leftover > 0, leftover: leftover)
        case .invalid:
            return Outcome(end: .badResponse)
        case .truncated, .needMore:
            return Outcome(end: .closed)
        }
    }
}

/// A strict, straightforward decoder of one answer (after any 1xx ones): nil for anything it does not take
/// as plainly well-formed.
private struct ReferenceAnswer: CustomStringConvertible {
    var status: Int
    var headers: [(String, String)]
    var body: Data
    /// Whether the connection stays open (nil when the reference does not decide it).
    var keepAlive: Bool?
    /// Where the final answer's head ends (interim answers included), and where the answer ends.
    var headLength: Int
    var end: Int
    var description: String { "\(status) \(headers) body=\(body.count) head=\(headLength) end=\(end)" }

    static func decode(_ bytes: [UInt8]) -> ReferenceAnswer? {
        var at = 0
        while true {
            guard let (status, minor, headers, next) = head(bytes, from: at) else { return nil }
            at = next
            let lengths = headers.filter { $0.0.lowercased() == "content-length" }.map(\.1)
            let encodings = headers.filter { $0.0.lowercased() == "transfer-encoding" }.map(\.1)
            let connection = headers.filter { $0.0.lowercased() == "connection" }.map { $0.1.lowercased() }
            if (100...199).contains(status) {
                // Interim answers carry no body; keep them plain.
                guard status != 101, lengths.isEmpty, encodings.isEmpty, connection.isEmpty, minor == 1 else { return nil }
                continue
            }
            guard lengths.count <= 1, encodings.count <= 1, !(lengths.count == 1 && encodings.count == 1),
                  connection.allSatisfy({ $0 == "close" || $0 == "keep-alive" }) else { return nil }
            var keepAlive: Bool? = minor == 1 ? !connection.contains("close") : connection.contains("keep-alive")
            if Set(connection).count > 1 { keepAlive = nil }
            var body: [UInt8]
            var end: Int
            if status == 204 || status == 304 {
                guard lengths.isEmpty, encodings.isEmpty else { return nil }
                body = []
                end = at
            } else if let encoding = encodings.first {
                guard encoding.lowercased() == "chunked", let (decoded, last) = chunked(bytes, from: at) else { return nil }
                body = decoded
                end = last
            } else if let length = lengths.first {
                // Digits only: `Int` alone would take "-66" or "+3", which no well-formed answer carries.
                guard (1...6).contains(length.utf8.count), length.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                      let n = Int(length), at + n <= bytes.count else { return nil }
                body = Array(bytes[at..<(at + n)])
                end = at + n
            } else {
                body = Array(bytes[at...])
                keepAlive = false
                end = bytes.count
            }
            return ReferenceAnswer(status: status, headers: headers, body: Data(body), keepAlive: keepAlive,
                                   headLength: at, end: end)
        }
    }

    /// `HTTP/1.x NNN reason CRLF`, then `name: value CRLF` lines, then CRLF.
    private static func head(_ b: [UInt8], from start: Int) -> (Int, Int, [(String, String)], Int)? {
        guard let lineEnd = crlf(b, from: start) else { return nil }
        let line = Array(b[start..<lineEnd])
        guard line.count >= 12, Array(line[0..<7]) == Array("HTTP/1.".utf8), line[7] == 0x30 || line[7] == 0x31,
              line[8] == 0x20, line[9...11].allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), line[9] != 0x30,
              line.count == 12 || line[12] == 0x20,
              line.dropFirst(12).allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        let status = Int(String(decoding: line[9...11], as: UTF8.self)) ?? 0
        guard (100...599).contains(status) else { return nil }
        var headers: [(String, String)] = []
        var at = lineEnd + 2
        while true {
            guard let end = crlf(b, from: at) else { return nil }
            if end == at { return (status, Int(line[7] - 0x30), headers, at + 2) }
            let field = b[at..<end]
            guard let colon = field.firstIndex(of: 0x3A), colon > at else { return nil }
            let name = field[at..<colon]
            let tokenChars = Set(Array("!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ".utf8))
            guard name.allSatisfy({ tokenChars.contains($0) }) else { return nil }
            let value = field[(colon + 1)...]
            guard value.allSatisfy({ ($0 >= 0x21 && $0 < 0x7F) || $0 == 0x20 }) else { return nil }
            headers.append((String(decoding: name, as: UTF8.self), trim(String(decoding: value, as: UTF8.self))))
            at = end + 2
        }
    }

    /// A chunked body: `HEX CRLF data CRLF`… `0 CRLF CRLF`, no extensions or trailers; the data and where it ends.
    private static func chunked(_ b: [UInt8], from start: Int) -> ([UInt8], Int)? {
        var out: [UInt8] = []
        var at = start
        while true {
            guard let end = crlf(b, from: at), end > at, end - at <= 6,
                  let size = Int(String(decoding: b[at..<end], as: UTF8.self), radix: 16),
                  b[at..<end].allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x61 && $0 <= 0x66) || ($0 >= 0x41 && $0 <= 0x46) })
            else { return nil }
            at = end + 2
            if size == 0 {
                guard at + 2 <= b.count, b[at] == 0x0D, b[at + 1] == 0x0A else { return nil }
                return (out, at + 2)
            }
            guard at + size + 2 <= b.count, b[at + size] == 0x0D, b[at + size + 1] == 0x0A else { return nil }
            out += b[at..<(at + size)]
            at += size + 2
        }
    }

    /// The index of the next CRLF from `start`; nil if none, or a bare CR or LF comes first.
    private static func crlf(_ b: [UInt8], from start: Int) -> Int? {
        var i = start
        while i < b.count {
            if b[i] == 0x0D { return i + 1 < b.count && b[i + 1] == 0x0A ? i : nil }
            if b[i] == 0x0A { return nil }
            i += 1
        }
        return nil
    }
}
