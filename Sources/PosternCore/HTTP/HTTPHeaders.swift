/// An ordered list of header fields with case-insensitive lookup.
public struct HTTPHeaders: Sendable, Equatable, Sequence, ExpressibleByDictionaryLiteral {
    /// The fields, in order.
    public private(set) var fields: [(name: String, value: String)] = []

    /// An empty header list.
    public init() {}

    /// An empty header list with room for `capacity` fields.
    public init(capacity: Int) {
        fields.reserveCapacity(capacity)
    }

    /// A header list from literal pairs.
    public init(dictionaryLiteral elements: (String, String)...) {
        for (name, value) in elements { add(name, value) }
    }

    /// The first value of `name`, compared case-insensitively.
    public subscript(name: String) -> String? {
        fields.first { HTTPHeaders.sameName($0.name, name) }?.value
    }

    /// Every value of `name` in order, compared case-insensitively (one per header line).
    public func values(_ name: String) -> [String] {
        fields.compactMap { HTTPHeaders.sameName($0.name, name) ? $0.value : nil }
    }

    /// ASCII case-insensitive comparison of header names, without allocating. Names of different UTF-8
    /// lengths differ (the usual case, decided without reading a byte).
    static func sameName(_ a: String, _ b: String) -> Bool {
        guard a.utf8.count == b.utf8.count else { return false }
        var i = a.utf8.makeIterator()
        var j = b.utf8.makeIterator()
        while true {
            switch (i.next(), j.next()) {
            case (nil, nil): return true
            case let (x?, y?):
                if x != y && (x | 0x20) != (y | 0x20) { return false }
                if x != y && !((x | 0x20) >= UInt8(ascii: "a") && (x | 0x20) <= UInt8(ascii: "z")) { return false }
            default: return false
            }
        }
    }

    /// Appends a field.
    public mutating func add(_ name: String, _ value: String) {
        fields.append((name, value))
    }

    /// Replaces every field called `name` with one field.
    public mutating func set(_ name: String, _ value: String) {
        remove(name)
        fields.append((name, value))
    }

    /// Removes every field called `name` (a list without one is left untouched: no copy of a shared list).
    public mutating func remove(_ name: String) {
        guard fields.contains(where: { HTTPHeaders.sameName($0.name, name) }) else { return }
        fields.removeAll { HTTPHeaders.sameName($0.name, name) }
    }

    /// Makes room for `more` fields beyond the current ones, so that adding them allocates at most once
    /// (here, and only when the list is shared or too small).
    public mutating func reserve(_ more: Int) {
        fields.reserveCapacity(fields.count + more)
    }

    /// Iterates the fields in order.
    public func makeIterator() -> IndexingIterator<[(name: String, value: String)]> {
        fields.makeIterator()
    }

    public static func == (lhs: HTTPHeaders, rhs: HTTPHeaders) -> Bool {
        lhs.fields.map { "\($0.name.lowercased()):\($0.value)" } == rhs.fields.map { "\($0.name.lowercased()):\($0.value)" }
    }
}
