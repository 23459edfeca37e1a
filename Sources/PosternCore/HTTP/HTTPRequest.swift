import Foundation

/// A request as the gateway sees it: a plain value, no libevent pointers.
public struct HTTPRequest: Sendable {
    /// The request method.
    public var method: HTTPMethod
    /// The path as received (still percent-encoded, no query), e.g. `/api/v1/books/12`; routing decodes each segment.
    public var path: String
    /// The raw query string without `?` (may be empty).
    public var query: String
    /// Request headers.
    public var headers: HTTPHeaders
    /// The request body (empty when none).
    public var body: Data
    /// The socket peer address (IP only).
    public var remoteAddress: String

    /// Builds a request.
    public init(method: HTTPMethod, path: String, query: String = "", headers: HTTPHeaders = HTTPHeaders(),
                body: Data = Data(), remoteAddress: String = "127.0.0.1") {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// Splits a request target such as `/a/b?x=1` into path and query (at the first `?` byte).
    public init(method: HTTPMethod, target: String, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data(),
                remoteAddress: String = "127.0.0.1") {
        if let q = target.utf8.firstIndex(of: UInt8(ascii: "?")) {
            self.init(method: method, path: String(target[..<q]), query: String(target[target.index(after: q)...]),
                      headers: headers, body: body, remoteAddress: remoteAddress)
        } else {
            self.init(method: method, path: target, headers: headers, body: body, remoteAddress: remoteAddress)
        }
    }

    /// The query parameters, percent-decoded (`+` read as space), in order.
    public var queryItems: [(name: String, value: String)] {
        QueryString.parse(query)
    }
}

/// Parsing and building of `application/x-www-form-urlencoded` query strings.
public enum QueryString {
    /// Parses `a=1&b=x%20y` into decoded pairs.
    public static func parse(_ query: String) -> [(name: String, value: String)] {
        guard !query.isEmpty else { return [] }
        return query.split(separator: "&", omittingEmptySubsequences: true).map { part in
            let pieces = part.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = decode(String(pieces[0]))
            let value = pieces.count > 1 ? decode(String(pieces[1])) : ""
            return (name, value)
        }
    }

    /// Builds a query string from pairs, percent-encoding both sides.
    public static func build(_ items: [(String, String)]) -> String {
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

    /// `path?query`, the query built from `items` as `build` does, written into one string sized up front
    /// (no intermediate buffer, no concatenation).
    public static func target(path: String, query items: [(String, String)]) -> String {
        var length = path.utf8.count + 1
        for (name, value) in items { length += encodedCount(name) + encodedCount(value) + 2 }
        return String(unsafeUninitializedCapacity: length) { out in
            var at = 0
            func put(_ byte: UInt8) {
                out[at] = byte
                at += 1
            }
            let hex: StaticString = "0123456789ABCDEF"
            func putEncoded(_ text: String) {
                for byte in text.utf8 {
                    if isUnreserved(byte, encodingDots: false) {
                        put(byte)
                    } else {
                        put(UInt8(ascii: "%"))
                        put(hex.utf8Start[Int(byte >> 4)])
                        put(hex.utf8Start[Int(byte & 0x0f)])
                    }
                }
            }
            for byte in path.utf8 { put(byte) }
            put(UInt8(ascii: "?"))
            for (i, (name, value)) in items.enumerated() {
                if i > 0 { put(UInt8(ascii: "&")) }
                putEncoded(name)
                put(UInt8(ascii: "="))
                putEncoded(value)
            }
            return at
        }
    }

    /// The length of `s` percent-encoded (dots kept).
    private static func encodedCount(_ s: String) -> Int {
        var count = 0
        for byte in s.utf8 { count += isUnreserved(byte, encodingDots: false) ? 1 : 3 }
        return count
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
    public static func encode(_ s: String, encodingDots: Bool = false) -> String {
        var out: [UInt8] = []
        out.reserveCapacity(s.utf8.count + 8)
        encode(s, encodingDots: encodingDots, into: &out)
        return String(decoding: out, as: UTF8.self)
    }

    /// Appends the percent-encoding of `s` to `out`.
    static func encode(_ s: String, encodingDots: Bool, into out: inout [UInt8]) {
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
    public static func decode(_ s: String) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(s.utf8.count)
        var it = Array(s.utf8)[...]
        while let b = it.popFirst() {
            if b == UInt8(ascii: "+") {
                bytes.append(UInt8(ascii: " "))
            } else if b == UInt8(ascii: "%"), it.count >= 2,
                      let hi = hexValue(it[it.startIndex]), let lo = hexValue(it[it.startIndex + 1]) {
                bytes.append(hi << 4 | lo)
                it = it.dropFirst(2)
            } else {
                bytes.append(b)
            }
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
