import Foundation
@testable import PosternCore
@testable import PosternHTTP

/// The server's request parsing (`HTTPRequestAssembler`, driven the way `HTTPConnection` drives it), with a
/// 1 KiB head limit and a 2 KiB body ceiling. The first three input bytes choose where the rest is cut into
/// reads. Checks: no crash or hang; every request has a method, a target in a form the parser allows, header
/// names without CR, LF, NUL, colon or whitespace, values without CR, LF or NUL, a body within the ceiling and as long
/// as its `Content-Length`; nothing is parsed after a refusal or a request that ends the connection; and the
/// same bytes in one read and cut into several give the same requests, the same `100 Continue`s and the same
/// refusal status. And RFC 9112's framing, strictly (`StrictFraming`, an independent reader of it): every request
/// handed out is one that reader frames too, with the same body (so no request is taken from bytes with a bare CR or
/// LF outside a body's data, or chunk data not followed by CRLF), and every HTTP/1.1 request has one valid Host.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 3 else { return 0 }
    let input = Array(UnsafeBufferPointer(start: bytes, count: size))
    let stream = Array(input[3...])
    let whole = RequestStream.run([stream])
    let strict = StrictFraming.bodies(stream)
    Fuzz.check(whole.requests.count <= strict.count,
               "\(whole.requests.count) requests taken where a strict reader frames \(strict.count): \(whole)")
    for (taken, framed) in zip(whole.requests, strict) where taken.method != "CONNECT" {
        Fuzz.check(taken.body == Data(framed), "a body of \(taken.body.count) bytes where a strict reader frames \(framed.count)")
    }
    let split = RequestStream.run(RequestStream.cut(stream, at: input[0..<3]))
    Fuzz.check(whole == split, "split reads differ:\n  whole: \(whole)\n  split: \(split)")
    let bytewise = RequestStream.run(stream.map { [$0] })
    Fuzz.check(whole == bytewise, "byte-by-byte reads differ:\n  whole: \(whole)\n  bytes: \(bytewise)")
    return 0
}

/// Drives one assembler over a sequence of reads and records what it hands out.
private enum RequestStream {
    /// Small limits, so that inputs of a few KiB reach them.
    static let limits: ServerLimits = {
        var limits = ServerLimits()
        limits.maxHeaderBytes = 1024
        limits.bodyCeiling = 2048
        return limits
    }()

    /// One request as handed out (what the handler and the connection see of it).
    struct Seen: Equatable, CustomStringConvertible {
        var method: String
        var path: String
        var query: String
        var headers: [String]
        var body: Data
        var keepAlive: Bool
        var http10: Bool
        var description: String { "\(method) \(path)?\(query) \(headers) body=\(body.count) keepAlive=\(keepAlive) http10=\(http10)" }
    }

    /// Everything one stream gave.
    struct Outcome: Equatable, CustomStringConvertible {
        var requests: [Seen] = []
        /// `100 Continue`s sent, by the number of requests handed out before each.
        var continues: [Int] = []
        /// The status of the refusal that ended the stream.
        var refusal: String?
        /// Its reason: not compared, since when the head is both too large and malformed, which is found first
        /// depends on the reads (a name or value piece is counted only once the parser hands it over).
        var reason = ""
        static func == (a: Outcome, b: Outcome) -> Bool {
            a.requests == b.requests && a.continues == b.continues && a.refusal == b.refusal
        }
        var description: String { "\(requests) continues=\(continues) refusal=\(refusal ?? "none") \(reason)" }
    }

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

