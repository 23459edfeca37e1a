import PosternIO

/// An ordered list of header fields with case-insensitive lookup.
///
/// A received request's fields stay as the bytes they came in (`HeaderBlock`) until something changes them:
/// a lookup compares bytes and makes a `String` only for the value it returns. Any change turns them into
/// a list of strings first.
///
/// An answer sent many times (a stored micro-cache answer) has its fields rendered once (`render()`): they are
/// kept, with their bytes, in a part shared by every copy, and fields added to a copy go into its own list after
/// them, with no copy of the shared ones.
package struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    /// The fields as strings (empty while `block` holds them).
    private var list: [(name: String, value: String)] = []
    /// The received fields, until the first change (read only once handed out: see `HeaderBlock`).
    nonisolated(unsafe) private var block: HeaderBlock?
    /// The fields `render()` rendered, before `list`'s (shared by copies; a change to one of them moves them
    /// back into `list`).
    private var rendered: RenderedFields?

    /// The fields, in order.
    package var fields: [(name: String, value: String)] {
        if let block { return block.fields() }
        if let rendered { return rendered.fields + list }
        return list
    }

    /// The rendered fields (written as their bytes) and the fields after them, for the server's writer.
    var forWriting: (rendered: RenderedFields?, others: [(name: String, value: String)]) {
        if let block { return (nil, block.fields()) }
        return (rendered, list)
    }

    /// An empty header list.
    package init() {}

    /// An empty header list with room for `capacity` fields.
    package init(capacity: Int) {
        list.reserveCapacity(capacity)
    }

    /// The fields of a received request's head, read from its bytes.
    package init(block: HeaderBlock) {
        self.block = block
    }

    /// A header list from literal pairs.
    package init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { add(name, value) }
    }

    /// The first value of `name`, compared case-insensitively.
    package subscript(name: String) -> String? {
        if let block {
            guard let i = block.index(of: name) else { return nil }
            return block.value(i)
        }
        if let value = rendered?.fields.first(where: { HTTPHeaders.sameName($0.name, name) })?.value { return value }
        return listIndex(of: name).map { list[$0].value }
    }

    /// The fields the edge sets the same way on every answer under `/api/` (`EdgeStages.decorateAlike`).
    package static let alike: [(name: String, value: String)] = [("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-store")]

    /// `Content-Type: application/json; charset=utf-8` and `alike`, rendered: the fields of every JSON answer
    /// under `/api/` before the edge adds the request's own (`HTTPResponse.apiJSON`).
    package static let apiJSON: HTTPHeaders = {
        var headers = HTTPHeaders()
        headers.add("Content-Type", "application/json; charset=utf-8")
        for field in alike { headers.add(field.name, field.value) }
        headers.render()
        return headers
    }()

    /// True when the fields are a rendered part that holds `alike` (each once) and nothing was added to them:
    /// setting the fields of `alike` would change nothing (a stored micro-cache answer, before a hit adds its own).
    package var rendersOnlyAlike: Bool {
        block == nil && list.isEmpty && rendered?.holdsAlike == true
    }

    /// Whether a field called `name` is present (no `String` made for its value).
    package func contains(_ name: String) -> Bool {
        if let block { return block.index(of: name) != nil }
        return renderedContains(name) || listIndex(of: name) != nil
    }

    /// Calls `body` with the UTF-8 bytes of the first value of `name` (nil when there is none), without
    /// making a `String` of it when the fields are still the received bytes.
    package func withFirstValueBytes<R>(_ name: String, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R? {
        if let block {
            guard let i = block.index(of: name) else { return nil }
            return try block.withValueBytes(i, body)
        }
        guard var value = self[name] else { return nil }
        return try value.withUTF8(body)
    }

    /// Every value of `name` in order, compared case-insensitively (one per header line).
    package func values(_ name: String) -> [String] {
        if let block {
            var out: [String] = []
            var from = 0
            while let i = block.index(of: name, from: from) {
                out.append(block.value(i))
                from = i + 1
            }
            return out
        }
        return fields.compactMap { HTTPHeaders.sameName($0.name, name) ? $0.value : nil }
    }

    /// ASCII case-insensitive comparison of header names, without allocating. Names of different UTF-8
    /// lengths differ (the usual case, decided without reading a byte); equal strings are compared as such
    /// first (a name spelt as the program spells it: no byte by byte walk).
    static func sameName(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        if a == b { return true }
        for (x, y) in zip(a.utf8, b.utf8) where x != y {
            // Only letters may differ, and only in case.
            guard x | 0x20 == y | 0x20, (x | 0x20) >= UInt8(ascii: "a") && (x | 0x20) <= UInt8(ascii: "z") else { return false }
        }
        return true
    }

    /// Turns received fields into the list of strings (before a change).
    private mutating func materialize() {
        guard let block else { return }
        list = block.fields()
        self.block = nil
    }

    /// The index in `list` of the first field called `name`, read in place (no copy of a field).
    private func listIndex(of name: String) -> Int? {
        list.withUnsafeBufferPointer { fields in
            for i in fields.indices where HTTPHeaders.sameName(fields[i].name, name) { return i }
            return nil
        }
    }

    /// Whether a rendered field is called `name`.
    private func renderedContains(_ name: String) -> Bool {
        rendered?.index(of: name, from: 0) != nil
    }

    /// Moves the rendered fields back into `list` (before a change to one of them).
    private mutating func unrender() {
        guard let rendered else { return }
        list = rendered.fields + list
        self.rendered = nil
    }

    /// Appends a field.
    package mutating func add(_ name: String, _ value: String) {
        materialize()
        list.append((name, value))
    }

    /// Replaces every field called `name` with one field (nothing changes, and nothing shared is copied, when
    /// the only such field is a rendered one with this value).
    package mutating func set(_ name: String, _ value: String) {
        // The usual case, a name not there yet (e.g. the edge's `X-Request-Id` on a rendered answer): appended after
        // one search, without the replace path's.
        if block == nil, !contains(name) {
            list.append((name, value))
            return
        }
        if let rendered, rendered.holdsOnly(name, value), listIndex(of: name) == nil {
            return
        }
        remove(name)
        materialize()
        list.append((name, value))
    }

    /// Removes every field called `name` (a list without one is left untouched: no copy of a shared list).
    package mutating func remove(_ name: String) {
        guard contains(name) else { return }
        materialize()
        if renderedContains(name) { unrender() }
        list.removeAll { HTTPHeaders.sameName($0.name, name) }
    }

    /// Renders the fields as the lines of a head (`Name: value` and CRLF each), once, for an answer that is
    /// sent many times (a stored micro-cache answer): the server then writes them with one copy. The fields
    /// themselves do not change. Does nothing when a field is one the server writes or reads itself
    /// (`Content-Length`, `Connection`, `Transfer-Encoding`, `Date`) or holds a CR or LF.
    package mutating func render() {
        // Rendered already, nothing added since (a resource's answer, `HTTPResponse.apiJSON`): nothing to do.
        if block == nil, list.isEmpty, rendered != nil { return }
        materialize()
        unrender()
        guard let fields = RenderedFields(list) else { return }
        rendered = fields
        list = []
    }

    /// Makes room for `more` fields beyond the current ones, so that adding them allocates at most once
    /// (here, and only when the list is shared or too small).
    package mutating func reserve(_ more: Int) {
        if let block {
            var grown: [(name: String, value: String)] = []
            grown.reserveCapacity(block.count + more)
            for i in 0..<block.count { grown.append((block.name(i), block.value(i))) }
            list = grown
            self.block = nil
            return
        }
        list.reserveCapacity(list.count + more)
    }

    /// Iterates the fields in order.
    package func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }

    package static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.map { "\($0.name.lowercased()):\($0.value)" } == rhs.fields.map { "\($0.name.lowercased()):\($0.value)" }
    }
}

