import Foundation
import Testing

/// The folders of the gateway core use each other's types only along the edges docs/architecture.md lists (its
/// block after the `FolderGraphTests reads the next block` marker), and that graph has no cycle. A folder uses a
/// type declared in another when it names it anywhere in its code (a top-level `struct`, `class`, `enum`,
/// `protocol`, `actor` or `typealias`, extensions included), read from the sources themselves, comments and string
/// literals left out.
@Suite struct FolderGraphTests {
    /// The package this file is in (the nearest folder above it with a `Package.swift`).
    static var packageRoot: URL {
        var folder = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
        while folder.path != "/" && !FileManager.default.fileExists(atPath: folder.appendingPathComponent("Package.swift").path) {
            folder = folder.deletingLastPathComponent()
        }
        return folder
    }

    /// folder → the folders whose types it may use, as docs/architecture.md lists them.
    static func documentedGraph() throws -> [String: Set<String>] {
        let text = try String(contentsOf: packageRoot.appendingPathComponent("docs/architecture.md"), encoding: .utf8)
        let lines = text.split(separator: "\n", omittingEmptySubsequences: false)
        let marker = try #require(lines.firstIndex { $0.contains("FolderGraphTests reads the next block") })
        let open = try #require(lines[(marker + 1)...].firstIndex { $0.hasPrefix("```") })
        let close = try #require(lines[(open + 1)...].firstIndex { $0.hasPrefix("```") })
        var graph: [String: Set<String>] = [:]
        for line in lines[(open + 1)..<close] {
            let words = line.split(separator: " ").map(String.init)
            #expect(words.count >= 2 && words[1] == "->", "not `Folder -> Used Folders`: \(line)")
            guard words.count >= 2 else { continue }
            #expect(graph[words[0]] == nil, "\(words[0]) is listed twice")
            graph[words[0]] = Set(words.dropFirst(2))
        }
        return graph
    }

    @Test func theCoreFoldersUseEachOtherAsDocumented() throws {
        let graph = try FolderGraph(root: Self.packageRoot.appendingPathComponent("Sources/PosternCore"))
        let documented = try Self.documentedGraph()
        // The graph was read at all: a known use is found.
        #expect(graph.declarations.count > 100)
        #expect(graph.edges["Pipeline"]?["Errors"]?.contains("GatewayError") == true)
        // The documented folders are the folders, and the documented edges are the edges, each way.
        #expect(Set(documented.keys) == graph.folders)
        let named = documented.values.reduce(into: Set<String>()) { $0.formUnion($1) }
        #expect(named.isSubset(of: graph.folders), "documented folders that do not exist: \(named.subtracting(graph.folders).sorted())")
        for folder in graph.folders.union(documented.keys).sorted() {
            let used = Set((graph.edges[folder] ?? [:]).keys)
            let allowed = documented[folder] ?? []
            for extra in used.subtracting(allowed).sorted() {
                Issue.record("\(folder) -> \(extra) is not in docs/architecture.md (\(graph.describe([folder, extra]).split(separator: ";")[0]))")
            }
            for missing in allowed.subtracting(used).sorted() {
                Issue.record("docs/architecture.md lists \(folder) -> \(missing), which the code does not use")
            }
        }
        let cycle = graph.cycle()
        #expect(cycle == nil, "folder cycle: \(cycle.map(graph.describe) ?? "")")
    }

