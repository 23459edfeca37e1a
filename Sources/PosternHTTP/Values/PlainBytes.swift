import CHeadScan

/// Byte classes and scans for reading an HTTP/1.1 head in its common shape without llhttp (`PlainRequestHead`).
///
/// The scans go sixteen bytes a step while sixteen are left (vector compares, `CHeadScan`), then eight, and stop
/// exactly at the first byte outside their class: in each word, a byte outside it flags the high bit of its lane,
/// and a borrow or carry out of a lane only ever flags a lane above one already flagged, so the lowest flagged lane
/// is the first such byte.
enum PlainBytes {
    static let cr: UInt8 = 0x0D, lf: UInt8 = 0x0A, space: UInt8 = 0x20, tab: UInt8 = 0x09, colon: UInt8 = 0x3A

    /// `HTTP/1.1` as one little-endian word.
    static let http11: UInt64 = 0x312E_312F_5054_5448

    private static let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080

    /// Where the run of visible ASCII and spaces (0x20–0x7E) from `start` ends: the first other byte, or `n`.
    @inline(__always)
    static func plainEnd(_ p: UnsafePointer<UInt8>, from start: Int, to n: Int) -> Int {
        rangeEnd(p, from: start, to: n, lowest: 0x20)
    }

    /// Where the run of visible ASCII (0x21–0x7E) from `start` ends: the first other byte, or `n`.
    @inline(__always)
    static func visibleEnd(_ p: UnsafePointer<UInt8>, from start: Int, to n: Int) -> Int {
        rangeEnd(p, from: start, to: n, lowest: 0x21)
    }

    /// Where the run of bytes from `lowest` to 0x7E from `start` ends: the first other byte, or `n`.
    @inline(__always)
    private static func rangeEnd(_ p: UnsafePointer<UInt8>, from start: Int, to n: Int, lowest: UInt8) -> Int {
        var i = start
        while n &- i >= 16 {
            let outside = postern_head_outside16(p + i, lowest)
            if outside != 0 { return i &+ JSONWord.firstFlagged16(outside) }
            i &+= 16
        }
        if n &- i >= 8 {
            let word = load(p + i)
            // Under `lowest`: the lane borrows and had its high bit clear. Over 0x7E: adding one sets the high bit.
            let under = (word &- ones &* UInt64(lowest)) & ~word
            let over = (word &+ ones) | word
            let outside = (under | over) & highs
            if outside != 0 { return i &+ outside.trailingZeroBitCount &>> 3 }
            i &+= 8
        }
        while i < n && p[i] &- lowest < 0x7F &- lowest { i &+= 1 }
        return i
    }

    /// Where the run of letters, digits and `-` (and `.` when `dot`) from `start` ends: the first other byte, or `n`.
    /// The common header names are such runs, and so are the common host names.
    @inline(__always)
    static func wordEnd(_ p: UnsafePointer<UInt8>, from start: Int, to n: Int, dot: Bool) -> Int {
        var i = start
        while n &- i >= 16 {
            let outside = postern_head_nonword16(p + i, dot ? 1 : 0)
            if outside != 0 { return i &+ JSONWord.firstFlagged16(outside) }
            i &+= 16
        }
        if n &- i >= 8 {
            let word = load(p + i)
            // With the high bits cleared no lane carries into the next below; bytes with it set are outside.
            let low = word & ~highs
            let folded = low | ones &* 0x20
            let letter = (folded &+ ones &* (0x80 - 0x61)) & ~(folded &+ ones &* (0x7F - 0x7A))
            let digit = (low &+ ones &* (0x80 - 0x30)) & ~(low &+ ones &* (0x7F - 0x39))
            var inside = letter | digit | equal(low, 0x2D)
            if dot { inside |= equal(low, 0x2E) }
            let outside = (~inside | word) & highs
            if outside != 0 { return i &+ outside.trailingZeroBitCount &>> 3 }
            i &+= 8
        }
        while i < n && isWordByte(p[i], dot: dot) { i &+= 1 }
        return i
    }

    /// The high bit of each lane of `low` (bytes under 0x80) that is `byte`.
    @inline(__always)
    private static func equal(_ low: UInt64, _ byte: UInt8) -> UInt64 {
        let other = low ^ (ones &* UInt64(byte))
        return ~((other &+ ones &* 0x7F) | other)
    }

