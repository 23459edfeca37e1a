/// Eight bytes at a time: the word tests the byte scanners of the request head share (the header-value check,
/// the bearer token's end).
///
/// Each test sets the high bit of a byte that passes it. The subtractions can borrow into the byte above a
/// flagged one, so only the lowest flagged byte is exact: callers use `firstFlagged` or treat a flagged word
/// as a candidate to look at byte by byte.
enum ByteWord {
    /// `0x01` in every byte.
    static let ones: UInt64 = 0x0101_0101_0101_0101
    /// `0x80` in every byte.
    static let high: UInt64 = 0x8080_8080_8080_8080

    /// The eight bytes at `at` as a little-endian word (the caller keeps `at + 8` within its buffer).
    @inline(__always)
    static func load(_ at: UnsafeRawPointer) -> UInt64 {
        UInt64(littleEndian: at.loadUnaligned(as: UInt64.self))
    }

    /// The bytes of `w` equal to `byte`.
    @inline(__always)
    static func equal(_ w: UInt64, _ byte: UInt8) -> UInt64 {
        let x = w ^ (ones &* UInt64(byte))
        return (x &- ones) & ~x & high
    }

    /// The bytes of `w` below `limit` (at most 0x80).
    @inline(__always)
    static func below(_ w: UInt64, _ limit: UInt8) -> UInt64 {
        (w &- ones &* UInt64(limit)) & ~w & high
    }

    /// The index of the lowest flagged byte of a non-zero result of the tests above.
    @inline(__always)
    static func firstFlagged(_ flags: UInt64) -> Int {
        flags.trailingZeroBitCount &>> 3
    }
}
