import CLLHTTP

/// The head of a client request in its common shape, read in one pass over the bytes without llhttp.
///
/// The shape: the request line `METHOD /target HTTP/1.1 CRLF` with one of GET, HEAD, POST, PUT, DELETE, OPTIONS and
/// PATCH, one space each side of an origin-form target of visible ASCII; header fields `name: value CRLF`, each name a
/// token, each value visible ASCII, spaces and tabs; exactly one `Host`, with a valid value; `Connection`, if any,
/// exactly `keep-alive` or `close`; no `Content-Length`, `Transfer-Encoding`, `Upgrade` or `Proxy-Connection`
/// (so no body); then CRLF. The whole head is within the bytes at hand and the head limit, and starts at their first
/// byte (no empty line before it).
///
/// Anything else (HTTP/1.0, a body, an empty line first, an obs-fold, a bare CR or LF, a head not all read yet, every
/// request the assembler refuses, …) is not the shape: `HTTPRequestAssembler` gives it to llhttp from its first byte.
/// On the shape, llhttp reads the same method, target, fields (values without the spaces and tabs around them) and
/// keep-alive verdict (HTTP/1.1: kept unless `close`), and the assembler's checks pass; `PlainRequestHeadTests` and
/// the fuzz target `http_request_plain` check it.
struct PlainRequestHead {
    /// The method, as llhttp numbers it.
    let method: llhttp_method
    /// Where the target starts (after the method and its space) and ends (at the space before the version).
    let targetStart: Int
    let targetEnd: Int
    /// Where the header fields start (after the request line) and end (at the CRLF of the empty line).
    let fieldsStart: Int
    let fieldsEnd: Int
    /// Whether the connection may carry another request after this one (no `Connection: close`).
    let keepAlive: Bool

    /// The head's length in bytes, its last CRLF included.
    var length: Int { fieldsEnd + 2 }

