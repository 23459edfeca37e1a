import FoundationEssentials
import Glibc
import PosternHTTP

/// A growing byte buffer on `malloc`ed memory that becomes an answer's body without a copy.
struct TranscoderOutput {
    /// The buffer (`malloc`/`realloc`; freed by `HeapBytes` or by `discard()`).
    private(set) var base: UnsafeMutablePointer<UInt8>
    /// Bytes written.
    private(set) var count = 0
    /// Bytes allocated.
    private var capacity: Int

    /// An empty buffer of `capacity` bytes.
    init(capacity: Int) {
        let size = max(capacity, 64)
        guard let memory = malloc(size) else { fatalError("out of memory (\(size) bytes)") }
        base = memory.assumingMemoryBound(to: UInt8.self)
        self.capacity = size
    }

    /// Makes room for `n` more bytes.
    @inline(__always)
    mutating func reserve(_ n: Int) {
        if count &+ n > capacity { grow(n) }
    }

    /// Reallocates to at least twice the size, or what `n` more bytes need.
    @inline(never)
    private mutating func grow(_ n: Int) {
        let size = max(capacity * 2, count + n)
        guard let memory = realloc(base, size) else { fatalError("out of memory (\(size) bytes)") }
        base = memory.assumingMemoryBound(to: UInt8.self)
        capacity = size
    }

    /// Forgets what was written (the memory is kept).
    mutating func rewind() {
        count = 0
    }

    /// Appends one byte.
    @inline(__always)
    mutating func append(_ byte: UInt8) {
        reserve(1)
        base[count] = byte
        count &+= 1
    }

    /// Appends one byte; the caller has reserved room for it.
    @inline(__always)
    mutating func appendReserved(_ byte: UInt8) {
        base[count] = byte
        count &+= 1
    }

    /// Appends `n` bytes from `source`.
    @inline(__always)
    mutating func append(_ source: UnsafePointer<UInt8>, _ n: Int) {
        reserve(n)
        Self.copy(source, to: base + count, n)
        count &+= n
    }

    /// Appends `n` bytes from `source`, which has at least `n + 15` readable bytes, sixteen at a time:
    /// one block store for a key or a short value, no call and no branch on the exact length. Up to
    /// fifteen bytes past the `n` are written too, inside the reserved room; what is appended next
    /// overwrites them, and `finish()` never includes them.
    @inline(__always)
    mutating func appendBlocks(_ source: UnsafePointer<UInt8>, _ n: Int) {
        reserve(n &+ 16)
        count = storeBlocks(source, n, at: count)
    }

    /// Copies `n` bytes from `source`, which has at least `n + 15` readable bytes, to offset `at`
    /// sixteen at a time (as `appendBlocks`), inside room reserved already; returns `at + n`. With
    /// `store(_:at:)` and `commit(_:)`, a writer that reserved once keeps its offset in a register.
    @inline(__always)
    func storeBlocks(_ source: UnsafePointer<UInt8>, _ n: Int, at: Int) -> Int {
        let from = UnsafeRawPointer(source)
        let to = UnsafeMutableRawPointer(base + at)
        var k = 0
        repeat {
            to.storeBytes(of: from.loadUnaligned(fromByteOffset: k, as: SIMD16<UInt8>.self), toByteOffset: k,
                          as: SIMD16<UInt8>.self)
            k &+= 16
        } while k < n
        return at &+ n
    }

    /// Copies the sixteen bytes at `source` to `target` (both unaligned).
    @inline(__always)
    static func copyBlock(_ source: UnsafePointer<UInt8>, to target: UnsafeMutablePointer<UInt8>) {
        UnsafeMutableRawPointer(target).storeBytes(of: UnsafeRawPointer(source).loadUnaligned(as: SIMD16<UInt8>.self),
                                                   as: SIMD16<UInt8>.self)
    }

    /// Copies `n` bytes from `source` to offset `at` exactly, inside room reserved already; returns
    /// `at + n`.
    @inline(__always)
    func store(_ source: UnsafePointer<UInt8>, _ n: Int, at: Int) -> Int {
        Self.copy(source, to: base + at, n)
        return at &+ n
    }

    /// Stores one byte at offset `at`, inside room reserved already; returns `at + 1`.
    @inline(__always)
    func store(_ byte: UInt8, at: Int) -> Int {
        base[at] = byte
        return at &+ 1
    }

    /// Takes the bytes stored up to offset `count` (inside the reserved room) as written.
    @inline(__always)
    mutating func commit(_ count: Int) {
        self.count = count
    }

    /// Copies `n` bytes: short runs (keys, ids, short values) as a few overlapping words inline, which
    /// reads and writes only the `n` bytes themselves; longer ones with `memcpy`.
    @inline(__always)
    static func copy(_ source: UnsafePointer<UInt8>, to target: UnsafeMutablePointer<UInt8>, _ n: Int) {
        let from = UnsafeRawPointer(source)
        let to = UnsafeMutableRawPointer(target)
        if n >= 8 {
            guard n <= 32 else {
                to.copyMemory(from: from, byteCount: n)
                return
            }
            var i = 0
            while i &+ 8 < n {
                to.storeBytes(of: from.loadUnaligned(fromByteOffset: i, as: UInt64.self), toByteOffset: i, as: UInt64.self)
                i &+= 8
            }
            to.storeBytes(of: from.loadUnaligned(fromByteOffset: n &- 8, as: UInt64.self), toByteOffset: n &- 8, as: UInt64.self)
        } else if n >= 4 {
            let head = from.loadUnaligned(as: UInt32.self)
            let tail = from.loadUnaligned(fromByteOffset: n &- 4, as: UInt32.self)
            to.storeBytes(of: head, as: UInt32.self)
            to.storeBytes(of: tail, toByteOffset: n &- 4, as: UInt32.self)
        } else {
            var i = 0
            while i < n {
                target[i] = source[i]
                i &+= 1
            }
        }
    }

    /// Appends `bytes`.
    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBufferPointer { buffer in
            if let source = buffer.baseAddress { append(source, buffer.count) }
        }
    }

    /// Appends `value` in decimal.
    mutating func appendDecimal(_ value: Int64) {
        reserve(21)
        if value < 0 { appendReserved(UInt8(ascii: "-")) }
        var magnitude = value.magnitude
        var length = 1
        var rest = magnitude
        while rest >= 10 { rest /= 10; length += 1 }
        var i = count + length
        repeat {
            i -= 1
            base[i] = UInt8(truncatingIfNeeded: magnitude % 10) &+ 0x30
            magnitude /= 10
        } while magnitude > 0
        count += length
    }

    /// The bytes as `HeapBytes`, which take the buffer over.
    func finish() -> HTTPBody {
        .heap(HeapBytes(taking: base, count: count))
    }

    /// Frees the buffer (after a failed pass).
    func discard() {
        free(base)
    }
}
