/// A session's access- or refresh-token digest as held in memory: the 32 raw bytes of a canonical digest
/// (lower-case hex, 64 digits, as `Crypto.sha256Hex` writes it), or any other text as it is (a row
/// written by hand or by an older version), so that every digest reads back exactly as it was written.
///
/// The raw form is stored inline (no allocation per digest); `string` rebuilds the hex on demand.
enum SessionDigest: Hashable, Sendable {
    /// A canonical SHA-256 digest.
    case sha256(TokenKey)
    /// Any digest text that is not canonical lower-case hex.
    case text(String)

    /// The in-memory form of `text`.
    init(_ text: String) {
        if let key = TokenKey(canonicalHex: text) {
            self = .sha256(key)
        } else {
            self = .text(text)
        }
    }

    /// The digest as text, exactly as it was given.
    var string: String {
        switch self {
        case let .sha256(key): return key.hex
        case let .text(text): return text
        }
    }
}
