import FoundationEssentials
import PosternHTTP

/// Writing: every value is written as `JSONValue.write` would write it after parsing, so that the
/// output is byte for byte the reference renderer's.
extension TranscodePass {
    /// Writes the current item from its slots: mapped fields in config order, ids and required
    /// fields as strings, optional fields without a value omitted. `valueBytes` is the length of
    /// the values in the slots.
    ///
    /// Room for the whole item is reserved once; the common fields (a string copied as it is, a plain
    /// integer id or required field) are then stored at an offset kept in a register. The rare ones
    /// go through the `TranscoderOutput` methods, which reserve for themselves; the item's room is
    /// reserved again after each.
    mutating func writeItem(valueBytes: Int) throws(GatewayError) {
        let bound = itemBytes &+ valueBytes
        out.reserve(bound)
        var o = out.store(UInt8(ascii: "{"), at: out.count)
        var comma = 0
        let keyBytes = self.keyBytes
        for i in 0..<fieldCount {
            let field = fields[i]
            let slot = slots[i]
            // A string that needs no re-encoding (a non-empty one for the id) is copied as it is; a
            // non-negative plain integer id or required field in quotes.
            if slot.kind == .string, slot.start >= 0, slot.flags & JSONTokenFlags.reencoded == 0,
               !field.isID || slot.end &- slot.start > 2 {
                o = out.storeBlocks(keyBytes + (field.keyStart &- comma), field.keyCount &+ comma, at: o)
                o = storeToken(slot.start, slot.end, at: o)
                comma = 1
                continue
            }
            if slot.kind == .number, slot.start >= 0, slot.flags & JSONTokenFlags.plainInteger != 0,
               field.isID || field.isRequired, p[slot.start] != UInt8(ascii: "-") {
                o = out.storeBlocks(keyBytes + (field.keyStart &- comma), field.keyCount &+ comma, at: o)
                o = out.store(UInt8(ascii: "\""), at: o)
                o = storeToken(slot.start, slot.end, at: o)
                o = out.store(UInt8(ascii: "\""), at: o)
                comma = 1
                continue
            }
            out.commit(o)
            var first = comma == 0
            try writeField(field, slot, &first)
            comma = first ? 0 : 1
            out.reserve(bound)
            o = out.count
        }
        o = out.store(UInt8(ascii: "}"), at: o)
        out.commit(o)
    }

    /// Copies the input bytes `start..<end` to offset `at` of the output (room reserved): by blocks
    /// when fifteen more bytes of input follow them, else exactly. Returns the offset past them.
    @inline(__always)
    func storeToken(_ start: Int, _ end: Int, at: Int) -> Int {
        if end &+ 15 <= self.end {
            return out.storeBlocks(p + start, end &- start, at: at)
        }
        return out.store(p + start, end &- start, at: at)
    }

    /// One field that is not a common shape (a missing or null value, a string to re-encode, an empty
    /// id, a number that is not a plain integer, a boolean, a container), through `out`.
    private mutating func writeField(_ field: TranscoderField, _ slot: TranscoderSlot,
                                     _ first: inout Bool) throws(GatewayError) {
        let present = slot.start >= 0 && slot.kind != .null
        if field.isID {
            guard present else { throw .upstreamError("item has no usable id: missing or null") }
            writeKey(field, &first)
            try writeID(slot)
        } else if field.isRequired {
            writeKey(field, &first)
            if present {
                try writeRequired(slot)
            } else {
                out.reserve(2)
                out.appendReserved(UInt8(ascii: "\""))
                out.appendReserved(UInt8(ascii: "\""))
            }
        } else if present {
            writeKey(field, &first)
            writeValue(slot)
        }
    }

    /// `,"<resourceName>":` (no comma before the first).
    @inline(__always)
    private mutating func writeKey(_ field: TranscoderField, _ first: inout Bool) {
        let comma = first ? 0 : 1
        first = false
        out.appendBlocks(keyBytes + (field.keyStart &- comma), field.keyCount &+ comma)
    }

    /// The key: a non-empty string as it is, an integral number in decimal, in quotes.
    mutating func writeID(_ slot: TranscoderSlot) throws(GatewayError) {
        switch slot.kind {
        case .string:
            guard slot.end - slot.start > 2 else { throw .upstreamError("item has an empty id") }
            writeString(slot.start, slot.end, slot.flags)
        case .number where slot.flags & JSONTokenFlags.plainInteger != 0:
            writeQuoted(slot.start, slot.end)
        case .number:
            guard let value = Self.numberValue(p + slot.start, slot.end - slot.start),
                  let id = value.idString else {
                throw .upstreamError("item has an id that is not an integer")
            }
            writeText(id)
        default:
            throw .upstreamError("item has an id that is a \(slot.kind)")
        }
    }

