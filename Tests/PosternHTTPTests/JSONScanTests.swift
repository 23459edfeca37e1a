import Foundation
import Testing
@testable import PosternHTTP

/// `JSONScan`, the one JSON token scanner: what it answers on its own seams (the offset past a token, the flags the
/// transcoder writes by, the byte a failure names), and `JSONValue.parse` on top of it.
@Suite struct JSONScanTests {
    /// `scanJSONStringRest` over `text` (which starts with its opening quote), as the transcoder calls it.
    private func string(_ text: String) throws(JSONParseError) -> (end: Int, flags: UInt8) {
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBufferPointer { (buffer) throws(JSONParseError) -> (end: Int, flags: UInt8) in
            let (end, flags) = try scanJSONStringRest(buffer.baseAddress!, 1, buffer.count, flags: 0)
            return (end, flags)
        }
    }

    /// `scanJSONNumber` over `text`.
    private func number(_ text: String) throws(JSONParseError) -> (end: Int, flags: UInt8) {
        let bytes = Array(text.utf8)
        return try bytes.withUnsafeBufferPointer { (buffer) throws(JSONParseError) -> (end: Int, flags: UInt8) in
            let (end, flags) = try scanJSONNumber(buffer.baseAddress!, 0, buffer.count)
            return (end, flags)
        }
    }

    /// The closing quote is found wherever it falls against the 16- and 8-byte blocks, and nothing past the input
    /// is read as part of the string.
    @Test(arguments: Array(0...40))
    func stringEndsAtItsQuoteAtEveryLength(_ length: Int) throws {
        let body = String(repeating: "a", count: length)
        let scanned = try string("\"\(body)\",1")
        #expect(scanned.end == length + 2)
        #expect(scanned.flags == 0)
        #expect(throws: JSONParseError.self) { try string("\"\(body)") }
    }

