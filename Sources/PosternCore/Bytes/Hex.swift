/// Lower-case hex of bytes, for digests kept as words (`TokenKey`, `RateLimitKey`).
enum Hex {
    /// The bytes of `words` in memory order as lower-case hex: two digits per byte.
    static func lowercase<Words>(_ words: Words) -> String {
        var words = words
        return withUnsafeBytes(of: &words) { bytes in
            String(unsafeUninitializedCapacity: 2 * bytes.count) { out in
                for (i, byte) in bytes.enumerated() {
                    out[2 * i] = digits[Int(byte >> 4)]
                    out[2 * i + 1] = digits[Int(byte & 0x0f)]
                }
                return 2 * bytes.count
            }
        }
    }

    private static let digits: [UInt8] = Array("0123456789abcdef".utf8)
}
