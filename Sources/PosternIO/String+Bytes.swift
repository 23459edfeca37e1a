// What the shipped binary used from full Foundation, on FoundationEssentials and libc alone: full Foundation
// brings ICU, 36 MB of the 60 MB static binary (docs/docker.md, "The image").

extension String {
    /// The text as a literal in a regular expression: `$()*+./?[\^{|}` each get a backslash
    /// (what `NSRegularExpression.escapedPattern(for:)` writes).
    package var regexEscaped: String {
        var out = ""
        out.reserveCapacity(utf8.count)
        for scalar in unicodeScalars {
            if "$()*+./?[\\^{|}".unicodeScalars.contains(scalar) { out.append("\\") }
            out.unicodeScalars.append(scalar)
        }
        return out
    }

    /// The first (or with `backwards`, the last) place where `needle` occurs, compared byte by byte
    /// (`range(of:)` / `range(of:options: .backwards)` for the ASCII needles the code looks for).
    package func byteRange(of needle: String, backwards: Bool = false) -> Range<String.Index>? {
        let hay = Array(utf8)
        let pin = Array(needle.utf8)
        guard !pin.isEmpty, pin.count <= hay.count else { return nil }
        let starts = 0...(hay.count - pin.count)
        let match = { (start: Int) in hay[start..<(start + pin.count)].elementsEqual(pin) }
        let found = backwards ? starts.reversed().first(where: match) : starts.first(where: match)
        guard let start = found else { return nil }
        let lower = utf8.index(utf8.startIndex, offsetBy: start)
        return lower..<utf8.index(lower, offsetBy: pin.count)
    }

    /// Every occurrence of `target` replaced by `replacement`, left to right, compared byte by byte
    /// (`replacingOccurrences(of:with:)` for ASCII targets; Swift's `replacing` compares whole characters, so it
    /// would leave the "\n" of a "\r\n" unescaped).
    package func replacingBytes(of target: String, with replacement: String) -> String {
        let pin = Array(target.utf8)
        let bytes = Array(utf8)
        guard !pin.isEmpty, bytes.count >= pin.count else { return self }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count)
        var i = 0
        while i < bytes.count {
            if i + pin.count <= bytes.count && bytes[i..<(i + pin.count)].elementsEqual(pin) {
                out.append(contentsOf: replacement.utf8)
                i += pin.count
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The path without its last component, as `NSString.deletingLastPathComponent` gives it: "" for a bare
    /// name, "/" for a file in the root; trailing slashes are ignored.
    package var deletingLastPathComponent: String {
        var path = Substring(self)
        while path.count > 1 && path.hasSuffix("/") { path = path.dropLast() }
        guard let slash = path.lastIndex(of: "/") else { return "" }
        if slash == path.startIndex { return "/" }
        var parent = path[..<slash]
        while parent.count > 1 && parent.hasSuffix("/") { parent = parent.dropLast() }
        return String(parent)
    }
}
