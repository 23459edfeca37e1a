import Foundation
import Testing
@testable import PosternCore
import PosternTesting
@testable import PosternIO

/// The shipped binary links FoundationEssentials only; these helpers replace what it used from full Foundation.
/// The test target keeps Foundation, so each helper is checked against the Foundation call it replaced.
@Suite struct FoundationReplacementsTests {
    static let samples: [String] = [
        "", " ", "\t", "a", " a ", "\ta b\t", "  x\n", "\r\n x \r\n", "\u{A0}nbsp\u{A0}", "\u{2003}em\u{3000}",
        "\u{2028}ls\u{2029}", "\u{85}nel\u{85}", "\u{0B}\u{0C}vt ff", "\u{FEFF}bom\u{FEFF}", "e\u{301} ",
        " \u{301}", "😀 ", " 日本 ", "\n\n", "a\u{200B}", "Bearer  token\t", " 10.0.0.1 ", "\u{1680}ogham\u{180E}",
    ]

    /// Full Foundation brings ICU (36 MB of the static binary): no target linked into `postern` may import it.
    @Test func shippedTargetsDoNotImportFoundation() throws {
        let root = repositoryRoot
        var offenders: [String] = []
        var seen = 0
        for target in ["PosternIO", "PosternHTTP", "PosternRedis", "DirectusPlan", "PosternCore", "DirectusStandIn", "postern"] {
            let dir = root.appendingPathComponent("Sources/\(target)")
            let files = FileManager.default.enumerator(atPath: dir.path)?.compactMap { $0 as? String } ?? []
            for file in files where file.hasSuffix(".swift") {
                seen += 1
                let text = try String(contentsOf: dir.appendingPathComponent(file), encoding: .utf8)
                for line in text.split(separator: "\n") {
                    // `import Foundation`, `@preconcurrency import Foundation`, `import struct Foundation.Date`.
                    let words = line.split(separator: " ")
                    guard words.contains("import") else { continue }
                    if words.contains(where: { $0 == "Foundation" || $0.hasPrefix("Foundation.") }) {
                        offenders.append("\(target)/\(file): \(line)")
                    }
                }
            }
        }
        #expect(seen > 100)
        #expect(offenders == [])
    }

    @Test func trimmingMatchesFoundation() {
        for s in Self.samples {
            #expect(s.trimmedSpaces() == s.trimmingCharacters(in: .whitespaces), "\(Array(s.unicodeScalars))")
            #expect(s.trimmedSpacesAndNewlines() == s.trimmingCharacters(in: .whitespacesAndNewlines),
                    "\(Array(s.unicodeScalars))")
            let sub = Substring(s)
            #expect(sub.trimmedSpaces() == sub.trimmingCharacters(in: .whitespaces))
        }
    }

    @Test func whitespaceSetsMatchFoundationForEveryScalar() {
        var spaces: [UInt32] = []
        var spacesAndNewlines: [UInt32] = []
        for value in UInt32(0)...0x10FFFF {
            guard let scalar = Unicode.Scalar(value) else { continue }
            if scalar.isFoundationWhitespace != CharacterSet.whitespaces.contains(scalar) { spaces.append(value) }
            if scalar.isFoundationWhitespaceOrNewline != CharacterSet.whitespacesAndNewlines.contains(scalar) {
                spacesAndNewlines.append(value)
            }
        }
        #expect(spaces.isEmpty)
        #expect(spacesAndNewlines.isEmpty)
    }

    @Test func regexEscapingMatchesFoundation() {
        var inputs = (1..<128).map { String(UnicodeScalar(UInt8($0))) }
        inputs += ["title", "a.b", "é€😀 a-b_c", "x[0]{1}", "back\\slash", "", "$^|?*+()"]
        for s in inputs {
            #expect(s.regexEscaped == NSRegularExpression.escapedPattern(for: s), "\(s.debugDescription)")
        }
    }

    @Test func datesMatchFoundationFormatters() {
        let iso = ISO8601DateFormatter()
        iso.formatOptions = [.withInternetDateTime]
        iso.timeZone = TimeZone(identifier: "UTC")
        let http = DateFormatter()
        http.locale = Locale(identifier: "en_US_POSIX")
        http.timeZone = TimeZone(identifier: "GMT")
        http.dateFormat = "EEE, dd MMM yyyy HH:mm:ss 'GMT'"
        let seconds: [Double] = [0, 0.999, 59.5, 86_399.999, 951_782_400, 1_700_000_000.25, 1_798_761_599,
                                 4_102_444_800, 253_402_300_799]
        for t in seconds + (0..<40).map({ Double($0) * 7_776_000.123 }) {
            let date = Date(timeIntervalSince1970: t)
            #expect(FixedDateFormat.rfc3339(date) == iso.string(from: date), "\(t)")
            #expect(FixedDateFormat.imfFixdate(date) == http.string(from: date), "\(t)")
        }
    }

    @Test func parentPathMatchesNSString() {
        // A bare one-letter name ("a") crashes `NSString.deletingLastPathComponent` on Linux; the helper gives "".
        #expect("a".deletingLastPathComponent == "")
        let paths = ["", "/", "ab", "/a", "a/b", "/a/b", "/a/b/", "a//b", "/a//b//", "./s.db", "../s.db", "//x",
                     "/var/lib/postern/sessions.db", "data/sessions.db"]
        for p in paths {
            #expect(p.deletingLastPathComponent == (p as NSString).deletingLastPathComponent, "\(p)")
        }
    }

    @Test func byteSearchAndReplaceMatchFoundation() {
        let texts = ["", "a", "unexpected token at byte 12", "x at byte 1 at byte 2", "redis://h:1/0", "a+b++c",
                     "q\\\"\n\r\n", "é+😀+", "+"]
        for t in texts {
            for needle in [" at byte ", "://", "+", "\n", "\\", "\""] {
                #expect(t.byteRange(of: needle) == t.range(of: needle), "\(t) \(needle)")
                #expect(t.byteRange(of: needle, backwards: true) == t.range(of: needle, options: .backwards),
                        "\(t) \(needle)")
                #expect(t.replacingBytes(of: needle, with: "%2B") == t.replacingOccurrences(of: needle, with: "%2B"),
                        "\(t) \(needle)")
            }
        }
    }

    @Test func sessionFileInMissingDirectoriesCreatesThemPrivate() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ess-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.path + "/one/two/sessions.db"
        _ = try SQLiteSessionStore(path: path, secretBox: nil)
        #expect(FileManager.default.fileExists(atPath: path))
        for made in [dir.path, dir.path + "/one", dir.path + "/one/two"] {
            let mode = try FileManager.default.attributesOfItem(atPath: made)[.posixPermissions] as? Int
            #expect(mode == 0o700, "\(made)")
        }
    }

    @Test func sessionFileUnderAFileIsAClearError() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("ess-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let file = dir.path + "/plain"
        #expect(FileManager.default.createFile(atPath: file, contents: Data("x".utf8)))
        let path = file + "/sub/sessions.db"
        #expect {
            try SQLiteSessionStore(path: path, secretBox: nil)
        } throws: { error in
            guard case let SessionStoreError.cannotOpen(p, reason)? = error as? SessionStoreError else { return false }
            return p == path && reason == "cannot create directory \(file)/sub: Not a directory"
        }
    }
}