    /// Feeds the reads as `HTTPConnection.drive` does: unparsed bytes stay in front of the next read, a whole
    /// request is handed out before anything after it is parsed, and a refusal or a request after which the
    /// connection closes ends the stream.
    static func run(_ reads: [[UInt8]]) -> Outcome {
        let assembler = HTTPRequestAssembler(limits: limits, peer: "192.0.2.7")
        var outcome = Outcome()
        // Every other request is kept while the ones after it are parsed (the handler may still hold it): its
        // headers must read the same at the end. The others are dropped, so the assembler reuses their storage.
        var kept: [(request: HTTPRequest, headers: [String])] = []
        defer {
            for (request, headers) in kept {
                Fuzz.check(request.headers.map { "\($0.0): \($0.1)" } == headers, "a kept request's headers changed: \(headers)")
            }
        }
        var pending: [UInt8] = []
        for read in reads {
            pending += read
            var start = 0
            while start < pending.count {
                let (n, step) = pending.withUnsafeBytes { raw in
                    // `start < pending.count`: the buffer is not empty.
                    assembler.parse(raw.baseAddress! + start, count: raw.count - start)
                }
                Fuzz.check(n >= 0 && n <= pending.count - start, "parsed \(n) of \(pending.count - start) bytes")
                start += n
                if assembler.takeContinue() { outcome.continues.append(outcome.requests.count) }
                switch step {
                case .needMore:
                    Fuzz.check(start == pending.count, "needMore with \(pending.count - start) bytes left unparsed (the connection would spin)")
                case .request(let request, let keepAlive, let http10):
                    check(request)
                    let seen = Seen(method: request.method.description, path: request.path, query: request.query,
                                    headers: request.headers.map { "\($0.0): \($0.1)" }, body: request.body,
                                    keepAlive: keepAlive, http10: http10)
                    if outcome.requests.count % 2 == 0 { kept.append((request, seen.headers)) }
                    outcome.requests.append(seen)
                    Fuzz.check(!assembler.messageOpen, "a message is still open after a whole request")
                    if !keepAlive { return outcome }
                case .refused(let refusal):
                    outcome.refusal = describe(refusal)
                    outcome.reason = reason(refusal)
                    Fuzz.check(!assembler.messageOpen, "a message is still open after a refusal")
                    // Whatever follows a refusal is never taken as a request.
                    let rest = Array(pending[start...]) + [0x47, 0x45, 0x54, 0x20, 0x2F, 0x20, 0x48, 0x54, 0x54, 0x50, 0x2F, 0x31,
                                                           0x2E, 0x31, 0x0D, 0x0A, 0x0D, 0x0A]
                    let (_, after) = rest.withUnsafeBytes { assembler.parse($0.baseAddress!, count: $0.count) }
                    if case .request = after { Fuzz.check(false, "a request was parsed after a refusal") }
                    return outcome
                }
            }
            pending.removeFirst(start)
        }
        return outcome
    }

    /// The refusal's status.
    static func describe(_ refusal: EdgeRefusal) -> String {
        switch refusal {
        case .badFraming: return "400"
        case .bodyTooLarge: return "413"
        case .requestTimeout: return "408"
        }
    }

    /// The refusal's reason (the request it carries is partial, cut where the limit was hit).
    static func reason(_ refusal: EdgeRefusal) -> String {
        if case .badFraming(_, let reason) = refusal { return reason }
        return ""
    }

    /// The per-request invariants.
    static func check(_ request: HTTPRequest) {
        let method = request.method.description
        Fuzz.check(!method.isEmpty && method.utf8.allSatisfy { $0 >= 0x41 && $0 <= 0x5A || $0 == 0x2D }, "odd method \(method)")
        let path = request.path
        // Origin form, `*`, absolute form (the parser takes any alphabetic scheme), or authority form for CONNECT.
        let scheme = path.utf8.prefix { ($0 | 0x20) >= 0x61 && ($0 | 0x20) <= 0x7A }.count
        let absolute = scheme > 0 && path.utf8.dropFirst(scheme).starts(with: "://".utf8)
        // By byte: a combining mark after `/` makes the first Character of the String not "/".
        // A CONNECT's authority-form target may hold a `?`: the split gives an empty path and the rest as query.
        let formOK = path.utf8.first == 0x2F || path.utf8.first == 0x2A || absolute
            || (method == "CONNECT" && !(path.isEmpty && request.query.isEmpty))
        Fuzz.check(formOK, "target \(path.debugDescription) is in no form the parser allows")
        for (name, value) in request.headers {
            Fuzz.check(!name.isEmpty, "empty header name")
            Fuzz.check(!name.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 || $0 == 0x3A || $0 == 0x20 || $0 == 0x09 }, "header name \(name.debugDescription)")
            Fuzz.check(!value.utf8.contains { $0 == 0x0D || $0 == 0x0A || $0 == 0 }, "header value \(value.debugDescription)")
        }
        Fuzz.check(request.body.count <= limits.bodyCeiling, "body of \(request.body.count) bytes above the ceiling")
        let lengths = request.headers.values("Content-Length")
        Fuzz.check(lengths.count <= 1, "a request with \(lengths.count) Content-Length lines was taken")
        let encodings = request.headers.values("Transfer-Encoding")
        // The parser (llhttp) reads no body for CONNECT: what follows its head is the tunnel, and the connection ends
        // after the answer (keep-alive is off for an upgrade), so a Content-Length there frames nothing.
        if let length = lengths.first, method != "CONNECT" {
            Fuzz.check(encodings.isEmpty, "Content-Length with Transfer-Encoding was taken")
            Fuzz.check(Int(length) == request.body.count, "Content-Length \(length) but a body of \(request.body.count)")
        }
        if request.method == .head || request.method == .other("TRACE") {
            Fuzz.check(request.body.isEmpty, "\(method) with a body")
        }
        let hosts = request.headers.values("Host")
        Fuzz.check(hosts.count <= 1, "a request with \(hosts.count) Host lines was taken")
        Fuzz.check(hosts.allSatisfy { !$0.utf8.contains { $0 <= 0x20 || $0 == 0x2F || $0 >= 0x7F } }, "Host \(hosts) was taken")
    }
}

