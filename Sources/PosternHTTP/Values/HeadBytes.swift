import FoundationEssentials
import PosternIO

/// Precomputed bytes of the fixed parts of HTTP/1.1 heads, and cheap appends of header text.
enum HeadBytes {
    /// `" HTTP/1.1\r\nHost: "`: what follows the request target in an upstream request.
    static let versionAndHost: [UInt8] = Array(" HTTP/1.1\r\nHost: ".utf8)
    /// `"\r\n"`.
    static let crlf: [UInt8] = [13, 10]
    /// `"Content-Length: "`.
    static let contentLength: [UInt8] = Array("Content-Length: ".utf8)
    /// `"Connection: close\r\n"`.
    static let connectionClose: [UInt8] = Array("Connection: close\r\n".utf8)
    /// `"Connection: keep-alive\r\n"`.
    static let connectionKeepAlive: [UInt8] = Array("Connection: keep-alive\r\n".utf8)

    /// `"HTTP/1.1 <status> <reason>\r\n"` for every status from 100 to 599 (index `status - 100`).
    private static let statusLines: [[UInt8]] = (100..<600).map { status in
        Array("HTTP/1.1 \(status) \(HTTPResponse.reason(status))\r\n".utf8)
    }

    /// The status line of `status`, precomputed for 100 to 599.
    static func statusLine(_ status: Int) -> [UInt8] {
        if status >= 100 && status < 600 { return statusLines[status - 100] }
        return Array("HTTP/1.1 \(status) \(HTTPResponse.reason(status))\r\n".utf8)
    }

    /// Appends the UTF-8 bytes of `text` with one copy (native strings are contiguous; others are bridged).
    @inline(__always)
    static func append(_ text: String, to out: inout [UInt8]) {
        let copied: Void? = text.utf8.withContiguousStorageIfAvailable { out.append(contentsOf: $0) }
        if copied == nil { out.append(contentsOf: text.utf8) }
    }

    /// Whether a `Connection` value is `close`, in any case (only ASCII letters lower-case to those of `close`).
    static func isClose(_ value: String) -> Bool {
        let close: StaticString = "close"
        guard value.utf8.count == 5 else { return false }
        var i = 0
        for byte in value.utf8 {
            guard byte | 0x20 == close.utf8Start[i] else { return false }
            i += 1
        }
        return true
    }

    /// Appends `value` in decimal (no intermediate String).
    static func appendDecimal(_ value: Int, to out: inout [UInt8]) {
        if value < 0 {
            out.append(0x2D)
            out.append(contentsOf: String(value.magnitude).utf8)
            return
        }
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        var rest = value
        withUnsafeMutableBytes(of: &digits) { buffer in
            repeat {
                count += 1
                buffer[20 - count] = UInt8(0x30 + rest % 10)
                rest /= 10
            } while rest > 0
            out.append(contentsOf: buffer[(20 - count)...])
        }
    }
}

/// The bytes of an answer's head, in one buffer reused from answer to answer: each append is one bounds
/// check and one copy (the buffer grows, rarely, when a head is larger than any before). Owned by one
/// connection, which frees it (`deallocate()`).
struct HeadBuffer {
    /// The first byte.
    private(set) var base: UnsafeMutableRawPointer
    /// Bytes the buffer can hold.
    private(set) var capacity: Int
    /// Bytes written.
    private(set) var count = 0

    /// An empty buffer of `capacity` bytes.
    init(capacity: Int) {
        self.capacity = capacity
        base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
    }

    /// Frees the bytes (the buffer is not used afterwards).
    func deallocate() {
        base.deallocate()
    }

    /// Empties the buffer, with room for at least `bytes` (back to `small` bytes when it had grown past
    /// `large` and the next head does not need that).
    mutating func clear(reserving bytes: Int, small: Int = 1024, large: Int = 64 * 1024) {
        count = 0
        if capacity < bytes || (capacity > large && bytes <= small) {
            base.deallocate()
            capacity = max(bytes, small)
            base = UnsafeMutableRawPointer.allocate(byteCount: capacity, alignment: 16)
        }
    }

    /// Makes room for `more` bytes after the ones written.
    private mutating func grow(_ more: Int) {
        let bigger = UnsafeMutableRawPointer.allocate(byteCount: max(capacity * 2, count + more), alignment: 16)
        bigger.copyMemory(from: base, byteCount: count)
        base.deallocate()
        base = bigger
        capacity = max(capacity * 2, count + more)
    }

    /// Appends `bytes`.
    @inline(__always)
    mutating func append(_ bytes: UnsafeRawBufferPointer) {
        guard let from = bytes.baseAddress, bytes.count > 0 else { return }
        if count + bytes.count > capacity { grow(bytes.count) }
        (base + count).copyMemory(from: from, byteCount: bytes.count)
        count += bytes.count
    }

    /// Appends `bytes`.
    @inline(__always)
    mutating func append(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { append($0) }
    }

    /// Appends the UTF-8 bytes of `text` (native strings directly; others through a copy).
    @inline(__always)
    mutating func append(_ text: String) {
        let copied: Void? = text.utf8.withContiguousStorageIfAvailable { append(UnsafeRawBufferPointer($0)) }
        if copied == nil { append(Array(text.utf8)) }
    }

    /// Appends two bytes (`": "`, CRLF) with two stores.
    @inline(__always)
    mutating func append(_ first: UInt8, _ second: UInt8) {
        if count + 2 > capacity { grow(2) }
        (base + count).storeBytes(of: first, as: UInt8.self)
        (base + count + 1).storeBytes(of: second, as: UInt8.self)
        count += 2
    }

    /// Appends `name: value\r\n`.
    @inline(__always)
    mutating func appendField(_ name: String, _ value: String) {
        append(name)
        append(0x3A, 0x20)
        append(value)
        append(13, 10)
    }

    /// Appends `value` in decimal.
    mutating func appendDecimal(_ value: Int) {
        if value < 0 || value > 999_999_999_999 {
            var digits: [UInt8] = []
            HeadBytes.appendDecimal(value, to: &digits)
            append(digits)
            return
        }
        // Twelve digits at most (10^12 does not overflow): counted, then written from the last one back, in place.
        var digits = 1
        var power = 10
        while value >= power {
            digits += 1
            power &*= 10
        }
        if count + digits > capacity { grow(digits) }
        var at = base + count + digits
        var rest = UInt(value)
        repeat {
            at -= 1
            at.storeBytes(of: UInt8(truncatingIfNeeded: 0x30 &+ rest % 10), as: UInt8.self)
            rest /= 10
        } while rest > 0
        count += digits
    }

    /// The bytes written.
    var bytes: UnsafeRawBufferPointer { UnsafeRawBufferPointer(start: base, count: count) }
}
