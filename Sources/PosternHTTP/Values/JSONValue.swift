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
    /// Parses a complete JSON text (RFC 8259), nesting limited to `maxDepth`. Tokens are read by `JSONScan`,
    /// the scanner the transcoder uses too, so both accept and refuse the same texts.
    package static func parse(_ data: Data, maxDepth: Int = 64) throws(JSONParseError) -> JSONValue {
        let bytes = [UInt8](data)
        guard !bytes.isEmpty else { throw JSONScan.fail("unexpected end of input", 0) }
        let result = bytes.withUnsafeBufferPointer { buffer -> Result<JSONValue, JSONParseError> in
            // Non-nil: the array is not empty.
            var parser = JSONParser(p: buffer.baseAddress!, end: buffer.count, maxDepth: maxDepth)
            do throws(JSONParseError) {
                return .success(try parser.parseDocument())
            } catch {
                return .failure(error)
            }
        }
        return try result.get()
    }

    /// Parses a complete JSON text from a string.
    package static func parse(_ text: String) throws(JSONParseError) -> JSONValue {
        try parse(Data(text.utf8))
    }
}

/// Builds a `JSONValue` tree over borrowed bytes: the structure here, every token through `JSONScan`.
private struct JSONParser {
    let p: UnsafePointer<UInt8>
    let end: Int
    let maxDepth: Int
    var pos = 0
    var depth = 0

    init(p: UnsafePointer<UInt8>, end: Int, maxDepth: Int) {
        self.p = p
        self.end = end
        self.maxDepth = maxDepth
    }

    mutating func parseDocument() throws(JSONParseError) -> JSONValue {
        skipSpace()
        let v = try parseValue()
        skipSpace()
        guard pos == end else { throw fail("unexpected data after the JSON value") }
        return v
    }

    func fail(_ what: String) -> JSONParseError {
        JSONScan.fail(what, pos)
    }

    mutating func skipSpace() {
        while pos < end, p[pos] == 0x20 || p[pos] == 0x0A || p[pos] == 0x0D || p[pos] == 0x09 {
            pos += 1
        }
    }

    mutating func parseValue() throws(JSONParseError) -> JSONValue {
        guard pos < end else { throw fail("unexpected end of input") }
        switch p[pos] {
        case UInt8(ascii: "{"): return try parseObject()
        case UInt8(ascii: "["): return try parseArray()
        case UInt8(ascii: "\""): return .string(try parseString())
        case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"):
            let first = p[pos]
            pos = try JSONScan.literal(p, pos, end)
            return first == UInt8(ascii: "n") ? .null : .bool(first == UInt8(ascii: "t"))
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return try parseNumber()
        default: throw fail("unexpected character")
        }
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
        if pos < end, p[pos] == UInt8(ascii: "}") { pos += 1; depth -= 1; return .object(members) }
        while true {
            skipSpace()
            guard pos < end, p[pos] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let key = try parseString()
            skipSpace()
            guard pos < end, p[pos] == UInt8(ascii: ":") else { throw fail("expected ':'") }
            pos += 1
            skipSpace()
            let value = try parseValue()
            members.append((key, value))
            skipSpace()
            guard pos < end else { throw fail("unexpected end of input") }
            if p[pos] == UInt8(ascii: ",") { pos += 1; continue }
            if p[pos] == UInt8(ascii: "}") { pos += 1; break }
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
        if pos < end, p[pos] == UInt8(ascii: "]") { pos += 1; depth -= 1; return .array(elements) }
        while true {
            skipSpace()
            elements.append(try parseValue())
            skipSpace()
            guard pos < end else { throw fail("unexpected end of input") }
            if p[pos] == UInt8(ascii: ",") { pos += 1; continue }
            if p[pos] == UInt8(ascii: "]") { pos += 1; break }
            throw fail("expected ',' or ']'")
        }
        depth -= 1
        return .array(elements)
    }

    /// The string at `pos`: validated by `scanJSONStringRest`, then its bytes taken as they are (no escape: valid
    /// UTF-8 already) or its escapes decoded.
    mutating func parseString() throws(JSONParseError) -> String {
        let start = pos + 1
        let (next, flags) = try scanJSONStringRest(p, start, end, flags: 0)
        pos = next
        let content = UnsafeBufferPointer(start: p + start, count: next - 1 - start)
        if flags & JSONTokenFlags.escaped == 0 { return String(decoding: content, as: UTF8.self) }
        var out: [UInt8] = []
        out.reserveCapacity(content.count)
        var i = 0
        while i < content.count {
            let b = content[i]
            guard b == UInt8(ascii: "\\") else {
                out.append(b)
                i += 1
                continue
            }
            let e = content[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "b"): out.append(8)
            case UInt8(ascii: "f"): out.append(12)
            case UInt8(ascii: "n"): out.append(10)
            case UInt8(ascii: "r"): out.append(13)
            case UInt8(ascii: "t"): out.append(9)
            case UInt8(ascii: "u"):
                // Validated: four hex digits, a high surrogate followed by a low one.
                var scalar = Self.hex4(content, i)
                i += 4
                if scalar >= 0xD800, scalar < 0xDC00 {
                    let low = Self.hex4(content, i + 2)
                    i += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                guard let u = Unicode.Scalar(scalar) else { throw fail("invalid code point") }
                out.append(contentsOf: Array(String(Character(u)).utf8))
            default: out.append(e)  // `"`, `\`, `/`
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Four validated hex digits at `at`.
    static func hex4(_ bytes: UnsafeBufferPointer<UInt8>, _ at: Int) -> UInt32 {
        var value: UInt32 = 0
        for i in at..<(at + 4) { value = value << 4 | (JSONScan.hexValue(bytes[i]) ?? 0) }
        return value
    }

    /// The number at `pos`: validated by `scanJSONNumber`, then read as `.int` when an integer fits Int64, else
    /// `.double`.
    mutating func parseNumber() throws(JSONParseError) -> JSONValue {
        let start = pos
        let (next, _) = try scanJSONNumber(p, start, end)
        pos = next
        guard let value = JSONScan.numberValue(p + start, next - start) else { throw fail("number out of range") }
        return value
    }
}