    @Test func flagsSayHowAStringIsWritten() throws {
        #expect(try string(#""a\"b\\c\nd\re\tf""#).flags == JSONTokenFlags.escaped)
        for escape in [#"\/"#, #"\b"#, #"\f"#, #"\u0041"#, #"\ud83d\ude00"#] {
            #expect(try string("\"x\(escape)y\"").flags == JSONTokenFlags.escaped | JSONTokenFlags.reencoded)
        }
        #expect(try string("\"héllo 世界 😀\"").flags == JSONTokenFlags.nonASCII)
        // Past sixteen plain bytes, the block scan hands over to the byte checks the same way.
        #expect(try string("\"\(String(repeating: "x", count: 20))é\\u00e9\"").flags
            == JSONTokenFlags.nonASCII | JSONTokenFlags.escaped | JSONTokenFlags.reencoded)
    }

    @Test(arguments: [
        #""\x""#, #""\u12""#, #""\u12G4""#, #""\ud800""#, #""\ud800\u0041""#, #""\udc00""#, #""\ud800\ud800""#,
        "\"a\u{01}b\"", "\"tab\there\"", "\"\\",
    ])
    func refusesBadEscapesAndControlBytes(_ text: String) {
        #expect(throws: JSONParseError.self) { try string(text) }
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    /// Ill-formed UTF-8 (Unicode table 3-7) is refused inside the scanner, before and after a 16-byte block.
    @Test(arguments: [
        [0xC0, 0xAF], [0xC1, 0xBF], [0xE0, 0x80, 0xAF], [0xED, 0xA0, 0x80], [0xF0, 0x80, 0x80, 0xAF],
        [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80, 0x80, 0x80], [0x80], [0xC3], [0xE2, 0x82], [0xFF],
    ] as [[UInt8]])
    func refusesInvalidUTF8(_ sequence: [UInt8]) {
        for prefix in [[], Array(repeating: UInt8(ascii: "a"), count: 17)] {
            let bytes = [UInt8(ascii: "\"")] + prefix + sequence + [UInt8(ascii: "\"")]
            #expect(throws: JSONParseError.self) { try JSONValue.parse(Data(bytes)) }
        }
    }

    /// `JSONScan.utf8SequenceLength` (four readable bytes, no end) says what `utf8SequenceEnd` says with the end four
    /// bytes away: every lead byte above 0x7F against every second byte, and third and fourth bytes at the edges of
    /// the continuation range and outside it.
    @Test func sequenceLengthAgreesWithTheBoundedCheck() {
        let edges: [UInt8] = [0x00, 0x41, 0x7F, 0x80, 0x8F, 0x90, 0x9F, 0xA0, 0xBF, 0xC0, 0xFF]
        var bytes = [UInt8](repeating: 0, count: 4)
        var disagreements: [[UInt8]] = []
        var wellFormed = 0
        for lead in 0x80...0xFF {
            for second in 0...0xFF {
                for third in edges {
                    for fourth in edges {
                        bytes = [UInt8(lead), UInt8(second), third, fourth]
                        let (bounded, length) = bytes.withUnsafeBufferPointer { buffer in
                            // A non-empty array always has a base address.
                            (JSONScan.utf8SequenceEnd(buffer.baseAddress!, 0, 4),
                             JSONScan.utf8SequenceLength(buffer.baseAddress!))
                        }
                        if bounded != length { disagreements.append(bytes) }
                        if length > 0 { wellFormed += 1 }
                    }
                }
            }
        }
        #expect(disagreements.isEmpty, "\(disagreements.prefix(10))")
        #expect(wellFormed > 0)
    }

    @Test func nonDigitsFlagsExactlyTheFirstByteThatIsNotADigit() {
        // Every byte in every lane after a run of digits, with digits and other bytes above it (which a carry may
        // flag too): the lowest flag is that byte.
        for lane in 0..<8 {
            for byte in 0...255 {
                for above: UInt8 in [UInt8(ascii: "7"), 0xFF, 0x00, UInt8(ascii: "e")] {
                    var bytes = [UInt8](repeating: above, count: 8)
                    for k in 0..<lane { bytes[k] = UInt8(ascii: "0") &+ UInt8(k % 10) }
                    bytes[lane] = UInt8(byte)
                    let word = bytes.withUnsafeBufferPointer { JSONWord.load($0.baseAddress!) }
                    let flags = JSONWord.nonDigits(word)
                    let isDigit = byte >= 0x30 && byte <= 0x39
                    if isDigit {
                        #expect(flags == 0 || flags.trailingZeroBitCount >> 3 > lane, "byte \(byte) in lane \(lane)")
                    } else {
                        #expect(flags != 0 && flags.trailingZeroBitCount >> 3 == lane, "byte \(byte) in lane \(lane)")
                    }
                }
            }
        }
        let digits = Array("01234567".utf8).withUnsafeBufferPointer { JSONWord.load($0.baseAddress!) }
        #expect(JSONWord.nonDigits(digits) == 0)
    }

    @Test func decodesEscapesAndSurrogatePairs() throws {
        let value = try JSONValue.parse(#"["\u00e9\/\b\f\n\r\t\"\\","\ud83d\ude00","\u4e16"]"#)
        #expect(value == .array([.string("é/\u{08}\u{0C}\n\r\t\"\\"), .string("😀"), .string("世")]))
    }

    @Test func numbersFollowTheGrammar() throws {
        #expect(try number("123456789012345678,").end == 18)
        #expect(try number("123456789012345678,").flags == JSONTokenFlags.plainInteger)
        #expect(try number("1234567890123456789]").flags == 0)  // 19 digits: not written as its text
        #expect(try number("-0.5e+3}").end == 7)
        #expect(try number("-0.5e+3}").flags == 0)
        for bad in ["-", "01", "1.", ".5", "1e", "1e+", "+1", "-a"] {
            #expect(throws: JSONParseError.self) { try JSONValue.parse(bad) }
        }
        #expect(throws: JSONParseError.self) { try JSONValue.parse("1e400") }
        #expect(throws: JSONParseError.self) { try JSONValue.parse("-" + String(repeating: "9", count: 400)) }
        #expect(try JSONValue.parse("[9223372036854775807,9223372036854775808,1e2,-0]")
            == .array([.int(.max), .double(9_223_372_036_854_775_808), .double(100), .int(0)]))
    }

    @Test func literalsAndTheirFailures() throws {
        #expect(try JSONValue.parse("[true,false,null]") == .array([.bool(true), .bool(false), .null]))
        for bad in ["tru", "fals", "nul", "truth", "nulL", "falsy"] {
            #expect(throws: JSONParseError.self) { try JSONValue.parse(bad) }
        }
    }

    @Test func failureNamesTheByte() {
        let error = #expect(throws: JSONParseError.self) { try JSONValue.parse("[\"a\u{01}\"]") }
        #expect(error?.description == "control character in string at byte 3")
    }

    @Test func depthIsCountedAcrossObjectsAndArrays() throws {
        let nested = String(repeating: #"{"a":["#, count: 32) + String(repeating: "]}", count: 32)
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Data(nested.utf8), maxDepth: 63) }
        _ = try JSONValue.parse(Data(nested.utf8), maxDepth: 64)
    }
}
