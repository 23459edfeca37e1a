import FoundationEssentials
import PosternIO

/// Head fields a caller keeps as values and writes into the request head itself (the gateway's Directus calls:
/// request id, client address, token, trace), so that the pooled connection needs no header array, nor a value
/// string built per call, for them. Written after `Host`, before the request's other headers.
package protocol UpstreamHeadFields: Sendable {
    /// Appends the fields to `head`, as whole header lines.
    func write(to head: HeadWriter)
    /// The same fields as headers, in the order `write` puts them on the wire (for every other reader: in-process
    /// transports, test doubles).
    var headers: HTTPHeaders { get }
}

/// Where `UpstreamHeadFields` write their lines: the connection's output, while it serializes a request head.
package struct HeadWriter {
    /// The request bytes being serialized.
    package let output: RawBytes

    /// A writer appending to `output`.
    package init(_ output: RawBytes) {
        self.output = output
    }

    /// Appends `line` as it is: a whole field line, its CRLF included.
    package func line(_ line: StaticString) {
        output.append(line)
    }

    /// Appends a field whose `prefix` is its name, `": "` and any fixed start of its value, then `value` and CRLF;
    /// nothing when `value` holds CR, LF or NUL (it would split the request).
    package func field(_ prefix: StaticString, _ value: String) {
        let length = value.utf8.count
        // The value's bytes in place (a native string's own storage): checked, then copied.
        value.withCString { text in
            let bytes = UnsafeRawPointer(text).assumingMemoryBound(to: UInt8.self)
            guard !PlainBytes.holdsLineBreakOrNUL(bytes, length) else { return }
            output.append(prefix)
            output.append(bytes, length)
            output.append(13, 10)
        }
    }

    /// True when `text` holds no CR, LF or NUL (`PlainBytes.holdsLineBreakOrNUL`, over its bytes in place).
    static func safe(_ text: String) -> Bool {
        let length = text.utf8.count
        return text.withCString { !PlainBytes.holdsLineBreakOrNUL(UnsafeRawPointer($0).assumingMemoryBound(to: UInt8.self), length) }
    }
}
