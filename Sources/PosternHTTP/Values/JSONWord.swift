import CJSONScan

/// Eight input bytes at a time: the word-wise tests of the JSON string scanner (`JSONScan`, the transcoder).
///
/// Each test flags a byte by setting its high bit. The subtractions can borrow into the byte above a
/// flagged byte, so only the lowest flagged byte is exact: callers use `trailingZeroBitCount` and
/// nothing above it. `public`, its members `package`: see `JSONScan`.
public enum JSONWord {
    /// `0x01` in every byte.
    @inlinable package static var ones: UInt64 { 0x0101_0101_0101_0101 }
    /// `0x80` in every byte.
    @inlinable package static var high: UInt64 { 0x8080_8080_8080_8080 }

    /// The eight bytes at `at` as a little-endian word (the caller keeps `at + 8` within the input).
    @inlinable @inline(__always)
    package static func load(_ at: UnsafePointer<UInt8>) -> UInt64 {
        UInt64(littleEndian: UnsafeRawPointer(at).loadUnaligned(as: UInt64.self))
    }

    /// Non-zero when `w` holds a byte that ends a plain ASCII run inside a string: `"`, `\`, a control
    /// byte (below 0x20) or a byte above 0x7F; the lowest set bit is in the first such byte.
    ///
    /// A byte above 0x7F is flagged by its own high bit; for the others, `x - 1` sets the high bit
    /// exactly when `x` is 0 (so `w ^ c` finds `c`), and `w - 0x20` when `w` is below 0x20. A borrow
    /// only leaves a flagged byte, so the first flagged byte is exact.
    @inlinable @inline(__always)
    package static func special(_ w: UInt64) -> UInt64 {
        let quote = w ^ (ones &* 0x22)
        let backslash = w ^ (ones &* 0x5C)
        return ((quote &- ones) | (backslash &- ones) | (w &- ones &* 0x20) | w) & high
    }

    /// Non-zero when `w` holds a byte that is not an ASCII digit; the lowest set bit is in the first such byte.
    ///
    /// `x ^ 0x30` is 0 to 9 exactly for a digit; adding 0x76 sets the high bit from 10 up, and the byte's own high
    /// bit covers 0x80 and above. A carry out of a byte only leaves one that is flagged already, so the first
    /// flagged byte is exact.
    @inlinable @inline(__always)
    package static func nonDigits(_ w: UInt64) -> UInt64 {
        let offset = w ^ (ones &* 0x30)
        return ((offset &+ ones &* 0x76) | offset) & high
    }

    /// Which of the sixteen bytes at `at` end a plain ASCII run inside a string (as `special`): 0
    /// when none does, else a mask for `firstFlagged16`. The caller keeps `at + 16` within the input.
    /// One vector compare per test and a movemask (SSE2 or NEON, in `CJSONScan`).
    @inlinable @inline(__always)
    package static func specials16(_ at: UnsafePointer<UInt8>) -> UInt64 {
        postern_json_specials16(at)
    }

    /// The index (0 to 15) of the first flagged byte of a non-zero `specials16` mask.
    @inlinable @inline(__always)
    package static func firstFlagged16(_ mask: UInt64) -> Int {
        Int(truncatingIfNeeded: postern_json_first_flagged(mask))
    }

    /// The low `n` bytes of `w` (none when `n` ≤ 0, all when `n` ≥ 8), the others zero.
    @inlinable @inline(__always)
    package static func prefix(_ w: UInt64, _ n: Int) -> UInt64 {
        n >= 8 ? w : n <= 0 ? 0 : w & ((1 &<< UInt64(n &* 8)) &- 1)
    }
}

