import Foundation

/// Precomputed bytes of the fixed parts of HTTP/1.1 heads, and cheap appends of header text.
enum HeadBytes {
    /// `" HTTP/1.1\r\nHost: "`: what follows the request target in an upstream request.
    static let versionAndHost: [UInt8] = Array(" HTTP/1.1\r\nHost: ".utf8)
    /// `"\r\n"`.
    static let crlf: [UInt8] = [13, 10]
    /// `": "`.
    static let colonSpace: [UInt8] = [0x3A, 0x20]
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

    /// Appends the status line of `status` to `out`, precomputed for 100 to 599.
    static func appendStatusLine(_ status: Int, to out: inout [UInt8]) {
        if status >= 100 && status < 600 {
            out.append(contentsOf: statusLines[status - 100])
        } else {
            out.append(contentsOf: "HTTP/1.1 \(status) \(HTTPResponse.reason(status))\r\n".utf8)
        }
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