    @Test func aCycleIsFound() throws {
        let root = FileManager.default.temporaryDirectory.appendingPathComponent("folder-graph-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: root) }
        let files = [
            "A/One.swift": "/// Uses B's type.\npublic struct One { let two: Two? }\n",
            "B/Two.swift": "final class Two {\n    // One in a comment is no use\n    let text = \"One\"\n    func three() -> Three? { nil }\n}\n",
            "C/Three.swift": "enum Three { case a }\nextension Three { var one: One? { nil } }\n",
            "D/Four.swift": "struct Four { let three: Three }\n",
        ]
        for (path, text) in files {
            let url = root.appendingPathComponent(path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try text.write(to: url, atomically: true, encoding: .utf8)
        }
        let graph = try FolderGraph(root: root)
        #expect(graph.edges["B"]?["A"] == nil, "a comment or a string is no use")
        #expect(graph.edges["D"]?["C"] == ["Three"])
        let cycle = try #require(graph.cycle())
        #expect(Set(cycle) == ["A", "B", "C"])
        // Without C's use of A there is none.
        try "enum Three { case a }\n".write(to: root.appendingPathComponent("C/Three.swift"), atomically: true, encoding: .utf8)
        #expect(try FolderGraph(root: root).cycle() == nil)
    }

    @Test func interpolatedCodeCountsAndNestedCommentsDoNot() {
        let source = "let a = \"x \\(Version.current) y\" /* One /* nested */ Two */ let b = #\"Raw \\(NotCode)\"# + \"\"\"\n"
            + "    Multi \\(Inner(x: \")\")) line \\\" Quoted\n    \"\"\" + After // Comment\n"
        let words = Set(FolderGraph.identifiers(in: FolderGraph.code(of: source)))
        #expect(words.isSuperset(of: ["Version", "current", "Inner", "a", "b", "After"]))
        #expect(words.isDisjoint(with: ["One", "Two", "nested", "Raw", "NotCode", "Multi", "line", "Quoted", "Comment"]))
    }
}

/// Which folder of a source tree uses types declared in which other folder.
struct FolderGraph {
    /// The folders (the first path component under the root).
    private(set) var folders: Set<String> = []
    /// Each top-level type name declared in exactly one folder, and that folder.
    private(set) var declarations: [String: String] = [:]
    /// folder → used folder → the type names that make the use.
    private(set) var edges: [String: [String: Set<String>]] = [:]

    /// Reads every `.swift` file under `root`.
    init(root: URL) throws {
        var sources: [(folder: String, code: String)] = []
        let files = FileManager.default.enumerator(at: root, includingPropertiesForKeys: nil)
        while let url = files?.nextObject() as? URL {
            guard url.pathExtension == "swift" else { continue }
            let parts = url.standardizedFileURL.path.dropFirst(root.standardizedFileURL.path.count).split(separator: "/")
            guard parts.count >= 2 else { continue }
            sources.append((String(parts[0]), FolderGraph.code(of: try String(contentsOf: url, encoding: .utf8))))
        }
        var declaredIn: [String: Set<String>] = [:]
        for (folder, code) in sources {
            folders.insert(folder)
            for name in FolderGraph.topLevelTypes(in: code) { declaredIn[name, default: []].insert(folder) }
        }
        for (name, places) in declaredIn where places.count == 1 { declarations[name] = places.first }
        for (folder, code) in sources {
            for word in FolderGraph.identifiers(in: code) {
                guard let owner = declarations[word], owner != folder else { continue }
                edges[folder, default: [:]][owner, default: []].insert(word)
            }
        }
    }

    /// A cycle of folders (each uses the next, the last the first), if there is one.
    func cycle() -> [String]? {
        var state: [String: Bool] = [:]  // false: on the current path; true: done
        var path: [String] = []
        func visit(_ folder: String) -> [String]? {
            state[folder] = false
            path.append(folder)
            for next in (edges[folder] ?? [:]).keys.sorted() {
                if state[next] == false, let start = path.firstIndex(of: next) { return Array(path[start...]) }
                if state[next] == nil, let found = visit(next) { return found }
            }
            path.removeLast()
            state[folder] = true
            return nil
        }
        for folder in folders.sorted() where state[folder] == nil {
            if let found = visit(folder) { return found }
        }
        return nil
    }

    /// `cycle` with the types behind each use.
    func describe(_ cycle: [String]) -> String {
        zip(cycle, cycle.dropFirst() + cycle.prefix(1)).map { from, to in
            "\(from) -> \(to) (\((edges[from]?[to] ?? []).sorted().joined(separator: ", ")))"
        }.joined(separator: "; ")
    }

    /// The names of the types declared at the top level (a declaration line that starts in column 0).
    static func topLevelTypes(in code: String) -> [String] {
        let kinds: Set<Substring> = ["struct", "class", "enum", "protocol", "actor", "typealias"]
        let modifiers: Set<Substring> = ["public", "package", "internal", "private", "fileprivate", "final", "indirect", "open"]
        var names: [String] = []
        for line in code.split(separator: "\n") where !(line.first?.isWhitespace ?? true) {
            var words = line.split(whereSeparator: { $0 == " " || $0 == "\t" })[...]
            while let first = words.first, first.hasPrefix("@") || modifiers.contains(first) { words.removeFirst() }
            guard words.count >= 2, kinds.contains(words[words.startIndex]) else { continue }
            let name = words[words.startIndex + 1].prefix(while: { $0.isLetter || $0.isNumber || $0 == "_" })
            if !name.isEmpty { names.append(String(name)) }
        }
        return names
    }

    /// The identifiers of `code` (as `code(of:)` leaves it).
    static func identifiers(in code: String) -> [String] {
        var words: [String] = []
        var current = ""
        for character in code {
            if character.isLetter || character == "_" || (character.isNumber && !current.isEmpty) {
                current.append(character)
            } else if !current.isEmpty {
                words.append(current)
                current = ""
            }
        }
        if !current.isEmpty { words.append(current) }
        return words
    }

    /// `source` without its comments (nested block comments too) and the text of its string literals (plain,
    /// multi-line and raw), keeping the code interpolated in them; line breaks stay where they were.
    static func code(of source: String) -> String {
        /// Where the scan is: code (the file's, or an interpolation's with its open parentheses), or a literal.
        enum Place {
            case code(parentheses: Int)
            case literal(hashes: Int, multiline: Bool)
        }
        let chars = Array(source.unicodeScalars)
        var out = String.UnicodeScalarView()
        var places: [Place] = [.code(parentheses: 0)]
        var i = 0
        func starts(_ text: String, _ k: Int) -> Bool {
            var k = k
            for scalar in text.unicodeScalars {
                guard k < chars.count, chars[k] == scalar else { return false }
                k += 1
            }
            return true
        }
        while i < chars.count {
            switch places[places.count - 1] {
            case .literal(let hashes, let multiline):
                let close = (multiline ? "\"\"\"" : "\"") + String(repeating: "#", count: hashes)
                let interpolation = "\\" + String(repeating: "#", count: hashes) + "("
                if starts(close, i) {
                    places.removeLast()
                    out.append(contentsOf: "\"\"".unicodeScalars)
                    i += close.unicodeScalars.count
                } else if starts(interpolation, i) {
                    places.append(.code(parentheses: 0))
                    out.append(" ")
                    i += interpolation.unicodeScalars.count
                } else if chars[i] == "\\" && hashes == 0 {
                    i += 2  // an escape: `\"` does not close the literal
                } else {
                    if chars[i] == "\n" { out.append("\n") }
                    i += 1
                }
                continue
            case .code(let parentheses) where places.count > 1:
                // An interpolation's code: its closing parenthesis returns to the literal.
                if chars[i] == "(" {
                    places[places.count - 1] = .code(parentheses: parentheses + 1)
                } else if chars[i] == ")" {
                    if parentheses == 0 {
                        places.removeLast()
                        out.append(" ")
                        i += 1
                        continue
                    }
                    places[places.count - 1] = .code(parentheses: parentheses - 1)
                }
            case .code:
                break
            }
            if starts("//", i) {
                while i < chars.count && chars[i] != "\n" { i += 1 }
            } else if starts("/*", i) {
                var depth = 0
                repeat {
                    if starts("/*", i) {
                        depth += 1
                        i += 2
                    } else if starts("*/", i) {
                        depth -= 1
                        i += 2
                    } else {
                        if chars[i] == "\n" { out.append("\n") }
                        i += 1
                    }
                } while depth > 0 && i < chars.count
                out.append(" ")
            } else if chars[i] == "#" || chars[i] == "\"" {
                var hashes = 0
                while i + hashes < chars.count && chars[i + hashes] == "#" { hashes += 1 }
                guard starts("\"", i + hashes) else {
                    out.append(chars[i])
                    i += 1
                    continue
                }
                let multiline = starts("\"\"\"", i + hashes)
                places.append(.literal(hashes: hashes, multiline: multiline))
                i += hashes + (multiline ? 3 : 1)
            } else {
                out.append(chars[i])
                i += 1
            }
        }
        return String(out)
    }
}
