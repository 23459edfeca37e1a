/// The header lines of a received request as bytes: every field's name and value one after another, and
/// where each one starts and ends. `HTTPHeaders` reads a parsed request's fields from it and makes a
/// `String` only for the fields a caller reads.
///
/// Filled by one writer (the connection's request assembler) while no `HTTPHeaders` refers to it, then
/// only read: the writer reuses it for the next request only when it holds the sole reference
/// (`isKnownUniquelyReferenced`), so no reader ever sees it change. That is what makes it `Sendable`.
final class HeaderBlock: @unchecked Sendable {
    /// Where one field lies in `bytes`: the name is `nameStart..<nameEnd`, the value `valueStart..<valueEnd`.
    struct Span {
        /// First byte of the name.
        var nameStart: Int32
        /// One past the name's last byte.
        var nameEnd: Int32
        /// First byte of the value (leading whitespace left out).
        var valueStart: Int32
        /// One past the value's last byte (trailing whitespace left out).
        var valueEnd: Int32
    }

    /// Names and values of every field, as received.
    @exclusivity(unchecked) var bytes: [UInt8] = []
    /// The fields in order.
    @exclusivity(unchecked) var spans: [Span] = []

    /// An empty block with room for a typical request head.
    init() {
        bytes.reserveCapacity(512)
        spans.reserveCapacity(16)
    }

    /// Forgets every field (keeping the room, unless a large head made it big).
    func reset() {
        if bytes.capacity > 16 * 1024 {
            bytes = []
            bytes.reserveCapacity(512)
        } else {
            bytes.removeAll(keepingCapacity: true)
        }
        spans.removeAll(keepingCapacity: true)
    }

    /// The number of fields.
    var count: Int { spans.count }

    /// The index of the first field at or after `from` named `name` (ASCII case-insensitively), or nil.
    func index(of name: String, from: Int = 0) -> Int? {
        guard from < spans.count else { return nil }
        let found: Int?? = name.utf8.withContiguousStorageIfAvailable { key in
            bytes.withUnsafeBufferPointer { all in
                spans.withUnsafeBufferPointer { spans in
                    for i in from..<spans.count {
                        let span = spans[i]
                        let start = Int(span.nameStart)
                        guard Int(span.nameEnd) - start == key.count else { continue }
                        if HeaderBlock.sameName(UnsafeBufferPointer(rebasing: all[start..<start + key.count]), key) { return i }
                    }
                    return nil
                }
            }
        }
        if let found { return found }
        // A name without contiguous UTF-8 (a bridged string): the same comparison through a copy.
        return index(of: String(decoding: Array(name.utf8), as: UTF8.self), from: from)
    }

    /// ASCII case-insensitive comparison of two names of the same length.
    @inline(__always)
    static func sameName(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        for k in 0..<a.count {
            let x = a[k], y = b[k]
            if x == y { continue }
            let lower = x | 0x20
            if lower != y | 0x20 || lower < UInt8(ascii: "a") || lower > UInt8(ascii: "z") { return false }
        }
        return true
    }

    /// The name of field `i`.
    func name(_ i: Int) -> String {
        let span = spans[i]
        return string(Int(span.nameStart), Int(span.nameEnd))
    }

    /// The value of field `i`.
    func value(_ i: Int) -> String {
        let span = spans[i]
        return string(Int(span.valueStart), Int(span.valueEnd))
    }

    /// Calls `body` with the value bytes of field `i`.
    func withValueBytes<R>(_ i: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        let span = spans[i]
        return try bytes.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[Int(span.valueStart)..<Int(span.valueEnd)])) }
    }

    /// Every field as strings, in order.
    func fields() -> [(name: String, value: String)] {
        var out: [(name: String, value: String)] = []
        out.reserveCapacity(spans.count)
        for i in 0..<spans.count { out.append((name(i), value(i))) }
        return out
    }

    /// The text of `bytes[start..<end]` (invalid UTF-8 repaired, as everywhere a request's bytes become text).
    private func string(_ start: Int, _ end: Int) -> String {
        bytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[start..<end]), as: UTF8.self) }
    }
}