/// RFC 9112's message framing read strictly and independently of llhttp: empty lines (CRLF) before a request line
/// skipped; a head of CRLF-ended lines up to an empty one, no CR or LF elsewhere in it; then the body by
/// `Transfer-Encoding: chunked` (hex size, extensions up to CRLF, the data, CRLF; after the last chunk, trailer lines
/// up to an empty one), else by `Content-Length`, else none (a CONNECT has none). `bodies` gives the body of each
/// message framed before the first byte that breaks these rules (or the end of the stream).
enum StrictFraming {
    static func bodies(_ s: [UInt8]) -> [[UInt8]] {
        var out: [[UInt8]] = []
        var i = 0
        /// The line starting at `i` up to its CRLF (moving `i` past it); nil at a bare CR or LF or the stream's end.
        func line() -> [UInt8]? {
            var j = i
            while j < s.count {
                if s[j] == 0x0D {
                    guard j + 1 < s.count, s[j + 1] == 0x0A else { return nil }
                    defer { i = j + 2 }
                    return Array(s[i..<j])
                }
                if s[j] == 0x0A { return nil }
                j += 1
            }
            return nil
        }
        while i < s.count {
            while i + 1 < s.count && s[i] == 0x0D && s[i + 1] == 0x0A { i += 2 }
            guard let requestLine = line() else { return out }
            var length: Int?
            var chunked = false
            while true {
                guard let field = line() else { return out }
                if field.isEmpty { break }
                guard let colon = field.firstIndex(of: 0x3A) else { continue }
                let name = String(decoding: field[..<colon], as: UTF8.self).lowercased()
                let value = String(decoding: field[(colon + 1)...], as: UTF8.self).trimmingCharacters(in: .whitespaces)
                if name == "content-length" { length = value.utf8.allSatisfy { $0 >= 0x30 && $0 <= 0x39 } ? Int(value) : nil }
                if name == "transfer-encoding" { chunked = value.lowercased() == "chunked" }
            }
            var body: [UInt8] = []
            if requestLine.starts(with: Array("CONNECT ".utf8)) {
                out.append(body)
                return out  // what follows is a tunnel, not a request
            } else if chunked {
                while true {
                    guard let sizeLine = line() else { return out }
                    let digits = sizeLine.prefix { (0x30...0x39).contains($0) || (0x41...0x46).contains($0) || (0x61...0x66).contains($0) }
                    guard !digits.isEmpty, digits.count <= 15, let size = Int(String(decoding: digits, as: UTF8.self), radix: 16) else { return out }
                    if size == 0 {
                        while true {
                            guard let trailer = line() else { return out }
                            if trailer.isEmpty { break }
                        }
                        break
                    }
                    guard s.count - i >= size + 2, s[i + size] == 0x0D, s[i + size + 1] == 0x0A else { return out }
                    body += s[i..<(i + size)]
                    i += size + 2
                }
            } else if let length {
                guard s.count - i >= length else { return out }
                body = Array(s[i..<(i + length)])
                i += length
            }
            out.append(body)
        }
        return out
    }
}
