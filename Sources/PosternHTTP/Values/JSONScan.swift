/// The JSON token scanner shared by `JSONValue.parse` and the gateway's transcoder: strings (validated UTF-8, no raw
/// control character, escapes and surrogate pairs checked), numbers (RFC 8259 grammar, finite as a Double) and
/// literals, over borrowed bytes. Each function (with `scanJSONStringRest` and `scanJSONNumber` beside it) reads
/// from an offset and answers the offset past the token, so that a caller keeps its cursor in a register; a
/// failure says what and at which byte.
///
/// The namespaces `JSONScan`, `JSONWord` and `JSONTokenFlags` are `public` (their members stay `package`): Swift
/// 6.3 does not inline an `@inlinable` member of a `package` type into another module, nor fold a `static let`
/// there, so the transcoder in PosternCore called each 16-byte test and read each flag through an addressor
/// (`make instructions` A +16 %, docs/performance.md). Members of a `public` type inline as they did in one module.
public enum JSONScan {
    /// Is `\` followed by `b` an escape that `JSONValue.writeString` writes as it is (`\"`, `\\`, `\n`, `\r`,
    /// `\t`)?
    @inlinable @inline(__always)
    package static func isCanonicalEscape(_ b: UInt8) -> Bool {
        b == UInt8(ascii: "\"") || b == UInt8(ascii: "\\") || b == UInt8(ascii: "n") || b == UInt8(ascii: "r")
            || b == UInt8(ascii: "t")
    }

    /// The offset past the well-formed UTF-8 sequence (Unicode table 3-7) whose lead byte, above 0x7F, is at
    /// `i`; `i` itself when the sequence is not well formed or not complete before `end`.
    @inline(__always)
    static func utf8SequenceEnd(_ p: UnsafePointer<UInt8>, _ i: Int, _ end: Int) -> Int {
        @inline(__always) func isContinuation(_ c: UInt8) -> Bool { c & 0xC0 == 0x80 }
        let b = p[i]
        if b >= 0xC2, b <= 0xDF {
            guard i &+ 2 <= end, isContinuation(p[i &+ 1]) else { return i }
            return i &+ 2
        } else if b >= 0xE0, b <= 0xEF {
            let low: UInt8 = b == 0xE0 ? 0xA0 : 0x80
            let high: UInt8 = b == 0xED ? 0x9F : 0xBF
            guard i &+ 3 <= end, p[i &+ 1] >= low, p[i &+ 1] <= high, isContinuation(p[i &+ 2]) else { return i }
            return i &+ 3
        } else if b >= 0xF0, b <= 0xF4 {
            let low: UInt8 = b == 0xF0 ? 0x90 : 0x80
            let high: UInt8 = b == 0xF4 ? 0x8F : 0xBF
            guard i &+ 4 <= end, p[i &+ 1] >= low, p[i &+ 1] <= high, isContinuation(p[i &+ 2]),
                  isContinuation(p[i &+ 3]) else { return i }
            return i &+ 4
        }
        return i
    }

    /// The length (2 to 4) of the well-formed UTF-8 sequence (Unicode table 3-7) whose lead byte, above 0x7F, is at
    /// `s`; 0 when it is not well formed. The caller keeps four bytes readable at `s` (inside a block it tests
    /// sixteen bytes at a time), so no byte is compared with the end of the input: a sequence cut by the end of
    /// the input is left to `utf8SequenceEnd`.
    @inlinable @inline(__always)
    package static func utf8SequenceLength(_ s: UnsafePointer<UInt8>) -> Int {
        @inline(__always) func isContinuation(_ c: UInt8) -> Bool { c & 0xC0 == 0x80 }
        let b = s[0]
        let c = s[1]
        if b &- 0xC2 <= 0xDF - 0xC2 { return isContinuation(c) ? 2 : 0 }
        if b &- 0xE0 <= 0xEF - 0xE0 {
            let low: UInt8 = b == 0xE0 ? 0xA0 : 0x80
            let high: UInt8 = b == 0xED ? 0x9F : 0xBF
            return c >= low && c <= high && isContinuation(s[2]) ? 3 : 0
        }
        if b &- 0xF0 <= 0xF4 - 0xF0 {
            let low: UInt8 = b == 0xF0 ? 0x90 : 0x80
            let high: UInt8 = b == 0xF4 ? 0x8F : 0xBF
            return c >= low && c <= high && isContinuation(s[2]) && isContinuation(s[3]) ? 4 : 0
        }
        return 0
    }

