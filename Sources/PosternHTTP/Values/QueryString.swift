import FoundationEssentials
import PosternIO

/// Parsing and building of `application/x-www-form-urlencoded` query strings.
package enum QueryString {
    /// Parses `a=1&b=x%20y` into decoded pairs: one pass over the bytes, split at `&` (empty parts skipped) and at
    /// each part's first `=`; a name or value without `%` or `+` becomes a string straight from its bytes.
    package static func parse(_ query: String) -> [(name: String, value: String)] {
        guard !query.isEmpty else { return [] }
        var query = query
        return query.withUTF8 { bytes in
            var parts = 1
            for byte in bytes where byte == UInt8(ascii: "&") { parts += 1 }
            var items: [(name: String, value: String)] = []
            items.reserveCapacity(parts)
            var start = 0
            while start < bytes.count {
                var end = start
                var equals = -1
                while end < bytes.count && bytes[end] != UInt8(ascii: "&") {
                    if equals < 0 && bytes[end] == UInt8(ascii: "=") { equals = end }
                    end += 1
                }
                if end > start {
                    if equals < 0 {
                        items.append((decode(UnsafeBufferPointer(rebasing: bytes[start..<end])), ""))
                    } else {
                        items.append((decode(UnsafeBufferPointer(rebasing: bytes[start..<equals])),
                                      decode(UnsafeBufferPointer(rebasing: bytes[(equals + 1)..<end]))))
                    }
                }
                start = end + 1
            }
            return items
        }
    }

    /// Builds a query string from pairs, percent-encoding both sides.
    package static func build(_ items: [(String, String)]) -> String {
        // One buffer for the whole query (no String per name and value).
        var out: [UInt8] = []
        out.reserveCapacity(items.reduce(0) { $0 + $1.0.utf8.count + $1.1.utf8.count + 2 } + 16)
        for (i, (name, value)) in items.enumerated() {
            if i > 0 { out.append(UInt8(ascii: "&")) }
            encode(name, encodingDots: false, into: &out)
            out.append(UInt8(ascii: "="))
            encode(value, encodingDots: false, into: &out)
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// `path?query`, the query built from `items` as `build` does, percent-encoded in one pass straight into
    /// one string (sized for the worst case, three bytes per input byte: no counting pass, no intermediate buffer).
    package static func target(path: String, query items: [(String, String)]) -> String {
        var capacity = path.utf8.count + 1
        for (name, value) in items { capacity += 3 * (name.utf8.count + value.utf8.count) + 2 }
        return String(unsafeUninitializedCapacity: capacity) { out in
            // Non-nil: capacity > 0 (the `?` at least).
            let base = out.baseAddress!
            var at = 0
            let hex: StaticString = "0123456789ABCDEF"
            func putEncoded(_ byte: UInt8) {
                if isUnreserved(byte, encodingDots: false) {
                    base[at] = byte
                    at &+= 1
                } else {
                    base[at] = UInt8(ascii: "%")
                    base[at &+ 1] = hex.utf8Start[Int(byte >> 4)]
                    base[at &+ 2] = hex.utf8Start[Int(byte & 0x0f)]
                    at &+= 3
                }
            }
            for byte in path.utf8 {
                base[at] = byte
                at &+= 1
            }
            base[at] = UInt8(ascii: "?")
            at &+= 1
            for (i, (name, value)) in items.enumerated() {
                if i > 0 {
                    base[at] = UInt8(ascii: "&")
                    at &+= 1
                }
                for byte in name.utf8 { putEncoded(byte) }
                base[at] = UInt8(ascii: "=")
                at &+= 1
                for byte in value.utf8 { putEncoded(byte) }
            }
            return at
        }
    }

    /// True for the bytes the percent-encoder keeps as they are.
    @inline(__always)
    private static func isUnreserved(_ byte: UInt8, encodingDots: Bool) -> Bool {
        switch byte {
        case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "~"):
            return true
        case UInt8(ascii: "."):
            return !encodingDots
        default:
            return false
        }
    }

    /// Percent-encodes everything outside the RFC 3986 unreserved set (the one percent-encoder).
    /// `encodingDots` encodes `.` too, for path segments: no normalising hop can then read `..` as a dot segment.
    package static func encode(_ s: String, encodingDots: Bool = false) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count + 8)
        encode(s, encodingDots: encodingDots, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the percent-encoding of `s` to `out`.
    package static func encode(_ s: String, encodingDots: Bool, into out: inout [UInt8]) {
        let hex: StaticString = "0123456789ABCDEF"
        for byte in s.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(byte)
            case UInt8(ascii: ".") where !encodingDots:
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hex.utf8Start[Int(byte >> 4)])
                out.append(hex.utf8Start[Int(byte & 0x0f)])
            }
        }
    }

    /// Decodes `%XX` escapes and `+`; invalid escapes are kept literally.
    package static func decode(_ s: String) -> String {
        var s = s
        return s.withUTF8 { decode($0) }
    }

    /// `decode` of UTF-8 bytes (bytes that decode to invalid UTF-8 become U+FFFD, as `String(decoding:)` makes them).
    private static func decode(_ part: UnsafeBufferPointer<UInt8>) -> String {
        guard part.contains(where: { $0 == UInt8(ascii: "%") || $0 == UInt8(ascii: "+") }) else {
            return String(decoding: part, as: UTF8.self)
        }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(part.count)
        var i = 0
        while i < part.count {
            let b = part[i]
            if b == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if b == UInt8(ascii: "%"), i + 2 < part.count, let hi = hexValue(part[i + 1]), let lo = hexValue(part[i + 2]) {
                bytes.append(hi << 4 | lo)
                i += 2
            } else {
                bytes.append(b)
            }
            i += 1
        }
        return String(decoding: bytes, as: UTF8.self)
    }

    private static func hexValue(_ b: UInt8) -> UInt8? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return b - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return b - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return b - UInt8(ascii: "A") + 10
        default: return nil
        }
    }
}
