/// Byte classes and scans for reading an HTTP/1.1 head in its common shape without llhttp (`PlainRequestHead`).
enum PlainBytes {
    static let cr: UInt8 = 0x0D, lf: UInt8 = 0x0A, space: UInt8 = 0x20, tab: UInt8 = 0x09, colon: UInt8 = 0x3A

    /// `HTTP/1.1` as one little-endian word.
    static let http11: UInt64 = 0x312E_312F_5054_5448

    /// Where the run of visible ASCII and spaces (0x20–0x7E) from `start` may end, eight bytes a step: at or before
    /// the first other byte (the bytes after it are left to a byte-by-byte look).
    @inline(__always)
    static func plainRun(_ p: UnsafePointer<UInt8>, from start: Int, to n: Int) -> Int {
        run(p, from: start, to: n, floor: 0x2020_2020_2020_2020)
    }

    /// Where the run of visible ASCII (0x21–0x7E) from `start` may end, eight bytes a step: at or before the first
    /// other byte, such as the space after a request target.
    @inline(__always)
    static func visibleRun(_ p: UnsafePointer<UInt8>, from start: Int, to n: Int) -> Int {
        run(p, from: start, to: n, floor: 0x2121_2121_2121_2121)
    }

    /// The run of bytes from the byte in each lane of `floor` to 0x7E, eight bytes a step.
    @inline(__always)
    private static func run(_ p: UnsafePointer<UInt8>, from start: Int, to n: Int, floor: UInt64) -> Int {
        var i = start
        while n &- i >= 8 {
            let word = UInt64(littleEndian: UnsafeRawPointer(p + i).loadUnaligned(as: UInt64.self))
            // A byte under the floor sets its high bit in `under`; one over 0x7E in `over` (a borrow or carry out of a
            // flagged byte can only flag one more byte: the run then ends early, never late).
            let under = (word &- floor) & ~word & 0x8080_8080_8080_8080
            let over = ((word &+ 0x0101_0101_0101_0101) | word) & 0x8080_8080_8080_8080
            if under | over != 0 { break }
            i &+= 8
        }
        return i
    }

    /// Whether `byte` is a token character (RFC 9110 §5.6.2): `!#$%&'*+-.^_`|~`, digits and letters.
    @inline(__always)
    static func isToken(_ byte: UInt8) -> Bool {
        // Bit b of the first mask: byte b (0–63) is a token character; of the second: byte 64 + b.
        let low: UInt64 = 0x03FF_6CFA_0000_0000, high: UInt64 = 0x57FF_FFFF_C7FF_FFFE
        return byte < 64 ? low >> UInt64(byte) & 1 != 0 : byte < 128 && high >> UInt64(byte &- 64) & 1 != 0
    }

    /// Whether the `count` bytes at `p` spell `lowercase` (ASCII case-insensitive; the bytes are token or value
    /// characters, whose `| 0x20` is a lowercase letter only when they are that letter in either case).
    @inline(__always)
    static func spells(_ p: UnsafePointer<UInt8>, _ count: Int, _ lowercase: StaticString) -> Bool {
        guard count == lowercase.utf8CodeUnitCount else { return false }
        let expected = lowercase.utf8Start
        for index in 0..<count where p[index] | 0x20 != expected[index] { return false }
        return true
    }
}
