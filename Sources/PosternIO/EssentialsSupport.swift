#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import FoundationEssentials
#endif
#if canImport(Glibc)
import Glibc
#endif

// What the shipped binary used from full Foundation, on FoundationEssentials and libc alone: full Foundation
// brings ICU, 36 MB of the 60 MB static binary (docs/docker.md, "The image").

/// A lock object around a pthread mutex, for state guarded by `lock()`/`unlock()` pairs or `withLock`
/// (what `NSLock` was; on the hot path use `FastLock`).
package final class PlainLock: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// A new, unlocked lock.
    package init() {
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    /// Takes the lock, waiting for it.
    package func lock() { pthread_mutex_lock(mutex) }

    /// Gives the lock back.
    package func unlock() { pthread_mutex_unlock(mutex) }

    /// Runs `body` holding the lock.
    package func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return try body()
    }
}

/// Starts a detached thread running `body` (what `Thread.detachNewThread` was).
package func startDetachedThread(_ body: @escaping @Sendable () -> Void) {
    let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    var thread = pthread_t()
    let started = pthread_create(&thread, &attributes, { context in
        // The context is the retained box passed just below; it is always set.
        Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue().body()
        return nil
    }, context)
    pthread_attr_destroy(&attributes)
    precondition(started == 0, "pthread_create failed: \(started)")
}

/// The closure a thread started by `startDetachedThread` runs, passed to it retained.
private final class ThreadBody {
    package let body: @Sendable () -> Void
    package init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}

extension Unicode.Scalar {
    /// Whether `CharacterSet.whitespaces` holds it: tab, space, U+00A0, U+1680, U+2000 to U+200B, U+202F, U+205F
    /// and U+3000 (the space separators of Foundation's Unicode tables, where U+200B still is one).
    package var isFoundationWhitespace: Bool {
        switch value {
        case 0x09, 0x20: return true
        case ..<0xA0: return false
        case 0xA0, 0x1680, 0x2000...0x200B, 0x202F, 0x205F, 0x3000: return true
        default: return false
        }
    }

    /// Whether `CharacterSet.whitespacesAndNewlines` holds it: the above, U+000A to U+000D, U+0085, U+2028 and
    /// U+2029.
    package var isFoundationWhitespaceOrNewline: Bool {
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

/// Formats dates in the two fixed forms the gateway writes, from the C library (no ICU).
package enum FixedDateFormat {
    /// `2026-01-31T12:34:56Z`: RFC 3339 in UTC, whole seconds (what `ISO8601DateFormatter` with
    /// `.withInternetDateTime` wrote).
    package static func rfc3339(_ date: Date) -> String { format(date, "%Y-%m-%dT%H:%M:%SZ") }

    /// `Sat, 31 Jan 2026 12:34:56 GMT`: the date of HTTP headers and cookies (RFC 9110 IMF-fixdate).
    package static func imfFixdate(_ date: Date) -> String { format(date, "%a, %d %b %Y %H:%M:%S GMT") }

    private static func format(_ date: Date, _ pattern: String) -> String {
        var seconds = time_t(date.timeIntervalSince1970.rounded(.down))
        var parts = tm()
        gmtime_r(&seconds, &parts)
        // strftime's %a and %b are the C locale's English names: the process never calls setlocale.
        var text = [CChar](repeating: 0, count: 64)
        let count = strftime(&text, text.count, pattern, &parts)
        return String(decoding: text[..<count].map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }
}

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
