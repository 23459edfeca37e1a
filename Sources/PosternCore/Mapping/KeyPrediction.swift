import PosternHTTP

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

/// How one member of an item began in the last items, remembered for the next: the `{` (first member) or `,` before
/// it and its `"key":` token with nothing between them, or the `}` that closed the item at that position.
struct KeyPrediction {
    /// Member positions remembered per item.
    static let capacity = 16
    /// `name` of the guess that the item closes here.
    static let closed = -2
    /// Nothing remembered: any bytes may match (a NUL byte), and `name` sends them to be read one by one.
    static let none = KeyPrediction(first: 0, second: 0, firstMask: 0xFF, secondMask: 0, length: 0, name: Int.min)
    /// The item's `}`.
    static let closing = KeyPrediction(first: UInt64(UInt8(ascii: "}")), second: 0, firstMask: 0xFF, secondMask: 0,
                                       length: 1, name: closed)

    /// The token's first eight bytes (zero-padded).
    var first: UInt64
    /// The token's bytes 8..<16 (zero-padded).
    var second: UInt64
    /// The bytes of `first` that belong to the token.
    var firstMask: UInt64
    /// The bytes of `second` that belong to the token.
    var secondMask: UInt64
    /// The token's length: the separator, the quotes and the colon included (at most 16); 1 for `closing`.
    var length: Int
    /// What the key resolved to: its index in `TranscoderPlan.names`, or -1 for a key no field reads; `closed` for
    /// the item's end; below -2 for nothing.
    var name: Int
}