    /// One escape at `at` (its backslash): the offset past it; a high surrogate must be followed by a low one.
    static func escape(_ p: UnsafePointer<UInt8>, _ at: Int, _ end: Int) throws(JSONParseError) -> Int {
        guard at + 1 < end else { throw fail("unterminated string", at) }
        switch p[at + 1] {
        case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"), UInt8(ascii: "b"), UInt8(ascii: "f"),
             UInt8(ascii: "n"), UInt8(ascii: "r"), UInt8(ascii: "t"):
            return at + 2
        case UInt8(ascii: "u"):
            let scalar = try hex4(p, at + 2, end, failAt: at)
            var pos = at + 6
            if scalar >= 0xD800, scalar < 0xDC00 {
                guard pos + 6 <= end, p[pos] == UInt8(ascii: "\\"), p[pos + 1] == UInt8(ascii: "u") else {
                    throw fail("unpaired surrogate", pos)
                }
                let low = try hex4(p, pos + 2, end, failAt: pos)
                guard low >= 0xDC00, low < 0xE000 else { throw fail("unpaired surrogate", pos) }
                pos += 6
            } else if scalar >= 0xDC00, scalar < 0xE000 {
                throw fail("unpaired surrogate", pos)
            }
            return pos
        default:
            throw fail("bad escape", at)
        }
    }

    /// The four hex digits at `at` (a failure is reported at `failAt`, the escape's backslash).
    static func hex4(_ p: UnsafePointer<UInt8>, _ at: Int, _ end: Int, failAt: Int) throws(JSONParseError) -> UInt32 {
        guard at + 4 <= end else { throw fail("bad \\u escape", failAt) }
        var value: UInt32 = 0
        for i in at..<(at + 4) {
            guard let digit = hexValue(p[i]) else { throw fail("bad \\u escape", failAt) }
            value = value << 4 | digit
        }
        return value
    }

    /// The value of one hex digit, either case.
    @inlinable @inline(__always)
    package static func hexValue(_ b: UInt8) -> UInt32? {
        switch b {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): return UInt32(b &- 48)
        case UInt8(ascii: "a")...UInt8(ascii: "f"): return UInt32(b &- 87)
        case UInt8(ascii: "A")...UInt8(ascii: "F"): return UInt32(b &- 55)
        default: return nil
        }
    }

    /// The number at `bytes` as `JSONValue.parse` reads it (`.int` when an integer fits Int64, else `.double`);
    /// nil when it is not finite.
    package static func numberValue(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> JSONValue? {
        let text = String(decoding: UnsafeBufferPointer(start: bytes, count: count), as: UTF8.self)
        let isInteger = !text.utf8.contains {
            $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "e") || $0 == UInt8(ascii: "E")
        }
        if isInteger, let i = Int64(text) { return .int(i) }
        guard let d = Double(text), d.isFinite else { return nil }
        return .double(d)
    }

    /// `true`, `false` or `null` at `at`: the offset past it.
    package static func literal(_ p: UnsafePointer<UInt8>, _ at: Int, _ end: Int) throws(JSONParseError) -> Int {
        let length = p[at] == UInt8(ascii: "f") ? 5 : 4
        guard at + length <= end else { throw fail("unexpected end of input", at) }
        let word = UInt32(littleEndian: UnsafeRawPointer(p + at).loadUnaligned(as: UInt32.self))
        let ok: Bool
        switch p[at] {
        case UInt8(ascii: "t"): ok = word == 0x6575_7274 // "true"
        case UInt8(ascii: "n"): ok = word == 0x6C6C_756E // "null"
        default: ok = word == 0x736C_6166 && p[at + 4] == UInt8(ascii: "e") // "false"
        }
        guard ok else { throw fail("invalid literal", at) }
        return at + length
    }

    /// `what` at byte `at` (out of line: it keeps the scanners' frames small).
    @inline(never)
    package static func fail(_ what: String, _ at: Int) -> JSONParseError {
        JSONParseError(description: "\(what) at byte \(at)")
    }
}

// The two scanners the transcoder calls for every string and every number it does not finish inline are free
// functions, not `JSONScan` members: a static method's unused metatype argument made the optimiser split it into a
// specialised body and a thunk, and a caller in another module (the transcoder) paid the thunk's call on every
// string (`make instructions` R, 243 strings per request, +2,300 instructions).