    /// Whether `byte` is a letter, a digit or `-` (or `.` when `dot`).
    @inline(__always)
    private static func isWordByte(_ byte: UInt8, dot: Bool) -> Bool {
        (byte | 0x20) &- 0x61 < 26 || byte &- 0x30 < 10 || byte == 0x2D || dot && byte == 0x2E
    }

    /// Whether `byte` is a token character (RFC 9110 §5.6.2): `!#$%&'*+-.^_`|~`, digits and letters.
    @inline(__always)
    static func isToken(_ byte: UInt8) -> Bool {
        // Bit b of the first mask: byte b (0–63) is a token character; of the second: byte 64 + b.
        let low: UInt64 = 0x03FF_6CFA_0000_0000, high: UInt64 = 0x57FF_FFFF_C7FF_FFFE
        return byte < 64 ? low >> UInt64(byte) & 1 != 0 : byte < 128 && high >> UInt64(byte &- 64) & 1 != 0
    }

    /// Whether one of the `count` bytes at `p` is CR, LF or NUL (a value holding one would end or split a head's
    /// line). Thirty-two bytes a step with one test for a byte of 0x0D or below (the two halves of a block that has
    /// one are checked for the three); the rest sixteen bytes a step, the last step ending at the last byte (it
    /// overlaps the one before); under sixteen bytes, two words that overlap, or one byte a step under eight.
    @inline(__always)
    static func holdsLineBreakOrNUL(_ p: UnsafePointer<UInt8>, _ count: Int) -> Bool {
        guard count >= 16 else {
            guard count >= 8 else {
                for index in 0..<count where p[index] == 0 || p[index] == lf || p[index] == cr { return true }
                return false
            }
            return breaksLine(load(p)) || breaksLine(load(p + (count &- 8)))
        }
        var i = 0
        while count &- i >= 32 {
            if postern_head_low32(p + i) != 0 && (postern_head_breaks16(p + i) | postern_head_breaks16(p + i + 16)) != 0 {
                return true
            }
            i &+= 32
        }
        if count &- i > 16 && postern_head_breaks16(p + i) != 0 { return true }
        return i < count && postern_head_breaks16(p + (count &- 16)) != 0
    }

    /// Whether one of the eight bytes of `word` is CR, LF or NUL (`x - 1` sets the high bit of a lane whose `x` is 0,
    /// and a borrow only ever leaves a lane above one that is 0).
    @inline(__always)
    private static func breaksLine(_ word: UInt64) -> Bool {
        (zero(word) | zero(word ^ ones &* UInt64(lf)) | zero(word ^ ones &* UInt64(cr))) & highs != 0
    }

    /// The high bit of each lane of `word` that is 0, and perhaps of lanes above one (never when none is 0).
    @inline(__always)
    private static func zero(_ word: UInt64) -> UInt64 {
        (word &- ones) & ~word
    }

    /// Whether the `count` bytes at `p` spell `lowercase` (ASCII case-insensitive; the bytes are token or value
    /// characters, whose `| 0x20` is a lowercase letter only when they are that letter in either case).
    @inline(__always)
    static func spells(_ p: UnsafePointer<UInt8>, _ count: Int, _ lowercase: StaticString) -> Bool {
        guard count == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        guard count >= 8 else {
            for index in 0..<count where p[index] | 0x20 != expected[index] { return false }
            return true
        }
        // Eight bytes a step, the last step ending at the last byte (it overlaps the one before when `count` is not
        // a multiple of eight): the same `| 0x20` on each byte.
        var i = 0
        while count &- i > 8 {
            guard load(p + i) | ones &* 0x20 == load(expected + i) else { return false }
            i &+= 8
        }
        return load(p + (count &- 8)) | ones &* 0x20 == load(expected + (count &- 8))
    }

    /// The eight bytes at `p` as a little-endian word.
    @inline(__always)
    private static func load(_ p: UnsafePointer<UInt8>) -> UInt64 {
        UInt64(littleEndian: UnsafeRawPointer(p).loadUnaligned(as: UInt64.self))
    }
}
