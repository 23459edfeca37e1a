import COpenSSL
import FoundationEssentials
import PosternIO

/// Cryptographic helpers on OpenSSL: randomness, hashes, base64url and tokens.
package enum Crypto {
    /// Prefix of Postern access (bearer) tokens.
    static let accessTokenPrefix = "pst_"
    /// Prefix of Postern refresh tokens.
    static let refreshTokenPrefix = "psr_"

    /// Returns `n` cryptographically secure random bytes.
    ///
    /// Traps if OpenSSL's CSPRNG fails: a gateway that cannot draw randomness must not mint
    /// guessable tokens or reuse GCM nonces, and there is no safe fallback to return instead.
    package static func randomBytes(_ n: Int) -> [UInt8] {
        precondition(n >= 0, "randomBytes: negative count")
        guard n > 0 else { return [] }
        var bytes = [UInt8](repeating: 0, count: n)
        let rc = bytes.withUnsafeMutableBufferPointer { RAND_bytes($0.baseAddress, Int32(n)) }
        guard rc == 1 else {
            fatalError("RAND_bytes failed: no secure randomness available, refusing to continue")
        }
        return bytes
    }

    /// SHA-256 of a byte sequence.
    static func sha256(_ data: some Sequence<UInt8>) -> [UInt8] {
        let input = Array(data)
        var digest = [UInt8](repeating: 0, count: Int(SHA256_DIGEST_LENGTH))
        input.withUnsafeBufferPointer { inp in
            digest.withUnsafeMutableBufferPointer { out in
                _ = SHA256(inp.baseAddress, inp.count, out.baseAddress)
            }
        }
        return digest
    }

    /// SHA-256 of the UTF-8 bytes of a string.
    static func sha256(_ string: String) -> [UInt8] {
        sha256(Array(string.utf8))
    }

    /// Lower-case hex SHA-256 of the UTF-8 bytes of a string (how tokens are stored).
    static func sha256Hex(_ s: String) -> String {
        hex(sha256(s))
    }

    /// Lower-case hex of bytes.
    static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 0x0f)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Base64url without padding (RFC 4648 §5).
    package static func base64URLEncode(_ bytes: [UInt8]) -> String {
        // Byte by byte: String.replacingOccurrences goes through NSString and costs tens of µs per call.
        var out = [UInt8](Data(bytes).base64EncodedData())
        while out.last == UInt8(ascii: "=") { out.removeLast() }
        for i in out.indices {
            if out[i] == UInt8(ascii: "+") { out[i] = UInt8(ascii: "-") } else if out[i] == UInt8(ascii: "/") { out[i] = UInt8(ascii: "_") }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes base64url, with or without padding; nil for anything else.
    static func base64URLDecode(_ s: String) -> [UInt8]? {
        var body = Substring(s)
        while body.hasSuffix("=") { body.removeLast() }
        guard body.utf8.allSatisfy({ c in
            (c >= 0x41 && c <= 0x5a) || (c >= 0x61 && c <= 0x7a) || (c >= 0x30 && c <= 0x39) || c == 0x2d || c == 0x5f
        }) else { return nil }
        if body.utf8.count % 4 == 1 { return nil }
        var std = body.utf8.map { c -> UInt8 in
            c == UInt8(ascii: "-") ? UInt8(ascii: "+") : c == UInt8(ascii: "_") ? UInt8(ascii: "/") : c
        }
        while std.count % 4 != 0 { std.append(UInt8(ascii: "=")) }
        guard let data = Data(base64Encoded: Data(std)) else { return nil }
        return Array(data)
    }

    /// Compares two byte arrays in time independent of their contents (lengths may differ).
    static func constantTimeEquals(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        guard a.count == b.count else { return false }
        if a.isEmpty { return true }
        return a.withUnsafeBytes { pa in
            b.withUnsafeBytes { pb in
                CRYPTO_memcmp(pa.baseAddress, pb.baseAddress, a.count) == 0
            }
        }
    }

    /// A fresh opaque token: `prefix` followed by base64url of 32 random bytes (43 characters).
    static func newToken(prefix: String) -> String {
        prefix + base64URLEncode(randomBytes(32))
    }
}

/// Authenticated symmetric encryption of short strings with AES-256-GCM.
///
/// Sealed format: `v1:` + base64(nonce(12) | ciphertext | tag(16)).
package struct SecretBox: Sendable {
    /// The version prefix of sealed values.
    static let versionPrefix = "v1:"
    private static let nonceLength = 12
    private static let tagLength = 16

    private let key: [UInt8]

    /// Builds a box from a base64 (standard or url-safe) key that decodes to exactly 32 bytes.
    init?(base64Key: String) {
        let trimmed = base64Key.trimmedSpacesAndNewlines()
        let bytes = Data(base64Encoded: trimmed).map(Array.init) ?? Crypto.base64URLDecode(trimmed)
        guard let bytes, bytes.count == 32 else { return nil }
        self.init(key: bytes)
    }

    /// Builds a box from 32 raw key bytes.
    init?(key: [UInt8]) {
        guard key.count == 32 else { return nil }
        self.key = key
    }

    /// Encrypts `plaintext` under a fresh random nonce.
    func seal(_ plaintext: String) -> String {
        let nonce = Crypto.randomBytes(Self.nonceLength)
        var tag = [UInt8](repeating: 0, count: Self.tagLength)
        // Only allocation failure or a broken OpenSSL can make AES-GCM encryption with a valid
        // 32-byte key and 12-byte nonce fail; neither leaves a safe value to return, so it traps.
        guard let cipher = gcm(encrypting: true, nonce: nonce, Array(plaintext.utf8), tag: &tag) else {
            preconditionFailure("AES-256-GCM encryption failed")
        }
        return Self.versionPrefix + Data(nonce + cipher + tag).base64EncodedString()
    }

    /// Decrypts a value made by `seal`; nil when it was tampered with, sealed under another key or malformed.
    func open(_ sealed: String) -> String? {
        guard sealed.hasPrefix(Self.versionPrefix),
              let data = Data(base64Encoded: String(sealed.dropFirst(Self.versionPrefix.count))) else { return nil }
        let blob = Array(data)
        guard blob.count >= Self.nonceLength + Self.tagLength else { return nil }
        let nonce = Array(blob[0..<Self.nonceLength])
        let cipher = Array(blob[Self.nonceLength..<(blob.count - Self.tagLength)])
        var tag = Array(blob[(blob.count - Self.tagLength)...])
        guard let plain = gcm(encrypting: false, nonce: nonce, cipher, tag: &tag) else { return nil }
        return String(validating: plain, as: UTF8.self)
    }

    /// AES-256-GCM of `input` under `key` and `nonce`: encrypting, it writes the tag into `tag`; decrypting, it
    /// checks the input against `tag`. Nil when OpenSSL fails or, decrypting, when the tag does not match.
    private func gcm(encrypting: Bool, nonce: [UInt8], _ input: [UInt8], tag: inout [UInt8]) -> [UInt8]? {
        let enc: Int32 = encrypting ? 1 : 0
        guard let ctx = EVP_CIPHER_CTX_new() else { return nil }
        defer { EVP_CIPHER_CTX_free(ctx) }
        var ok = EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), nil, nil, nil, enc) == 1
        ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, Int32(Self.nonceLength), nil) == 1
        ok = ok && EVP_CipherInit_ex(ctx, nil, nil, key, nonce, enc) == 1
        var out = [UInt8](repeating: 0, count: input.count + 16)
        var len: Int32 = 0
        var total = 0
        if ok && !input.isEmpty {
            ok = out.withUnsafeMutableBufferPointer { o in
                input.withUnsafeBufferPointer { i in
                    EVP_CipherUpdate(ctx, o.baseAddress, &len, i.baseAddress, Int32(i.count)) == 1
                }
            }
            total = Int(len)
        }
        if !encrypting {
            ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, Int32(Self.tagLength), &tag) == 1
        }
        if ok {
            ok = out.withUnsafeMutableBufferPointer { o in
                EVP_CipherFinal_ex(ctx, o.baseAddress! + total, &len) == 1  // baseAddress: count >= 16, never empty
            }
            total += Int(len)
        }
        if encrypting {
            ok = ok && EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, Int32(Self.tagLength), &tag) == 1
        }
        return ok ? Array(out.prefix(total)) : nil
    }
}
