import COpenSSL
import FoundationEssentials
import PosternHTTP

/// HS256 JSON Web Tokens as Directus issues them (`jsonwebtoken` with the project `SECRET`).
struct StandInJWT: Sendable {
    /// What checking a bearer string found.
    enum Verdict: Sendable {
        /// A valid Directus JWT; its claims.
        case valid(Claims, signature: String)
        /// A Directus JWT whose `exp` has passed.
        case expired
        /// A Directus JWT with a bad signature, a bad header or missing claims.
        case invalid
        /// Not a Directus JWT at all (random string, other issuer): looked up as a static token.
        case notDirectus
    }

    /// The claims the stand-in reads back.
    struct Claims: Sendable {
        /// The user id.
        var id: String
        /// The role id, or nil.
        var role: String?
        /// Whether the token grants admin access.
        var adminAccess: Bool
        /// Expiry, seconds since 1970.
        var exp: Int64
        /// The `session` claim (session mode), if any.
        var session: String?
    }

    /// The HMAC key.
    let secret: [UInt8]

    /// Builds a signer for `secret`.
    init(secret: String) {
        self.secret = Array(secret.utf8)
    }

    /// Signs `payload` and returns the compact JWT.
    func sign(_ payload: JSONValue) -> String {
        let header = StandInJWT.base64URL(Array(#"{"alg":"HS256","typ":"JWT"}"#.utf8))
        let body = StandInJWT.base64URL([UInt8](payload.serialized()))
        let input = header + "." + body
        return input + "." + StandInJWT.base64URL(mac(Array(input.utf8)))
    }

    /// Checks `token` the way `getAccountabilityForToken` does, at time `now` (seconds since 1970).
    func verify(_ token: String, now: Double) -> Verdict {
        let bytes = Array(token.utf8)
        let dots = bytes.indices.filter { bytes[$0] == UInt8(ascii: ".") }
        // `isDirectusJWT`: decodable, and the payload's `iss` is "directus".
        guard dots.count == 2,
              let payloadBytes = StandInJWT.decodeBase64URL(bytes[(dots[0] + 1)..<dots[1]]),
              let payload = try? JSONValue.parse(Data(payloadBytes)),
              payload["iss"]?.stringValue == "directus"
        else { return .notDirectus }
        guard let headerBytes = StandInJWT.decodeBase64URL(bytes[..<dots[0]]),
              let header = try? JSONValue.parse(Data(headerBytes)),
              header["alg"]?.stringValue == "HS256",
              let signature = StandInJWT.decodeBase64URL(bytes[(dots[1] + 1)...]), signature.count == 32
        else { return .invalid }
        let expected = mac(Array(bytes[..<dots[1]]))
        let same = expected.withUnsafeBytes { a in
            signature.withUnsafeBytes { b in CRYPTO_memcmp(a.baseAddress, b.baseAddress, 32) == 0 }
        }
        guard same else { return .invalid }
        if let exp = payload["exp"]?.intValue, Double(exp) <= now { return .expired }
        guard let id = payload["id"]?.stringValue,
              let role = payload["role"], role.isNull || role.stringValue != nil,
              payload["app_access"] != nil,
              let admin = payload["admin_access"]
        else { return .invalid }
        let claims = Claims(id: id, role: role.stringValue, adminAccess: admin == .bool(true) || admin == .int(1),
                            exp: payload["exp"]?.intValue ?? Int64.max, session: payload["session"]?.stringValue)
        return .valid(claims, signature: String(decoding: bytes[(dots[1] + 1)...], as: UTF8.self))
    }

    /// HMAC-SHA256 of `data` under the secret.
    private func mac(_ data: [UInt8]) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: Int(EVP_MAX_MD_SIZE))
        var length: UInt32 = 0
        secret.withUnsafeBytes { key in
            data.withUnsafeBytes { input in
                _ = HMAC(EVP_sha256(), key.baseAddress, Int32(key.count),
                         input.bindMemory(to: UInt8.self).baseAddress, input.count, &out, &length)
            }
        }
        return Array(out.prefix(Int(length)))
    }

    private static let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)

    private static let decodeTable: [UInt8] = {
        var table = [UInt8](repeating: 0xFF, count: 256)
        for (index, byte) in alphabet.enumerated() { table[Int(byte)] = UInt8(index) }
        return table
    }()

    /// Base64url without padding.
    static func base64URL(_ bytes: [UInt8]) -> String {
        var out: [UInt8] = []
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var index = 0
        while index + 3 <= bytes.count {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8 | UInt32(bytes[index + 2])
            out += [alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)], alphabet[Int(n & 63)]]
            index += 3
        }
        let rest = bytes.count - index
        if rest == 1 {
            let n = UInt32(bytes[index]) << 16
            out += [alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)]]
        } else if rest == 2 {
            let n = UInt32(bytes[index]) << 16 | UInt32(bytes[index + 1]) << 8
            out += [alphabet[Int(n >> 18)], alphabet[Int(n >> 12 & 63)], alphabet[Int(n >> 6 & 63)]]
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// Decodes unpadded base64url; nil when malformed.
    static func decodeBase64URL(_ text: ArraySlice<UInt8>) -> [UInt8]? {
        guard text.count % 4 != 1 else { return nil }
        var out: [UInt8] = []
        out.reserveCapacity(text.count * 3 / 4)
        var accumulator: UInt32 = 0
        var bits = 0
        for byte in text {
            let value = decodeTable[Int(byte)]
            guard value != 0xFF else { return nil }
            accumulator = accumulator << 6 | UInt32(value)
            bits += 6
            if bits >= 8 {
                bits -= 8
                out.append(UInt8(truncatingIfNeeded: accumulator >> UInt32(bits)))
            }
        }
        return out
    }
}
