import PosternHTTP

/// How a declared filter's value is read (docs/api.md, Declared filters): each type's text form, and the text
/// Directus is sent for it.
extension FilterConfig.ValueType {
    /// What a value of this type looks like, for error messages ("must be …").
    var expectation: String {
        switch self {
        case .string: return "non-empty text"
        case .integer: return "an integer"
        case .uuid: return "a uuid (8-4-4-4-12 hex digits)"
        case .datetime: return "an RFC 3339 date-time such as 2026-01-01T00:00:00Z"
        case .boolean: return "true or false"
        }
    }

    /// The text Directus is sent for the client's `text`, or nil when `text` is not a value of this type: an
    /// integer in canonical form, a uuid lowercased, a date-time in UTC with milliseconds
    /// (`2026-01-01T00:00:00.000Z`, the form Directus answers timestamps in), text and booleans as given.
    /// Equal values give equal texts, so that they share one micro-cache key.
    func directusText(_ text: String) -> String? {
        switch self {
        case .string:
            return text.isEmpty ? nil : text
        case .integer:
            let digits = text.hasPrefix("-") ? text.utf8.dropFirst() : text.utf8[...]
            guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
                  let value = Int64(text) else { return nil }
            return String(value)
        case .uuid:
            let bytes = Array(text.utf8)
            guard bytes.count == 36 else { return nil }
            for (i, b) in bytes.enumerated() {
                if i == 8 || i == 13 || i == 18 || i == 23 {
                    guard b == UInt8(ascii: "-") else { return nil }
                } else {
                    guard (0x30...0x39).contains(b) || (0x61...0x66).contains(b) || (0x41...0x46).contains(b) else { return nil }
                }
            }
            return String(decoding: bytes.map { (0x41...0x46).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
        case .datetime:
            return RFC3339.utcText(text)
        case .boolean:
            return text == "true" || text == "false" ? text : nil
        }
    }

    /// Why Directus would not take `text` (already of this type) as the literal it is, or nil: Directus reads
    /// `true`, `false`, `null` and `NULL` in any filter as a boolean or a null, and a value starting with `$NOW` or
    /// `$CURRENT_` as a dynamic variable, so such text can never be matched exactly.
    static func reinterpretation(of text: String) -> String? {
        switch text {
        case "true", "false", "null", "NULL":
            return "Directus reads \"\(text)\" in a filter as a \(text.lowercased() == "null" ? "null" : "boolean"), not as text"
        default:
            if text.hasPrefix("$NOW") || text.hasPrefix("$CURRENT_") {
                return "Directus reads \"\(text)\" in a filter as a dynamic variable, not as text"
            }
            return nil
        }
    }
}