    /// Reads the head at the start of the `count` bytes at `p`, at most `maxLength` bytes of it; `field` gets each
    /// header field's name and value (without the spaces and tabs around it) as offsets from `fieldsStart`, in order.
    /// Nil when the bytes are not the shape (`field` may have been called for the fields before the point where they
    /// stop being it).
    @inline(__always)
    static func read(_ p: UnsafePointer<UInt8>, count: Int, maxLength: Int,
                     field: (_ nameStart: Int, _ nameEnd: Int, _ valueStart: Int, _ valueEnd: Int) -> Void) -> PlainRequestHead? {
        let n = min(count, maxLength)
        // The shortest head: `GET / HTTP/1.1`, one field `Host:`, the empty line.
        guard n >= 25 else { return nil }
        let word = UInt64(littleEndian: UnsafeRawPointer(p).loadUnaligned(as: UInt64.self))
        let method: llhttp_method
        let targetStart: Int
        // The method and its space, read as little-endian words: `GET `, `PUT `, `POST `, `HEAD `, `PATCH `,
        // `DELETE `, `OPTIONS `.
        switch word & 0xFFFF_FFFF {
        case 0x2054_4547: (method, targetStart) = (HTTP_GET, 4)
        case 0x2054_5550: (method, targetStart) = (HTTP_PUT, 4)
        case 0x5453_4F50 where p[4] == PlainBytes.space: (method, targetStart) = (HTTP_POST, 5)
        case 0x4441_4548 where p[4] == PlainBytes.space: (method, targetStart) = (HTTP_HEAD, 5)
        case 0x4354_4150 where word & 0xFFFF_FFFF_FFFF == 0x2048_4354_4150: (method, targetStart) = (HTTP_PATCH, 6)
        case 0x454C_4544 where word & 0xFF_FFFF_FFFF_FFFF == 0x20_4554_454C_4544: (method, targetStart) = (HTTP_DELETE, 7)
        case 0x4954_504F where word == 0x2053_4E4F_4954_504F: (method, targetStart) = (HTTP_OPTIONS, 8)
        default: return nil
        }
        guard p[targetStart] == UInt8(ascii: "/") else { return nil }
        var i = PlainBytes.visibleEnd(p, from: targetStart &+ 1, to: n)
        let targetEnd = i
        // ` HTTP/1.1 CRLF`, and at least the empty line after it.
        guard n &- i >= 13, p[i] == PlainBytes.space,
              UInt64(littleEndian: UnsafeRawPointer(p + i + 1).loadUnaligned(as: UInt64.self)) == PlainBytes.http11,
              p[i + 9] == PlainBytes.cr, p[i + 10] == PlainBytes.lf else { return nil }
        i &+= 11
        let fieldsStart = i

        var hosts = 0
        var keepAlive = true
        while true {
            guard i + 1 < n else { return nil }
            if p[i] == PlainBytes.cr {
                guard p[i + 1] == PlainBytes.lf, hosts == 1 else { return nil }
                return PlainRequestHead(method: method, targetStart: targetStart, targetEnd: targetEnd,
                                        fieldsStart: fieldsStart, fieldsEnd: i, keepAlive: keepAlive)
            }
            let nameStart = i
            i = PlainBytes.wordEnd(p, from: i, to: n, dot: false)
            // The common name ends at its colon; any other goes on byte by byte through the token characters.
            guard i < n else { return nil }
            if p[i] != PlainBytes.colon {
                while i < n && PlainBytes.isToken(p[i]) { i &+= 1 }
                guard i < n, p[i] == PlainBytes.colon else { return nil }
            }
            guard i > nameStart else { return nil }
            let nameEnd = i
            i &+= 1
            // The common value starts after one space: a byte above the space ends the loop with one test.
            while i < n && p[i] <= PlainBytes.space && (p[i] == PlainBytes.space || p[i] == PlainBytes.tab) { i &+= 1 }
            let valueStart = i
            i = PlainBytes.plainEnd(p, from: i, to: n)
            while i < n && p[i] == PlainBytes.tab { i = PlainBytes.plainEnd(p, from: i &+ 1, to: n) }
            guard i + 1 < n, p[i] == PlainBytes.cr, p[i + 1] == PlainBytes.lf else { return nil }
            let lineEnd = i
            var valueEnd = i
            while valueEnd > valueStart && p[valueEnd - 1] <= PlainBytes.space
                    && (p[valueEnd - 1] == PlainBytes.space || p[valueEnd - 1] == PlainBytes.tab) { valueEnd -= 1 }
            i &+= 2
            let name = p + nameStart, nameCount = nameEnd &- nameStart
            switch nameCount {
            case 4 where PlainBytes.spells(name, 4, "host"):
                guard hosts == 0 else { return nil }
                // The common host, a name of letters, digits, `-` and `.` with an optional `:port`, is valid; any other
                // value is checked in full.
                var end = PlainBytes.wordEnd(p, from: valueStart, to: n, dot: true)
                if end < valueEnd && p[end] == PlainBytes.colon {
                    end &+= 1
                    while end < valueEnd && p[end] &- 0x30 < 10 { end &+= 1 }
                }
                guard end == valueEnd
                        || HTTPRequestAssembler.validHost(UnsafeBufferPointer(start: p + valueStart, count: valueEnd &- valueStart))
                else { return nil }
                hosts = 1
            case 7 where PlainBytes.spells(name, 7, "upgrade"), 14 where PlainBytes.spells(name, 14, "content-length"),
                 16 where PlainBytes.spells(name, 16, "proxy-connection"),
                 17 where PlainBytes.spells(name, 17, "transfer-encoding"):
                return nil
            case 10 where PlainBytes.spells(name, 10, "connection"):
                // As sent (trailing whitespace included): llhttp reads the value's tokens, and this shape holds the
                // one it reads alike.
                if PlainBytes.spells(p + valueStart, lineEnd &- valueStart, "close") {
                    keepAlive = false
                } else if !PlainBytes.spells(p + valueStart, lineEnd &- valueStart, "keep-alive") {
                    return nil
                }
            default:
                break
            }
            field(nameStart &- fieldsStart, nameEnd &- fieldsStart, valueStart &- fieldsStart, valueEnd &- fieldsStart)
        }
    }
}
