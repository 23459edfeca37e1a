/// The head of an upstream answer in its common shape, read in one pass over the bytes without llhttp.
///
/// The shape: the status line `HTTP/1.1 NNN reason CRLF` with a final status that has a body (200–599 but 204
/// and 304) and a reason of visible ASCII and spaces; header fields `name: value CRLF`, each name a token, each
/// value visible ASCII, spaces and tabs; exactly one `Content-Length`, digits only, not above the body ceiling;
/// `Connection`, if any, exactly `keep-alive` or `close`; no `Transfer-Encoding`, `Upgrade` or
/// `Proxy-Connection`; then CRLF. The whole head is within the bytes at hand and the head ceiling.
///
/// Anything else (an interim answer, HTTP/1.0, a chunked body or one that runs to the close, an obs-fold, a bare
/// LF, a head not all read yet, …) is not the shape: `UpstreamResponseParser` gives that answer to llhttp from
/// its first byte. On the shape, llhttp reads the same status, fields (values without the spaces and tabs around
/// them), body length and keep-alive verdict (HTTP/1.1: kept unless `close`); the fuzz target
/// `http_response_plain` and `PlainAnswerHeadTests` check it.
struct PlainAnswerHead {
    /// The status code (200–599, not 204 or 304).
    let status: Int
    /// The body's length, from `Content-Length`.
    let contentLength: Int
    /// Whether the connection may carry another request after this answer (no `Connection: close`).
    let keepAlive: Bool
    /// The head's length in bytes, its last CRLF included: the body starts there.
    let length: Int

    private static let cr = PlainBytes.cr, lf = PlainBytes.lf, space = PlainBytes.space, tab = PlainBytes.tab,
                       colon = PlainBytes.colon

    /// Reads the head at the start of `bytes`, at most `maxLength` bytes of it, with a `Content-Length` of at most
    /// `maxBody`; `field` gets the name and value (without the spaces and tabs around it) of each header field whose
    /// name's length has its bit in `lengths` (bit 63: 63 bytes or more), in order. Nil when the bytes are not the
    /// shape (`field` may have been called for the fields before the point where they stop being it).
    static func read(_ bytes: UnsafeRawBufferPointer, maxLength: Int, maxBody: Int, lengths: UInt64 = .max,
                     field: (UnsafeBufferPointer<UInt8>, UnsafeBufferPointer<UInt8>) -> Void) -> PlainAnswerHead? {
        let n = min(bytes.count, maxLength)
        // The shortest head: the status line without a reason, one field `Content-Length:0`, the empty line.
        guard n >= 35, let raw = bytes.baseAddress else { return nil }
        let p = raw.assumingMemoryBound(to: UInt8.self)
        // "HTTP/1.1 NNN "
        guard UInt64(littleEndian: raw.loadUnaligned(as: UInt64.self)) == 0x312E_312F_5054_5448, p[8] == space,
              p[12] == space else { return nil }
        let hundreds = p[9] &- 0x30, tens = p[10] &- 0x30, units = p[11] &- 0x30
        guard hundreds >= 2 && hundreds <= 5 && tens <= 9 && units <= 9 else { return nil }
        let status = Int(hundreds) * 100 + Int(tens) * 10 + Int(units)
        guard status != 204 && status != 304 else { return nil }
        var i = 13
        while i < n && p[i] &- space < 0x5F { i &+= 1 }
        guard i + 1 < n, p[i] == cr, p[i + 1] == lf else { return nil }
        i &+= 2

        var contentLength = -1
        var keepAlive = true
        while true {
            guard i + 1 < n else { return nil }
            if p[i] == cr {
                guard p[i + 1] == lf, contentLength >= 0 else { return nil }
                return PlainAnswerHead(status: status, contentLength: contentLength, keepAlive: keepAlive, length: i + 2)
            }
            let nameStart = i
            i = PlainBytes.wordEnd(p, from: i, to: n, dot: false)
            // The common name ends at its colon; any other goes on byte by byte through the token characters.
            guard i < n else { return nil }
            if p[i] != colon {
                while i < n && PlainBytes.isToken(p[i]) { i &+= 1 }
                guard i < n, p[i] == colon else { return nil }
            }
            guard i > nameStart else { return nil }
            let name = UnsafeBufferPointer(start: p + nameStart, count: i &- nameStart)
            i &+= 1
            // The common value starts after one space: a byte above the space ends the loop with one test.
            while i < n && p[i] <= space && (p[i] == space || p[i] == tab) { i &+= 1 }
            let valueStart = i
            i = PlainBytes.plainEnd(p, from: i, to: n)
            while i < n && p[i] == tab { i = PlainBytes.plainEnd(p, from: i &+ 1, to: n) }
            guard i + 1 < n, p[i] == cr, p[i + 1] == lf else { return nil }
            let sent = UnsafeBufferPointer(start: p + valueStart, count: i &- valueStart)
            i &+= 2
            switch name.count {
            case 7 where spells(name, "upgrade"), 16 where spells(name, "proxy-connection"),
                 17 where spells(name, "transfer-encoding"):
                return nil
            case 10 where spells(name, "connection"):
                // As sent: llhttp reads the value's tokens, and this shape holds the one it reads alike.
                if spells(sent, "close") {
                    keepAlive = false
                } else if !spells(sent, "keep-alive") {
                    return nil
                }
            case 14 where spells(name, "content-length"):
                guard contentLength < 0, let length = digits(sent, upTo: maxBody) else { return nil }
                contentLength = length
            default:
                break
            }
            if lengths >> UInt64(min(name.count, 63)) & 1 != 0 {
                var end = sent.count
                while end > 0 && (sent[end - 1] == space || sent[end - 1] == tab) { end -= 1 }
                field(name, UnsafeBufferPointer(rebasing: sent[..<end]))
            }
        }
    }

    /// Whether `bytes` spell `lowercase` (`PlainBytes.spells`).
    @inline(__always)
    private static func spells(_ bytes: UnsafeBufferPointer<UInt8>, _ lowercase: StaticString) -> Bool {
        // Not nil: the names and values read are within the bytes at hand.
        PlainBytes.spells(bytes.baseAddress!, bytes.count, lowercase)
    }

    /// The number `bytes` spell in decimal digits (one at least), when it is at most `limit`.
    private static func digits(_ bytes: UnsafeBufferPointer<UInt8>, upTo limit: Int) -> Int? {
        guard !bytes.isEmpty else { return nil }
        var value = 0
        for byte in bytes {
            let digit = byte &- 0x30
            guard digit <= 9 else { return nil }
            value = value * 10 + Int(digit)
            guard value <= limit else { return nil }
        }
        return value
    }
}
