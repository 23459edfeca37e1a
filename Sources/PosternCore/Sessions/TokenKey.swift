import COpenSSL
import FoundationEssentials

/// The SHA-256 digest of a Postern token as four machine words: the session cache's key, built and
/// hashed without an allocation (the text form is the lower-case hex string, `hex`).
struct TokenKey: Hashable, Sendable {
    /// The digest's bytes 0–7, 8–15, 16–23 and 24–31, in memory order.
    var w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64

    /// The digest of `token`'s UTF-8 bytes (no allocation: the hash context is on the stack).
    init(token: String) {
        self.init(token: token[...])
    }

    /// The digest of `token`'s UTF-8 bytes, read in place.
    init(token: Substring) {
        var key = TokenKey(w0: 0, w1: 0, w2: 0, w3: 0)
        withUnsafeMutableBytes(of: &key) { out in
            let digest = out.baseAddress?.assumingMemoryBound(to: UInt8.self)
            let hashed: Bool? = token.utf8.withContiguousStorageIfAvailable { bytes in
                postern_sha256(bytes.baseAddress, bytes.count, digest) == 1
            }
            if hashed == nil {
                let bytes = Array(token.utf8)
                _ = postern_sha256(bytes, bytes.count, digest)
            }
        }
        self = key
    }

    /// The digest of the bytes `token` (a token's UTF-8, read in place).
    init(bytes token: UnsafeRawBufferPointer) {
        var key = TokenKey(w0: 0, w1: 0, w2: 0, w3: 0)
        withUnsafeMutableBytes(of: &key) { out in
            _ = postern_sha256(token.baseAddress, token.count, out.baseAddress?.assumingMemoryBound(to: UInt8.self))
        }
        self = key
    }

    /// The key of a stored lower-case hex digest; nil if `hex` is not 64 hex digits.
    init?(hex: String) {
        var key = TokenKey(w0: 0, w1: 0, w2: 0, w3: 0)
        let utf8 = Array(hex.utf8)
        guard utf8.count == 64 else { return nil }
        let ok = withUnsafeMutableBytes(of: &key) { out -> Bool in
            for i in 0..<32 {
                guard let hi = TokenKey.nibble(utf8[2 * i]), let lo = TokenKey.nibble(utf8[2 * i + 1]) else { return false }
                out[i] = hi << 4 | lo
            }
            return true
        }
        guard ok else { return nil }
        self = key
    }

    /// The key of a canonical digest text (exactly 64 lower-case hex digits); nil for any other text, so
    /// that `hex` gives back the very text this was built from.
    init?(canonicalHex hex: String) {
        var key = TokenKey(w0: 0, w1: 0, w2: 0, w3: 0)
        var hex = hex
        let ok = hex.withUTF8 { utf8 -> Bool in
            guard utf8.count == 64 else { return false }
            return withUnsafeMutableBytes(of: &key) { out -> Bool in
                for i in 0..<32 {
                    guard let hi = TokenKey.lowerNibble(utf8[2 * i]), let lo = TokenKey.lowerNibble(utf8[2 * i + 1]) else { return false }
                    out[i] = hi << 4 | lo
                }
                return true
            }
        }
        guard ok else { return nil }
        self = key
    }

    /// Builds a key from its words.
    init(w0: UInt64, w1: UInt64, w2: UInt64, w3: UInt64) {
        self.w0 = w0
        self.w1 = w1
        self.w2 = w2
        self.w3 = w3
    }

    /// Lower-case hex of the digest, as sessions store it (`Crypto.sha256Hex` of the token).
    var hex: String { Hex.lowercase(self) }

    /// A SHA-256 digest is uniformly distributed: one word, through the per-process seeded hasher, is enough.
    func hash(into hasher: inout Hasher) {
        hasher.combine(w0)
    }

    private static func lowerNibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x61 + 10
        default: return nil
        }
    }

    private static func nibble(_ c: UInt8) -> UInt8? {
        switch c {
        case 0x30...0x39: return c - 0x30
        case 0x61...0x66: return c - 0x61 + 10
        case 0x41...0x46: return c - 0x41 + 10
        default: return nil
        }
    }
}