    /// A required field: strings as they are, numbers and booleans as their text, in quotes.
    mutating func writeRequired(_ slot: TranscoderSlot) throws(GatewayError) {
        switch slot.kind {
        case .string:
            writeString(slot.start, slot.end, slot.flags)
        case .number where slot.flags & JSONTokenFlags.plainInteger != 0:
            writeQuoted(slot.start, slot.end)
        case .number, .bool:
            if slot.kind == .bool {
                out.reserve(slot.end - slot.start + 2)
                out.appendReserved(UInt8(ascii: "\""))
                out.append(p + slot.start, slot.end - slot.start)
                out.appendReserved(UInt8(ascii: "\""))
            } else if let value = Self.numberValue(p + slot.start, slot.end - slot.start),
                      let text = value.requiredString {
                writeText(text)
            } else {
                throw .upstreamError("required field is not a finite number")
            }
        default:
            throw .upstreamError("required field is a \(slot.kind)")
        }
    }

    /// An optional field's value, compact.
    mutating func writeValue(_ slot: TranscoderSlot) {
        switch slot.kind {
        case .string: writeString(slot.start, slot.end, slot.flags)
        case .number: writeNumber(slot.start, slot.end, plain: slot.flags & JSONTokenFlags.plainInteger != 0)
        case .bool, .null: appendToken(slot.start, slot.end)
        case .object, .array: writeCompact(slot.start, slot.end)
        }
    }

    /// `s` as a JSON string literal (the rare paths that went through `JSONValue`).
    private mutating func writeText(_ s: String) {
        var bytes: [UInt8] = []
        JSONValue.writeString(s, into: &bytes)
        out.append(bytes)
    }

    /// A plain integer in quotes (`-0` reads as 0).
    mutating func writeQuoted(_ start: Int, _ end: Int) {
        out.reserve(end - start + 2)
        out.appendReserved(UInt8(ascii: "\""))
        writeNumber(start, end, plain: true)
        out.appendReserved(UInt8(ascii: "\""))
    }

    /// A number as the reference writes it: a plain integer as its digits (`-0` as `0`), anything
    /// else through `JSONValue` (an Int64 in decimal, a double in Swift's shortest form).
    private mutating func writeNumber(_ start: Int, _ end: Int, plain: Bool) {
        if plain {
            if end - start == 2, p[start] == UInt8(ascii: "-"), p[start + 1] == UInt8(ascii: "0") {
                out.append(UInt8(ascii: "0"))
            } else {
                appendToken(start, end)
            }
            return
        }
        // Validated already: the value is finite.
        guard let value = Self.numberValue(p + start, end - start) else { return }
        var bytes: [UInt8] = []
        value.write(into: &bytes)
        out.append(bytes)
    }

    /// The validated string token `start..<end` (quotes included): copied when it needs no
    /// re-encoding (`JSONTokenFlags.reencoded`), else decoded and re-escaped as
    /// `JSONValue.writeString` does.
    @inline(__always)
    private mutating func writeString(_ start: Int, _ end: Int, _ flags: UInt8) {
        if flags & JSONTokenFlags.reencoded == 0 {
            appendToken(start, end)
        } else {
            _ = writeEscapedString(start)
        }
    }

    /// Copies the input bytes `start..<end` as they are: by blocks (`TranscoderOutput.appendBlocks`)
    /// when fifteen more bytes of input follow them, else exactly.
    @inline(__always)
    mutating func appendToken(_ start: Int, _ end: Int) {
        if end &+ 15 <= self.end {
            out.appendBlocks(p + start, end &- start)
        } else {
            out.append(p + start, end &- start)
        }
    }

    /// Re-escapes the validated string whose opening quote is at `start`; returns the offset past
    /// its closing quote.
    private mutating func writeEscapedString(_ start: Int) -> Int {
        out.append(UInt8(ascii: "\""))
        var i = start + 1
        var run = i
        while i < end {
            let b = p[i]
            if b == UInt8(ascii: "\"") { break }
            if b != UInt8(ascii: "\\") {
                i += 1
                continue
            }
            out.append(p + run, i - run)
            let e = p[i + 1]
            i += 2
            switch e {
            case UInt8(ascii: "u"):
                var scalar = Self.hex4Unchecked(p + i)
                i += 4
                if scalar >= 0xD800, scalar < 0xDC00 {
                    // Validated: a low surrogate escape follows.
                    let low = Self.hex4Unchecked(p + i + 2)
                    i += 6
                    scalar = 0x10000 + ((scalar - 0xD800) << 10) + (low - 0xDC00)
                }
                writeScalar(scalar)
            case UInt8(ascii: "b"): writeEscapedASCII(0x08)
            case UInt8(ascii: "f"): writeEscapedASCII(0x0C)
            case UInt8(ascii: "n"): writeEscapedASCII(0x0A)
            case UInt8(ascii: "r"): writeEscapedASCII(0x0D)
            case UInt8(ascii: "t"): writeEscapedASCII(0x09)
            default: writeEscapedASCII(e) // `"`, `\`, `/`
            }
            run = i
        }
        out.reserve(i - run + 1)
        out.append(p + run, i - run)
        out.appendReserved(UInt8(ascii: "\""))
        return i + 1
    }

