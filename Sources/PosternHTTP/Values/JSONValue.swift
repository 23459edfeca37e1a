import FoundationEssentials
import PosternIO

/// A JSON document as a value: objects keep their key order, integers stay integers.
package enum JSONValue: Sendable, Equatable {
    case null
    case bool(Bool)
    case int(Int64)
    case double(Double)
    case string(String)
    case array([JSONValue])
    case object([(String, JSONValue)])

    package static func == (lhs: JSONValue, rhs: JSONValue) -> Bool {
        switch (lhs, rhs) {
        case (.null, .null): return true
        case let (.bool(a), .bool(b)): return a == b
        case let (.int(a), .int(b)): return a == b
        case let (.double(a), .double(b)): return a == b
        case let (.int(a), .double(b)), let (.double(b), .int(a)): return Double(a) == b
        case let (.string(a), .string(b)): return a == b
        case let (.array(a), .array(b)): return a == b
        case let (.object(a), .object(b)):
            guard a.count == b.count else { return false }
            // Same key order (the usual case): member by member.
            if zip(a, b).allSatisfy({ $0.0 == $1.0 }) { return zip(a, b).allSatisfy { $0.1 == $1.1 } }
            // Else key order does not matter, but a repeated key's values are compared in order, so that
            // `==` stays reflexive and symmetric on objects with duplicate keys.
            var rest = Dictionary(grouping: b, by: \.0).mapValues { $0.map(\.1)[...] }
            for (key, value) in a {
                guard let next = rest[key]?.popFirst(), next == value else { return false }
            }
            return true
        default: return false
        }
    }

    /// The member `key` of an object (first match), else nil.
    package subscript(key: String) -> JSONValue? {
        if case .object(let members) = self { return members.first { $0.0 == key }?.1 }
        return nil
    }

    /// The string payload, if this is a string.
    package var stringValue: String? {
        if case .string(let s) = self { return s }
        return nil
    }

    /// The integer payload, if this is an integer (or a double with no fraction).
    package var intValue: Int64? {
        switch self {
        case .int(let i): return i
        case .double(let d) where d == d.rounded() && abs(d) < 9e15: return Int64(d)
        default: return nil
        }
    }

    /// The members, if this is an object.
    package var objectValue: [(String, JSONValue)]? {
        if case .object(let members) = self { return members }
        return nil
    }

    /// The elements, if this is an array.
    package var arrayValue: [JSONValue]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// True for `null`.
    package var isNull: Bool {
        if case .null = self { return true }
        return false
    }

    /// A short name of the JSON type, for error messages.
    package var typeName: String {
        switch self {
        case .null: return "null"
        case .bool: return "boolean"
        case .int, .double: return "number"
        case .string: return "string"
        case .array: return "array"
        case .object: return "object"
        }
    }
}

// MARK: - Serialization

extension JSONValue {
    /// The compact JSON text of this value, as UTF-8.
    package func serialized() -> Data {
        var out: [UInt8] = []
        out.reserveCapacity(256)
        write(into: &out)
        return Data(out)
    }

    /// The compact JSON text of this value.
    package var text: String { String(decoding: serialized(), as: UTF8.self) }

