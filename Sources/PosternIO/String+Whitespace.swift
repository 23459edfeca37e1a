extension Unicode.Scalar {
    /// Whether `CharacterSet.whitespaces` holds it: tab, space, U+00A0, U+1680, U+2000 to U+200B, U+202F, U+205F
    /// and U+3000 (the space separators of Foundation's Unicode tables, where U+200B still is one).
    var isFoundationWhitespace: Bool {
        switch value {
        case 0x09, 0x20: return true
        case ..<0xA0: return false
        case 0xA0, 0x1680, 0x2000...0x200B, 0x202F, 0x205F, 0x3000: return true
        default: return false
        }
    }

    /// Whether `CharacterSet.whitespacesAndNewlines` holds it: the above, U+000A to U+000D, U+0085, U+2028 and
    /// U+2029.
    var isFoundationWhitespaceOrNewline: Bool {
        switch value {
        case 0x0A...0x0D, 0x85, 0x2028, 0x2029: return true
        default: return isFoundationWhitespace
        }
    }
}

extension StringProtocol {
    /// The text without leading and trailing spaces and tabs (`trimmedSpaces()`).
    package func trimmedSpaces() -> String { trimmed(where: \.isFoundationWhitespace) }

    /// The text without leading and trailing white space and line breaks
    /// (`trimmedSpacesAndNewlines()`).
    package func trimmedSpacesAndNewlines() -> String { trimmed(where: \.isFoundationWhitespaceOrNewline) }

    private func trimmed(where drop: (Unicode.Scalar) -> Bool) -> String {
        let scalars = String(self).unicodeScalars
        guard let first = scalars.firstIndex(where: { !drop($0) }) else { return "" }
        // A scalar that is kept exists (`first`), so searching from the end finds one too.
        let last = scalars.lastIndex(where: { !drop($0) })!
        return String(String.UnicodeScalarView(scalars[first...last]))
    }
}