    /// Four validated hex digits.
    @inline(__always)
    private static func hex4Unchecked(_ at: UnsafePointer<UInt8>) -> UInt32 {
        var value: UInt32 = 0
        for i in 0..<4 { value = value << 4 | (hexValue(at[i]) ?? 0) }
        return value
    }

    /// One Unicode scalar: ASCII as `JSONValue.writeString` escapes it, the rest as UTF-8.
    private mutating func writeScalar(_ scalar: UInt32) {
        out.reserve(4)
        switch scalar {
        case 0..<0x80:
            writeEscapedASCII(UInt8(scalar))
        case 0x80..<0x800:
            out.appendReserved(UInt8(0xC0 | (scalar >> 6)))
            out.appendReserved(UInt8(0x80 | (scalar & 0x3F)))
        case 0x800..<0x10000:
            out.appendReserved(UInt8(0xE0 | (scalar >> 12)))
            out.appendReserved(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            out.appendReserved(UInt8(0x80 | (scalar & 0x3F)))
        default:
            out.appendReserved(UInt8(0xF0 | (scalar >> 18)))
            out.appendReserved(UInt8(0x80 | ((scalar >> 12) & 0x3F)))
            out.appendReserved(UInt8(0x80 | ((scalar >> 6) & 0x3F)))
            out.appendReserved(UInt8(0x80 | (scalar & 0x3F)))
        }
    }

    /// One ASCII byte of string content, escaped as `JSONValue.writeString` escapes it.
    private mutating func writeEscapedASCII(_ b: UInt8) {
        out.reserve(6)
        switch b {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"):
            out.appendReserved(UInt8(ascii: "\\"))
            out.appendReserved(b)
        case 0x0A:
            out.appendReserved(UInt8(ascii: "\\"))
            out.appendReserved(UInt8(ascii: "n"))
        case 0x0D:
            out.appendReserved(UInt8(ascii: "\\"))
            out.appendReserved(UInt8(ascii: "r"))
        case 0x09:
            out.appendReserved(UInt8(ascii: "\\"))
            out.appendReserved(UInt8(ascii: "t"))
        case 0..<0x20:
            let hex: StaticString = "0123456789abcdef"
            out.appendReserved(UInt8(ascii: "\\"))
            out.appendReserved(UInt8(ascii: "u"))
            out.appendReserved(UInt8(ascii: "0"))
            out.appendReserved(UInt8(ascii: "0"))
            out.appendReserved(hex.utf8Start[Int(b >> 4)])
            out.appendReserved(hex.utf8Start[Int(b & 15)])
        default:
            out.appendReserved(b)
        }
    }

    /// The validated object or array `start..<end`, compact: whitespace dropped, strings and numbers
    /// written as the reference writes them. Validated input needs no stack: token by token is enough.
    private mutating func writeCompact(_ start: Int, _ end: Int) {
        var i = start
        while i < end {
            let b = p[i]
            switch b {
            case 0x20, 0x0A, 0x0D, 0x09:
                i += 1
            case UInt8(ascii: "\""):
                i = writeEscapedString(i)
            case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"):
                var j = i + 1
                var plain = true
                while j < end {
                    let c = p[j]
                    if c &- 0x30 < 10 || c == UInt8(ascii: "-") || c == UInt8(ascii: "+") {
                        j += 1
                    } else if c == UInt8(ascii: ".") || c == UInt8(ascii: "e") || c == UInt8(ascii: "E") {
                        plain = false
                        j += 1
                    } else {
                        break
                    }
                }
                let digits = j - i - (b == UInt8(ascii: "-") ? 1 : 0)
                writeNumber(i, j, plain: plain && digits <= 18)
                i = j
            case UInt8(ascii: "t"), UInt8(ascii: "n"):
                out.append(p + i, 4)
                i += 4
            case UInt8(ascii: "f"):
                out.append(p + i, 5)
                i += 5
            default:
                out.append(b)
                i += 1
            }
        }
    }
}
