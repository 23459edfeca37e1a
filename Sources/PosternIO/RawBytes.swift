import FoundationEssentials

/// A growable byte buffer in raw memory, emptied and refilled in place (its memory is kept): appending is a copy,
/// without an array's uniqueness and exclusivity checks (a class held in a constant, whose fields are scalars).
/// Owned by one object on one loop thread.
package final class RawBytes {
    private var base: UnsafeMutablePointer<UInt8>
    private var capacity: Int
    /// The bytes held (set to 0 to empty the buffer).
    package var count = 0

    /// An empty buffer with room for `capacity` bytes.
    package init(capacity: Int) {
        base = .allocate(capacity: max(1, capacity))
        self.capacity = max(1, capacity)
    }

    deinit { base.deallocate() }

    /// The bytes held (valid until the next append).
    package var bytes: UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(start: base, count: count) }

    /// Appends `length` bytes from `at`.
    package func append(_ at: UnsafeRawPointer, _ length: Int) {
        reserve(length)
        UnsafeMutableRawPointer(base + count).copyMemory(from: at, byteCount: length)
        count += length
    }

    /// Appends one byte.
    package func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count += 1
    }

    /// Appends two bytes (`": "`, CRLF).
    package func append(_ first: UInt8, _ second: UInt8) {
        reserve(2)
        base[count] = first
        base[count + 1] = second
        count += 2
    }

    /// Appends the bytes of `bytes`.
    package func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            if let start = raw.baseAddress { append(start, raw.count) }
        }
    }

    /// Appends the bytes of a literal.
    package func append(_ literal: StaticString) {
        append(literal.utf8Start, literal.utf8CodeUnitCount)
    }

    /// Appends the UTF-8 bytes of `text` (one copy: native strings are contiguous).
    package func append(_ text: String) {
        let copied: Void? = text.utf8.withContiguousStorageIfAvailable { utf8 in
            if let start = utf8.baseAddress { append(start, utf8.count) }
        }
        if copied == nil { for byte in text.utf8 { append(byte) } }
    }

    /// Makes room for `more` bytes after `count`: the check is inlined into each append, the rare growth is not.
    @inline(__always)
    private func reserve(_ more: Int) {
        if count + more > capacity { grow(more) }
    }

    /// Moves the bytes to a larger allocation with room for `more` after `count`.
    @inline(never)
    private func grow(_ more: Int) {
        let grown = max(capacity * 2, count + more)
        let larger = UnsafeMutablePointer<UInt8>.allocate(capacity: grown)
        larger.update(from: base, count: count)
        base.deallocate()
        base = larger
        capacity = grown
    }
}
