import CJSONScan

/// Eight input bytes at a time: the word-wise tests of the transcoder's string scanner.
///
/// Each test flags a byte by setting its high bit. The subtractions can borrow into the byte above a
/// flagged byte, so only the lowest flagged byte is exact: callers use `trailingZeroBitCount` and
/// nothing above it.
enum JSONWord {
    /// `0x01` in every byte.
    static let ones: UInt64 = 0x0101_0101_0101_0101
    /// `0x80` in every byte.
    static let high: UInt64 = 0x8080_8080_8080_8080

    /// The eight bytes at `at` as a little-endian word (the caller keeps `at + 8` within the input).
    @inline(__always)
    static func load(_ at: UnsafePointer<UInt8>) -> UInt64 {
        UInt64(littleEndian: UnsafeRawPointer(at).loadUnaligned(as: UInt64.self))
    }

    /// Non-zero when `w` holds a byte that ends a plain ASCII run inside a string: `"`, `\`, a control
    /// byte (below 0x20) or a byte above 0x7F; the lowest set bit is in the first such byte.
    ///
    /// A byte above 0x7F is flagged by its own high bit; for the others, `x - 1` sets the high bit
    /// exactly when `x` is 0 (so `w ^ c` finds `c`), and `w - 0x20` when `w` is below 0x20. A borrow
    /// only leaves a flagged byte, so the first flagged byte is exact.
    @inline(__always)
    static func special(_ w: UInt64) -> UInt64 {
        let quote = w ^ (ones &* 0x22)
        let backslash = w ^ (ones &* 0x5C)
        return ((quote &- ones) | (backslash &- ones) | (w &- ones &* 0x20) | w) & high
    }

    /// Which of the sixteen bytes at `at` end a plain ASCII run inside a string (as `special`): 0
    /// when none does, else a mask for `firstFlagged16`. The caller keeps `at + 16` within the input.
    /// One vector compare per test and a movemask (SSE2 or NEON, in `CJSONScan`).
    @inline(__always)
    static func specials16(_ at: UnsafePointer<UInt8>) -> UInt64 {
        postern_json_specials16(at)
    }

    /// The index (0 to 15) of the first flagged byte of a non-zero `specials16` mask.
    @inline(__always)
    static func firstFlagged16(_ mask: UInt64) -> Int {
        Int(truncatingIfNeeded: postern_json_first_flagged(mask))
    }

    /// The low `n` bytes of `w` (none when `n` ≤ 0, all when `n` ≥ 8), the others zero.
    @inline(__always)
    static func prefix(_ w: UInt64, _ n: Int) -> UInt64 {
        n >= 8 ? w : n <= 0 ? 0 : w & ((1 &<< UInt64(n &* 8)) &- 1)
    }
}

extension TranscoderPlan {
    /// The index of the ASCII name equal to the `count` bytes at `key`, or -1; sixteen bytes from
    /// `key` must be readable. The length and the first sixteen bytes are compared as words, only the
    /// rest of a longer name byte by byte.
    @inline(__always)
    func asciiNameIndex(_ key: UnsafePointer<UInt8>, _ count: Int) -> Int {
        let first = JSONWord.prefix(JSONWord.load(key), count)
        let second = count > 8 ? JSONWord.prefix(JSONWord.load(key + 8), count &- 8) : 0
        for i in 0..<nameCount {
            let name = names[i]
            guard name.count == count, nameWords[2 &* i] == first, nameWords[2 &* i &+ 1] == second else { continue }
            if count <= 16 { return i }
            let bytes = nameBytes + name.start
            var j = 16
            while j < count, bytes[j] == key[j] { j &+= 1 }
            if j == count { return i }
        }
        return -1
    }

    /// The index of the ASCII name equal to the `count` bytes at `key`, or -1, read byte by byte
    /// (near the end of the input).
    func asciiNameIndexBytewise(_ key: UnsafePointer<UInt8>, _ count: Int) -> Int {
        for i in 0..<nameCount {
            let name = names[i]
            guard name.count == count else { continue }
            let bytes = nameBytes + name.start
            var j = 0
            while j < count, bytes[j] == key[j] { j &+= 1 }
            if j == count { return i }
        }
        return -1
    }
}

/// A `"key":` token seen at one member position of an item, remembered for the next items.
struct KeyPrediction {
    /// Member positions remembered per item.
    static let capacity = 16
    /// Nothing remembered: a first byte of 0 is expected, and a key token starts with `"`.
    static let none = KeyPrediction(first: 0, second: 0, firstMask: 0xFF, secondMask: 0, length: 0, name: -1)

    /// The token's first eight bytes (zero-padded).
    var first: UInt64
    /// The token's bytes 8..<16 (zero-padded).
    var second: UInt64
    /// The bytes of `first` that belong to the token.
    var firstMask: UInt64
    /// The bytes of `second` that belong to the token.
    var secondMask: UInt64
    /// The token's length, quotes and colon included (at most 16).
    var length: Int
    /// What the key resolved to: its index in `TranscoderPlan.names`, or -1.
    var name: Int
}