/// Header fields with the bytes of their head lines (see `HTTPHeaders.render()`); shared, never changed.
final class RenderedFields: Sendable {
    /// The fields, in order.
    let fields: [(name: String, value: String)]
    /// `Name: value` and CRLF for each field, in order.
    let bytes: [UInt8]
    /// Each field's name as its length and lower-cased first byte (`signature`): most names another one is
    /// compared with differ there, without a text comparison.
    private let signatures: [Int]

    /// Whether the fields hold `HTTPHeaders.alike` (each name once, with its value): the fields the edge sets
    /// the same way on every answer under `/api/`, which a hit then need not set again.
    let holdsAlike: Bool

    /// The bytes of `fields`; nil when one of them is a field the server writes or reads itself, or holds a
    /// CR or LF.
    init?(_ fields: [(name: String, value: String)]) {
        var bytes: [UInt8] = []
        for (name, value) in fields {
            for special in ["Content-Length", "Connection", "Transfer-Encoding", "Date"]
                where HTTPHeaders.sameName(name, special) { return nil }
            if name.utf8.contains(where: { $0 == 13 || $0 == 10 }) || value.utf8.contains(where: { $0 == 13 || $0 == 10 }) {
                return nil
            }
            bytes += name.utf8
            bytes += [0x3A, 0x20]
            bytes += value.utf8
            bytes += [13, 10]
        }
        self.fields = fields
        self.bytes = bytes
        let signatures = fields.map { RenderedFields.signature($0.name) }
        self.signatures = signatures
        holdsAlike = HTTPHeaders.alike.allSatisfy { RenderedFields.holdsOnly($0.name, $0.value, fields, signatures) }
    }

    /// A name's length and lower-cased first byte, as one number (equal for names `sameName` finds equal).
    private static func signature(_ name: String) -> Int {
        name.utf8.count << 8 | Int(name.utf8.first.map { $0 | 0x20 } ?? 0)
    }

    /// The index of the first field called `name` at or after `start`.
    func index(of name: String, from start: Int) -> Int? {
        RenderedFields.index(of: name, from: start, fields, signatures)
    }

    /// Whether exactly one of the fields is called `name`, and its value is `value`.
    func holdsOnly(_ name: String, _ value: String) -> Bool {
        RenderedFields.holdsOnly(name, value, fields, signatures)
    }

    /// `index(of:from:)` over `fields` and their `signatures` (also while the fields are being set up).
    private static func index(of name: String, from start: Int, _ fields: [(name: String, value: String)],
                              _ signatures: [Int]) -> Int? {
        let wanted = signature(name)
        var i = start
        while i < signatures.count {
            if signatures[i] == wanted && HTTPHeaders.sameName(fields[i].name, name) { return i }
            i += 1
        }
        return nil
    }

    /// `holdsOnly(_:_:)` over `fields` and their `signatures` (also while the fields are being set up).
    private static func holdsOnly(_ name: String, _ value: String, _ fields: [(name: String, value: String)],
                                  _ signatures: [Int]) -> Bool {
        guard let first = index(of: name, from: 0, fields, signatures) else { return false }
        return fields[first].value == value && index(of: name, from: first + 1, fields, signatures) == nil
    }
}