/// The string whose content before `from` was scanned already with `flags` (`JSONTokenFlags`), in `p`'s
/// `end` bytes: the offset past its closing quote, and its flags.
///
/// Plain ASCII goes sixteen bytes at a time (`JSONWord.specials16`, vector compares in `CJSONScan`), then
/// eight in the last sixteen bytes of the input; escapes and UTF-8 sequences are checked byte by byte, and the
/// last bytes of the input (fewer than eight) one at a time, so that no read passes `end`.
@inline(never)
package func scanJSONStringRest(_ p: UnsafePointer<UInt8>, _ from: Int, _ end: Int,
                                flags scanned: UInt8) throws(JSONParseError) -> (Int, UInt8) {
    var i = from
    var flags = scanned
    while true {
        if i &+ 16 <= end {
            // The plain case adds a constant: the next load does not wait for this block's test.
            let specials = JSONWord.specials16(p + i)
            if specials == 0 {
                i &+= 16
                continue
            }
            i &+= JSONWord.firstFlagged16(specials)
        } else {
            while i &+ 8 <= end {
                let special = JSONWord.special(JSONWord.load(p + i))
                if special == 0 {
                    i &+= 8
                    continue
                }
                i &+= special.trailingZeroBitCount &>> 3
                break
            }
        }
        guard i < end else { throw JSONScan.fail("unterminated string", i) }
        let b = p[i]
        if b == UInt8(ascii: "\"") { return (i &+ 1, flags) }
        if b == UInt8(ascii: "\\") {
            flags |= JSONTokenFlags.escaped
            // The escapes `JSONValue.writeString` writes the same way need no other check.
            if i &+ 1 < end, JSONScan.isCanonicalEscape(p[i &+ 1]) {
                i &+= 2
                continue
            }
            flags |= JSONTokenFlags.reencoded
            i = try JSONScan.escape(p, i, end)
        } else if b < 0x20 {
            throw JSONScan.fail("control character in string", i)
        } else if b < 0x80 {
            i &+= 1
        } else {
            // Consecutive non-ASCII characters (CJK, emoji runs) one after the other, without going back to
            // the block test for each.
            flags |= JSONTokenFlags.nonASCII
            repeat {
                let next = JSONScan.utf8SequenceEnd(p, i, end)
                guard next > i else { throw JSONScan.fail("invalid UTF-8 in string", i) }
                i = next
            } while i < end && p[i] >= 0x80
        }
    }
}

/// The number at `start`: the offset past it and `JSONTokenFlags.plainInteger` for an integer of at most 18
/// digits (else 0). RFC 8259 grammar; one that reads as an infinite Double is refused.
package func scanJSONNumber(_ p: UnsafePointer<UInt8>, _ start: Int,
                            _ end: Int) throws(JSONParseError) -> (Int, UInt8) {
    @inline(__always) func isDigit(_ b: UInt8) -> Bool { b &- 0x30 < 10 }
    var pos = start
    if p[pos] == UInt8(ascii: "-") { pos += 1 }
    guard pos < end, isDigit(p[pos]) else { throw JSONScan.fail("bad number", pos) }
    let integerStart = pos
    if p[pos] == UInt8(ascii: "0") {
        pos += 1
    } else {
        while pos < end, isDigit(p[pos]) { pos += 1 }
    }
    let integerDigits = pos - integerStart
    var plain = true
    if pos < end, p[pos] == UInt8(ascii: ".") {
        plain = false
        pos += 1
        guard pos < end, isDigit(p[pos]) else { throw JSONScan.fail("bad number", pos) }
        while pos < end, isDigit(p[pos]) { pos += 1 }
    }
    var exponent = 0
    if pos < end, p[pos] == UInt8(ascii: "e") || p[pos] == UInt8(ascii: "E") {
        plain = false
        pos += 1
        var negative = false
        if pos < end, p[pos] == UInt8(ascii: "+") || p[pos] == UInt8(ascii: "-") {
            negative = p[pos] == UInt8(ascii: "-")
            pos += 1
        }
        guard pos < end, isDigit(p[pos]) else { throw JSONScan.fail("bad number", pos) }
        while pos < end, isDigit(p[pos]) {
            if exponent < 100_000 { exponent = exponent * 10 + Int(p[pos] &- 0x30) }
            pos += 1
        }
        if negative { exponent = -exponent }
    }
    if plain, integerDigits <= 18 { return (pos, JSONTokenFlags.plainInteger) }
    // Below 10^300 a number is finite whatever its digits; only near the limit ask Double itself.
    if plain || integerDigits + exponent > 300 {
        guard case .some = JSONScan.numberValue(p + start, pos - start) else {
            throw JSONScan.fail("number out of range", pos)
        }
    }
    return (pos, 0)
}

/// The JSON type of one scanned value. `public` for the reason `JSONScan` is: the `==` of a `package` enum is a
/// generic call (through `Equatable`'s witness) in another module.
public enum JSONTokenKind: UInt8, Sendable {
    case string, number, bool, null, object, array
}

/// Facts about a scanned token that decide how it is read or written.
public enum JSONTokenFlags {
    // Computed and `@inlinable`, not `static let`: a constant of another module is read through an addressor.
    /// A string with at least one escape (its text is not its bytes).
    @inlinable package static var escaped: UInt8 { 1 }
    /// A string with an escape that `JSONValue.writeString` writes differently (`\/`, `\b`, `\f`, `\u…`): it must
    /// be decoded and re-encoded, not copied. The escapes it writes itself (`\"`, `\\`, `\n`, `\r`, `\t`) are
    /// copied as they are.
    @inlinable package static var reencoded: UInt8 { 8 }
    /// A string with bytes above 0x7F.
    @inlinable package static var nonASCII: UInt8 { 2 }
    /// A number with no fraction, no exponent and at most 18 digits: its text is its rendering.
    @inlinable package static var plainInteger: UInt8 { 4 }
}
