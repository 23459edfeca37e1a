import PosternIO

/// The header lines of a received request as bytes, in one allocation: every field's name and value one
/// after another from the front, and where each one starts and ends (a `Span`, 16 bytes) from the back.
/// `HTTPHeaders` reads a parsed request's fields from it and makes a `String` only for the fields a caller
/// reads.
///
/// Filled by one writer (the connection's request assembler) while no `HTTPHeaders` refers to it, then
/// only read: the writer reuses it for a later request only when it holds the sole reference
/// (`isKnownUniquelyReferenced`), so no reader ever sees it change. That is what lets `HTTPHeaders` be
/// `Sendable` while holding one (ManagedBuffer itself may not be declared `Sendable`).
package final class HeaderBlock: ManagedBuffer<HeaderBlock.Counts, UInt8> {
    /// How much of the room is used.
    package struct Counts {
        /// Bytes of names and values, from the front.
        var bytes: Int
        /// Spans, from the back.
        var spans: Int
        /// The room for both (at most `capacity`).
        var size: Int
    }

    /// Where one field lies in the bytes: the name is `nameStart..<nameEnd`, the value `valueStart..<valueEnd`.
    package struct Span {
        /// First byte of the name.
        var nameStart: Int32
        /// One past the name's last byte.
        var nameEnd: Int32
        /// First byte of the value (leading whitespace left out).
        var valueStart: Int32
        /// One past the value's last byte (trailing whitespace left out).
        var valueEnd: Int32

        /// A span from its four offsets.
        package init(nameStart: Int32, nameEnd: Int32, valueStart: Int32, valueEnd: Int32) {
            self.nameStart = nameStart
            self.nameEnd = nameEnd
            self.valueStart = valueStart
            self.valueEnd = valueEnd
        }
    }

    private static let spanSize = MemoryLayout<Span>.size

    /// An empty block with room for `capacity` bytes of fields and spans (a typical request head by default).
    package static func make(capacity: Int = 1024) -> HeaderBlock {
        // The room asked for, not `capacity` (malloc may give more; reading how much is a libc call).
        let buffer = HeaderBlock.create(minimumCapacity: capacity) { _ in Counts(bytes: 0, spans: 0, size: capacity) }
        // `create` called on a subclass makes an instance of that subclass (ManagedBuffer's documented contract).
        return unsafeDowncast(buffer, to: HeaderBlock.self)
    }

    /// The number of fields.
    package var count: Int { header.spans }

    /// Bytes of names and values so far.
    package var byteCount: Int { header.bytes }

    /// Forgets every field (keeping the room).
    package func reset() {
        header.bytes = 0
        header.spans = 0
    }

    /// Drops the bytes from `count` on (a field that is not kept).
    func truncate(to count: Int) {
        header.bytes = min(count, header.bytes)
    }

    /// Free bytes between the fields' bytes and their spans.
    private var room: Int { header.size - header.bytes - header.spans * HeaderBlock.spanSize }

    /// Appends `piece` to the bytes; false (nothing written) when there is no room: see `grown(adding:)`.
    package func append(_ piece: UnsafeRawBufferPointer) -> Bool {
        guard piece.count <= room else { return false }
        let at = header.bytes
        if let base = piece.baseAddress {
            withUnsafeMutablePointerToElements { (at + $0).update(from: base.assumingMemoryBound(to: UInt8.self), count: piece.count) }
        }
        header.bytes += piece.count
        return true
    }

    /// Adds a field's span; false (nothing written) when there is no room: see `grown(adding:)`.
    package func add(_ span: Span) -> Bool {
        guard HeaderBlock.spanSize <= room else { return false }
        let offset = header.size - (header.spans + 1) * HeaderBlock.spanSize
        withUnsafeMutablePointerToElements { UnsafeMutableRawPointer($0 + offset).storeBytes(of: span, as: Span.self) }
        header.spans += 1
        return true
    }

    /// A copy of this block with room for `more` bytes beyond what it holds (at least twice the room).
    func grown(adding more: Int) -> HeaderBlock {
        let used = header.bytes + header.spans * HeaderBlock.spanSize
        let bigger = HeaderBlock.make(capacity: max(header.size * 2, used + more + 256))
        withUnsafeMutablePointerToElements { old in
            bigger.withUnsafeMutablePointerToElements { new in
                new.update(from: old, count: header.bytes)
                let spanBytes = header.spans * HeaderBlock.spanSize
                (new + bigger.header.size - spanBytes).update(from: old + header.size - spanBytes, count: spanBytes)
            }
        }
        bigger.header.bytes = header.bytes
        bigger.header.spans = header.spans
        return bigger
    }

    /// The span of field `i`.
    @inline(__always)
    package func span(_ i: Int) -> Span {
        let offset = header.size - (i + 1) * HeaderBlock.spanSize
        return withUnsafeMutablePointerToElements { UnsafeRawPointer($0 + offset).loadUnaligned(as: Span.self) }
    }

    /// Calls `body` with the bytes of names and values.
    @inline(__always)
    func withBytes<R>(_ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        try withUnsafeMutablePointerToElements { try body(UnsafeBufferPointer(start: $0, count: header.bytes)) }
    }

    /// The index of the first field at or after `from` named `name` (ASCII case-insensitively), or nil.
    package func index(of name: String, from: Int = 0) -> Int? {
        // Lengths first: most fields differ in length from the name asked for, decided without reading a byte.
        let length = name.utf8.count
        var i = from
        while i < header.spans {
            let span = span(i)
            if Int(span.nameEnd) - Int(span.nameStart) == length && matches(name, at: Int(span.nameStart)) { return i }
            i += 1
        }
        return nil
    }

    /// Whether the bytes from `start` spell `name` (as many bytes as it has), ASCII case-insensitively.
    private func matches(_ name: String, at start: Int) -> Bool {
        let found: Bool? = name.utf8.withContiguousStorageIfAvailable { key in
            withBytes { HeaderBlock.sameName(UnsafeBufferPointer(rebasing: $0[start..<start + key.count]), key) }
        }
        if let found { return found }
        // A name without contiguous UTF-8 (a bridged string): the same comparison through a native copy.
        return matches(String(decoding: Array(name.utf8), as: UTF8.self), at: start)
    }

    /// ASCII case-insensitive comparison of two names of the same length: bytes that differ may only be the same
    /// letter in the other case. Eight bytes a step from eight bytes on, the last step ending at the last byte (it
    /// overlaps the one before when the length is not a multiple of eight).
    @inline(__always)
    static func sameName(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Bool {
        let count = a.count
        guard count >= 8, let x = a.baseAddress, let y = b.baseAddress else {
            for k in 0..<count {
                let x = a[k], y = b[k]
                if x == y { continue }
                let lower = x | 0x20
                if lower != y | 0x20 || lower < UInt8(ascii: "a") || lower > UInt8(ascii: "z") { return false }
            }
            return true
        }
        var k = 0
        while count &- k > 8 {
            guard sameWord(load(x + k), load(y + k)) else { return false }
            k &+= 8
        }
        return sameWord(load(x + (count &- 8)), load(y + (count &- 8)))
    }

    /// Whether two words of name bytes are the same, ignoring the case of letters: they may differ only in bit 5
    /// (0x20) of a lane, and only where the lane is a letter.
    @inline(__always)
    private static func sameWord(_ x: UInt64, _ y: UInt64) -> Bool {
        let difference = x ^ y
        if difference == 0 { return true }
        let ones: UInt64 = 0x0101_0101_0101_0101, highs: UInt64 = 0x8080_8080_8080_8080
        guard difference & ~(ones &* 0x20) == 0 else { return false }
        // The high bit of each lane of `x` that is a letter: with bit 5 set (and the high bit cleared, so that no
        // lane carries), 0x61–0x7A; a byte of 0x80 or above is none.
        let folded = x & ~highs | ones &* 0x20
        let letter = (folded &+ ones &* (0x80 - 0x61)) & ~(folded &+ ones &* (0x7F - 0x7A)) & ~x & highs
        // Bit 5 of each differing lane, moved to the lane's high bit.
        return (difference &<< 2) & ~letter == 0
    }

    /// The eight bytes at `p` as a little-endian word.
    @inline(__always)
    private static func load(_ p: UnsafePointer<UInt8>) -> UInt64 {
        UInt64(littleEndian: UnsafeRawPointer(p).loadUnaligned(as: UInt64.self))
    }

    /// The name of field `i`.
    package func name(_ i: Int) -> String {
        let span = span(i)
        return string(Int(span.nameStart), Int(span.nameEnd))
    }

    /// The value of field `i`.
    package func value(_ i: Int) -> String {
        let span = span(i)
        return string(Int(span.valueStart), Int(span.valueEnd))
    }

    /// Calls `body` with the value bytes of field `i`.
    func withValueBytes<R>(_ i: Int, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        let span = span(i)
        return try withBytes { try body(UnsafeBufferPointer(rebasing: $0[Int(span.valueStart)..<Int(span.valueEnd)])) }
    }

    /// Every field as strings, in order.
    package func fields() -> [(name: String, value: String)] {
        var out: [(name: String, value: String)] = []
        out.reserveCapacity(header.spans)
        for i in 0..<header.spans { out.append((name(i), value(i))) }
        return out
    }

    /// The text of bytes `start..<end` (invalid UTF-8 repaired, as everywhere a request's bytes become text).
    package func string(_ start: Int, _ end: Int) -> String {
        withBytes { String(decoding: UnsafeBufferPointer(rebasing: $0[start..<end]), as: UTF8.self) }
    }
}
