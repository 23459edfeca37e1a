import FoundationEssentials
import Glibc

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