    /// Appends the compact JSON text of this value to `out`.
    package func write(into out: inout [UInt8]) {
        switch self {
        case .null: out.append(contentsOf: "null".utf8)
        case .bool(let b): out.append(contentsOf: (b ? "true" : "false").utf8)
        case .int(let i): out.append(contentsOf: String(i).utf8)
        case .double(let d):
            if d.isFinite {
                if d == d.rounded(), abs(d) < 1e15 { out.append(contentsOf: String(Int64(d)).utf8) }
                else { out.append(contentsOf: "\(d)".utf8) }
            } else {
                out.append(contentsOf: "null".utf8)
            }
        case .string(let s): JSONValue.writeString(s, into: &out)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (i, e) in elements.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                e.write(into: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (i, (k, v)) in members.enumerated() {
                if i > 0 { out.append(UInt8(ascii: ",")) }
                JSONValue.writeString(k, into: &out)
                out.append(UInt8(ascii: ":"))
                v.write(into: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    /// Appends `s` as a JSON string literal.
    package static func writeString(_ s: String, into out: inout [UInt8]) {
        out.append(UInt8(ascii: "\""))
        for b in s.utf8 {
            switch b {
            case UInt8(ascii: "\""): out.append(contentsOf: [92, 34])
            case UInt8(ascii: "\\"): out.append(contentsOf: [92, 92])
            case 0x0A: out.append(contentsOf: [92, UInt8(ascii: "n")])
            case 0x0D: out.append(contentsOf: [92, UInt8(ascii: "r")])
            case 0x09: out.append(contentsOf: [92, UInt8(ascii: "t")])
            case 0..<0x20:
                let hex = Array("0123456789abcdef".utf8)
                out.append(contentsOf: [92, UInt8(ascii: "u"), 48, 48, hex[Int(b >> 4)], hex[Int(b & 15)]])
            default: out.append(b)
            }
        }
        out.append(UInt8(ascii: "\""))
    }
}

// MARK: - Parsing

/// Why a JSON text could not be parsed.
package struct JSONParseError: Error, Sendable, CustomStringConvertible {
    /// What went wrong and where.
    package let description: String
}

extension JSONValue {
    /// Parses a complete JSON text (RFC 8259), nesting limited to `maxDepth`.
    package static func parse(_ data: Data, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        var parser = JSONParser(bytes: [UInt8](data), maxDepth: maxDepth)
        return try parser.parseDocument()
    }

    /// Parses a complete JSON text from a string.
    package static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Data(text.utf8))
    }
}

private struct JSONParser {
    let bytes: [UInt8]
    let maxDepth: Int
    var pos = 0
    var depth = 0

    init(bytes: [UInt8], maxDepth: Int) {
        self.bytes = bytes
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        skipSpace()
        let v = try parseValue()
        skipSpace()
        guard pos == bytes.count else { throw fail("unexpected data after the JSON value") }
        return v
    }

    func fail(_ what: String) -> JSONParseError {
        JSONParseError(description: "\(what) at byte \(pos)")
    }

    mutating func skipSpace() {
        while pos < bytes.count, bytes[pos] == 0x20 || bytes[pos] == 0x0A || bytes[pos] == 0x0D || bytes[pos] == 0x09 {
            pos += 1
        }
    }

    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard pos < bytes.count else { throw fail("unexpected end of input") }
        switch bytes[pos] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"): try literal("true"); return .bool(true)
        case UInt8(ascii: "f"): try literal("false"); return .bool(false)
        case UInt8(ascii: "n"): try literal("null"); return .null
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character")
        }
    }

    mutating func literal(_ word: String) throws(JSONParseError) {
        let w = Array(word.utf8)
        guard pos + w.count <= bytes.count else { throw fail("unexpected end of input") }
        for (i, b) in w.enumerated() where bytes[pos + i] != b { throw fail("invalid literal") }
        pos += w.count
    }

    mutating func enter() throws(JSONParseError) {
        depth += 1
        if depth > maxDepth { throw fail("nesting too deep") }
    }

    mutating func parseObject() throws(JSONParseError) -> JSONValue {
        try enter()
        pos += 1
        var members: [(String, JSONValue)] = []
        skipSpace()
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "}") { pos += 1; depth -= 1; return .object(members) }
        while true {
            skipSpace()
            guard pos < bytes.count, bytes[pos] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let key = try parseString()
            skipSpace()
            guard pos < bytes.count, bytes[pos] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            pos += 1
            skipSpace()
            let value = try parseValue()
            members.append((key, value))
            skipSpace()
            guard pos < bytes.count else { throw fail("unexpected end of input") }
            if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
            if bytes[pos] == UInt8(ascii: "}") { pos += 1; break }
            throw fail("expected ',' or '}'")
        }
        depth -= 1
        return .object(members)
    }

    mutating func parseArray() throws(JSONParseError) -> JSONValue {
        try enter()
        pos += 1
        var elements: [JSONValue] = []
        skipSpace()
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "]") { pos += 1; depth -= 1; return .array(elements) }
        while true {
            skipSpace()
            elements.append(try parseValue())
            skipSpace()
            guard pos < bytes.count else { throw fail("unexpected end of input") }
            if bytes[pos] == UInt8(ascii: ",") { pos += 1; continue }
            if bytes[pos] == UInt8(ascii: "]") { pos += 1; break }
            throw fail("expected ',' or ']'")
        }
        depth -= 1
        return .array(elements)
    }

    mutating func parseHex4() throws(JSONParseError) -> UInt32 {
        guard pos + 4 <= bytes.count else { throw fail("bad \\u escape") }
        var v: UInt32 = 0
        for _ in 0..<4 {
            let b = bytes[pos]
            let d: UInt32
            switch b {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): d = UInt32(b - 48)
            case UInt8(ascii: "a")...UInt8(ascii: "f"): d = UInt32(b - 87)
            case UInt8(ascii: "A")...UInt8(ascii: "F"): d = UInt32(b - 55)
            default: throw fail("bad \\u escape")
            }
            v = v << 4 | d
            pos += 1
        }
        return v
    }

    mutating func parseString() throws(JSONParseError) -> String {
        pos += 1
        let start = pos
        // Fast path: no escapes.
        while pos < bytes.count {
            let b = bytes[pos]
            if b == UInt8(ascii: "\"") {
                let s = bytes[start..<pos]
                pos += 1
                guard let str = String(validating: s, as: UTF8.self) else { throw fail("invalid UTF-8 in string") }
                return str
            }
            if b == UInt8(ascii: "\\") || b < 0x20 { break }
            pos += 1
        }
        var out: [UInt8] = Array(bytes[start..<pos])
        while true {
            guard pos < bytes.count else { throw fail("unterminated string") }
            let b = bytes[pos]
            if b == UInt8(ascii: "\"") { pos += 1; break }
            if b < 0x20 { throw fail("control character in string") }
            if b != UInt8(ascii: "\\") { out.append(b); pos += 1; continue }
            pos += 1
            guard pos < bytes.count else { throw fail("unterminated string") }
            let e = bytes[pos]
            pos += 1
            switch e {
            case UInt8(ascii: "\""): out.append(34)
            case UInt8(ascii: "\\"): out.append(92)
            case UInt8(ascii: "/"): out.append(47)
            case UInt8(ascii: "b"): out.append(8)
            case UInt8(ascii: "f"): out.append(12)
            case UInt8(ascii: "n"): out.append(10)
            case UInt8(ascii: "r"): out.append(13)
            case UInt8(ascii: "t"): out.append(9)
            case UInt8(ascii: "u"):
                var scalar = try parseHex4()
                if scalar >= 0xD800, scalar < 0xDC00 {
                    guard pos + 6 <= bytes.count, bytes[pos] == 92, bytes[pos + 1] == UInt8(ascii: "u") else {
                        throw fail("unpaired surrogate")
                    }
                    pos += 2
                    let low = try parseHex4()
                    guard low >= 0xDC00, low < 0xE000 else { throw fail("unpaired surrogate") }
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                } else if scalar >= 0xDC00, scalar < 0xE000 {
                    throw fail("unpaired surrogate")
                }
                guard let u = Unicode.Scalar(scalar) else { throw fail("invalid code point") }
                out.append(contentsOf: Array(String(Character(u)).utf8))
            default: throw fail("bad escape")
            }
        }
        guard let str = String(validating: out, as: UTF8.self) else { throw fail("invalid UTF-8 in string") }
        return str
    }

    mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = pos
        var isInteger = true
        if bytes[pos] == UInt8(ascii: "-") { pos += 1 }
        guard pos < bytes.count, bytes[pos] >= 48, bytes[pos] <= 57 else { throw fail("bad number") }
        if bytes[pos] == 48 {
            pos += 1
        } else {
            while pos < bytes.count, bytes[pos] >= 48, bytes[pos] <= 57 { pos += 1 }
        }
        if pos < bytes.count, bytes[pos] == UInt8(ascii: ".") {
            isInteger = false
            pos += 1
            guard pos < bytes.count, bytes[pos] >= 48, bytes[pos] <= 57 else { throw fail("bad number") }
            while pos < bytes.count, bytes[pos] >= 48, bytes[pos] <= 57 { pos += 1 }
        }
        if pos < bytes.count, bytes[pos] == UInt8(ascii: "e") || bytes[pos] == UInt8(ascii: "E") {
            isInteger = false
            pos += 1
            if pos < bytes.count, bytes[pos] == UInt8(ascii: "+") || bytes[pos] == UInt8(ascii: "-") { pos += 1 }
            guard pos < bytes.count, bytes[pos] >= 48, bytes[pos] <= 57 else { throw fail("bad number") }
            while pos < bytes.count, bytes[pos] >= 48, bytes[pos] <= 57 { pos += 1 }
        }
        let text = String(decoding: bytes[start..<pos], as: UTF8.self)
        if isInteger, let i = Int64(text) { return .int(i) }
        guard let d = Double(text) else { throw fail("bad number") }
        // `1e999` reads as infinity, which JSON cannot carry (it would serialize as `null`).
        guard d.isFinite else { throw fail("number out of range") }
        return .double(d)
    }
}
