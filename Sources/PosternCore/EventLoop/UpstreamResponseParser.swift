import CHTTPParser
import Foundation

/// Parses the answers read from one upstream connection, one after another, with Node's http-parser in
/// response mode: framing by `Content-Length`, `chunked` or the close of the connection, no body for 1xx, 204
/// and 304 (the client never sends `HEAD`).
///
/// Bytes are parsed where they were read: only the header fields named in `keptHeaders` become `String`s, and
/// the body is copied once, into one `Data` sized from `Content-Length` when the answer gives it.
/// Loop thread only (owned by one `UpstreamConnection`).
final class UpstreamResponseParser {
    /// What feeding bytes to the parser gave.
    enum Outcome: Equatable {
        /// The answer is not complete yet.
        case needMore
        /// The answer is complete; `leftover` bytes after it were not parsed (a well-behaved upstream sends none).
        case complete(leftover: Int)
        /// The bytes are not a valid HTTP answer (http-parser's error name).
        case invalid(String)
        /// The connection ended before the answer was complete.
        case truncated
    }

    /// The answer headers kept (nil: every one).
    private let keptHeaders: [StaticString]?
    /// http-parser's state; its `data` points back at this object.
    private let parser: UnsafeMutablePointer<http_parser>
    /// The status of the answer being parsed (valid once its headers are complete).
    private(set) var status = 0
    /// The kept headers of the answer being parsed.
    private(set) var headers = HTTPHeaders()
    /// The body of the answer being parsed.
    private(set) var body = Data()
    /// Whether the connection may carry another request after this answer (http-parser's verdict: HTTP/1.1
    /// without `Connection: close`, and a body not delimited by the close).
    private(set) var keepAlive = false
    private var messageComplete = false
    /// The header field being read (its name may arrive in several pieces), in buffers allocated once and
    /// grown when a field is longer: raw memory, so appending is a copy without an array's uniqueness and
    /// exclusivity checks.
    private let fieldName = RawBytes(capacity: 64)
    private let fieldValue = RawBytes(capacity: 64)
    private var inValue = false
    private var keepingValue = false
    /// The status line's code is not one of HTTP's (100–599): the answer is invalid.
    private var statusOutOfRange = false
    /// A field named exactly `Transfer-Encoding` was read in this answer.
    private var sawTransferEncoding = false
    /// Bytes of this answer were fed (the first feed decides between the fast path and http-parser).
    private var started = false
    /// This answer is read by the fast path (`fastHead`), not by http-parser.
    private(set) var fastPath = false
    /// Body bytes of a fast-path answer still to come.
    private var fastRemaining = 0
    /// The keep-alive verdict of a fast-path answer, given once it is complete (as http-parser does).
    private var fastKeepAlive = false

    /// A body above this size gets no capacity reserved up front from its `Content-Length` (it grows as it comes).
    private static let maxReservation = 8 << 20

    /// A parser that keeps the answer headers named in `keptHeaders` (every one when nil).
    init(keptHeaders: [StaticString]?) {
        self.keptHeaders = keptHeaders
        parser = .allocate(capacity: 1)
        http_parser_init(parser, HTTP_RESPONSE)
    }

    deinit { parser.deallocate() }

    /// Gets ready for the next answer (before each request is sent).
    func reset() {
        http_parser_init(parser, HTTP_RESPONSE)
        status = 0
        headers = HTTPHeaders()
        body = Data()
        keepAlive = false
        messageComplete = false
        fieldName.count = 0
        fieldValue.count = 0
        inValue = false
        keepingValue = false
        statusOutOfRange = false
        sawTransferEncoding = false
        started = false
        fastPath = false
        fastRemaining = 0
    }

    /// Parses `bytes`, the next ones read from the connection.
    func feed(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return .needMore }
        if fastPath { return fastBody(base.assumingMemoryBound(to: UInt8.self), bytes.count) }
        if !started {
            started = true
            if let outcome = fastHead(base.assumingMemoryBound(to: UInt8.self), bytes.count) { return outcome }
        }
        return run(base.assumingMemoryBound(to: CChar.self), bytes.count)
    }

    /// Tells the parser that the connection ended: completes an answer delimited by the close.
    func feedEndOfStream() -> Outcome {
        if messageComplete { return .complete(leftover: 0) }
        if fastPath { return .truncated }  // the body announced by Content-Length did not all come
        let outcome = run(nil, 0)
        return outcome == .needMore ? .truncated : outcome
    }

    private func run(_ data: UnsafePointer<CChar>?, _ count: Int) -> Outcome {
        parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        let parsed = http_parser_execute(parser, Self.settings, data, count)
        let error = http_errno(rawValue: parser.pointee.http_errno)
        if messageComplete {
            // Paused in on_message_complete: what follows belongs to no request.
            return .complete(leftover: count - parsed)
        }
        if error != HPE_OK {
            if statusOutOfRange { return .invalid("status code out of range") }
            if error == HPE_INVALID_EOF_STATE { return .truncated }
            return .invalid(String(cString: http_errno_name(error)))
        }
        if parser.pointee.upgrade != 0 { return .invalid("upgrade") }
        return .needMore
    }

    // MARK: Fast path

    /// Reads a plain answer whose head came whole in the first bytes, without http-parser: `HTTP/1.1`, a status
    /// from 200 to 599 other than 204 and 304, one `Content-Length`, and fields of token names and printable
    /// ASCII values. Anything else (chunked, close-delimited, interim answers, HTTP/1.0, a `Connection` other
    /// than `keep-alive` or `close`, `Transfer-Encoding`, `Upgrade`, empty or space-ended values, a head split
    /// over reads...) returns nil with nothing changed, and http-parser reads the same bytes: on what it
    /// accepts, the fast path gives the same status, kept fields, body and keep-alive verdict.
    private func fastHead(_ p: UnsafePointer<UInt8>, _ n: Int) -> Outcome? {
        // "HTTP/1.1 " + three digits + " ".
        guard n >= 13, p[0] == 0x48, p[1] == 0x54, p[2] == 0x54, p[3] == 0x50, p[4] == 0x2F, p[5] == 0x31,
              p[6] == 0x2E, p[7] == 0x31, p[8] == 0x20, p[12] == 0x20 else { return nil }
        let d0 = Int(p[9]) &- 0x30, d1 = Int(p[10]) &- 0x30, d2 = Int(p[11]) &- 0x30
        guard (0...9).contains(d0), (0...9).contains(d1), (0...9).contains(d2) else { return nil }
        let code = d0 * 100 + d1 * 10 + d2
        guard code >= 200, code <= 599, code != 204, code != 304 else { return nil }
        var i = 13
        while i < n, p[i] != 13 {
            guard p[i] >= 0x20, p[i] <= 0x7E else { return nil }
            i += 1
        }
        // A reason phrase is required here (http-parser takes an empty one too; it reads those).
        guard i > 13, i + 1 < n, p[i + 1] == 10 else { return nil }
        i += 2
        var contentLength = -1
        var close = false
        var kept = HTTPHeaders()
        while true {
            guard i + 1 < n, i < Self.maxFastHead else { return nil }
            if p[i] == 13 {
                guard p[i + 1] == 10 else { return nil }
                i += 2
                break
            }
            let nameStart = i
            while i < n, Self.isNameByte(p[i]) { i += 1 }
            guard i < n, p[i] == 0x3A, i > nameStart else { return nil }
            let name = UnsafeBufferPointer(start: p + nameStart, count: i - nameStart)
            i += 1
            while i < n, p[i] == 0x20 { i += 1 }
            let valueStart = i
            while i < n, p[i] != 13 {
                guard p[i] >= 0x20, p[i] <= 0x7E else { return nil }
                i += 1
            }
            guard i + 1 < n, p[i + 1] == 10, i > valueStart, p[i - 1] != 0x20 else { return nil }
            let value = UnsafeBufferPointer(start: p + valueStart, count: i - valueStart)
            i += 2
            switch name.count {
            case 14 where Self.sameName(name, "content-length"):
                guard contentLength < 0, value.count <= 18, value.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
                contentLength = value.reduce(0) { $0 * 10 + Int($1 - 0x30) }
            case 10 where Self.sameName(name, "connection"):
                if Self.sameName(value, "close") {
                    close = true
                } else if !Self.sameName(value, "keep-alive") {
                    return nil
                }
            case 7 where Self.sameName(name, "upgrade"), 16 where Self.sameName(name, "proxy-connection"):
                return nil
            case 17...:
                // http-parser reads any name beginning with Transfer-Encoding as one.
                if Self.sameName(UnsafeBufferPointer(rebasing: name[0..<17]), "transfer-encoding") { return nil }
            default:
                break
            }
            if keeps(name) {
                kept.add(String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self))
            }
        }
        guard contentLength >= 0 else { return nil }
        status = code
        headers = kept
        fastKeepAlive = !close
        fastRemaining = contentLength
        fastPath = true
        if contentLength > 0 && contentLength <= Self.maxReservation { body.reserveCapacity(contentLength) }
        return fastBody(p + i, n - i)
    }

    /// Takes the body bytes of a fast-path answer (those at `p`, then those of the later reads).
    private func fastBody(_ p: UnsafePointer<UInt8>, _ n: Int) -> Outcome {
        let take = min(n, fastRemaining)
        if take > 0 { body.append(p, count: take) }
        fastRemaining -= take
        guard fastRemaining == 0 else { return .needMore }
        keepAlive = fastKeepAlive
        messageComplete = true
        return .complete(leftover: n - take)
    }

    /// A head longer than this is left to http-parser (which refuses one above 80 KiB).
    private static let maxFastHead = 64 * 1024

    /// A byte the fast path takes in a field name (letters, digits, `-` and `_`: a subset of HTTP's tokens).
    private static func isNameByte(_ byte: UInt8) -> Bool {
        switch byte {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, 0x2D, 0x5F: return true
        default: return false
        }
    }

    // MARK: Callbacks

    /// The parser's owner, from its `data` pointer (set before every `http_parser_execute`; the owner outlives
    /// the call, so the unretained pointer is valid).
    private static func owner(_ parser: UnsafeMutablePointer<http_parser>?) -> UpstreamResponseParser {
        // http-parser passes the parser it runs, whose data was set just before.
        Unmanaged<UpstreamResponseParser>.fromOpaque(parser!.pointee.data).takeUnretainedValue()
    }

    /// The callbacks, shared by every parser (they find their parser through `data`): written once, then
    /// only read, from any loop thread.
    nonisolated(unsafe) private static let settings: UnsafePointer<http_parser_settings> = {
        let pointer = UnsafeMutablePointer<http_parser_settings>.allocate(capacity: 1)
        pointer.initialize(to: makeSettings())
        return UnsafePointer(pointer)
    }()

    private static func makeSettings() -> http_parser_settings {
        var settings = http_parser_settings()
        settings.on_header_field = { parser, at, length in
            let owner = UpstreamResponseParser.owner(parser)
            if owner.inValue { owner.endField() }
            if let at { owner.fieldName.append(at, length) }
            return 0
        }
        settings.on_header_value = { parser, at, length in
            let owner = UpstreamResponseParser.owner(parser)
            if !owner.inValue {
                owner.inValue = true
                owner.keepingValue = owner.keeps(owner.fieldName.bytes)
                // http-parser 2.9 marks the answer as using Transfer-Encoding as soon as a field's name *begins*
                // with it (`Transfer-Encoding-X`), and would then read a 204 until the close or refuse a
                // Content-Length: only the exact name counts (the whole name is known at its first value piece;
                // http-parser itself also takes `Transfer-Encoding :`, and so does this check).
                if parser!.pointee.uses_transfer_encoding != 0 && !owner.sawTransferEncoding {
                    var name = owner.fieldName.bytes[...]
                    while name.last == 0x20 || name.last == 0x09 { name = name.dropLast() }
                    if UpstreamResponseParser.sameName(UnsafeBufferPointer(rebasing: name), "transfer-encoding") {
                        owner.sawTransferEncoding = true
                    } else {
                        parser!.pointee.uses_transfer_encoding = 0
                    }
                }
            }
            if owner.keepingValue, let at {
                owner.fieldValue.append(at, length)
            }
            return 0
        }
        settings.on_headers_complete = { parser in
            let owner = UpstreamResponseParser.owner(parser)
            if owner.inValue { owner.endField() }
            // Non-nil: http-parser runs callbacks with the parser it runs.
            let state = parser!.pointee
            owner.status = Int(state.status_code)
            // http-parser takes any three digits (even `000`, or fewer: `HTTP/1.1 30 x`): only HTTP's codes are answers.
            guard (100...599).contains(owner.status) else {
                owner.statusOutOfRange = true
                return -1
            }
            // 1xx, 204 and 304 answers have no body whatever their fields say (RFC 9112 §6.3); http-parser would
            // read one by their Content-Length. 1 tells it to skip the body.
            if owner.status < 200 || owner.status == 204 || owner.status == 304 { return 1 }
            if state.flags & UInt32(F_CONTENTLENGTH.rawValue) != 0, state.content_length > 0,
               state.content_length <= UInt64(UpstreamResponseParser.maxReservation) {
                owner.body.reserveCapacity(Int(state.content_length))
            }
            return 0
        }
        settings.on_body = { parser, at, length in
            let owner = UpstreamResponseParser.owner(parser)
            if let at { owner.body.append(UnsafeRawPointer(at).assumingMemoryBound(to: UInt8.self), count: length) }
            return 0
        }
        settings.on_message_complete = { parser in
            let owner = UpstreamResponseParser.owner(parser)
            if (100..<200).contains(owner.status) {
                // An interim answer (100 Continue, 103 Early Hints): the final one follows.
                owner.headers = HTTPHeaders()
                owner.status = 0
                owner.sawTransferEncoding = false
                return 0
            }
            owner.keepAlive = http_should_keep_alive(parser) != 0
            owner.messageComplete = true
            // Stop here: bytes after the answer are not parsed as another one.
            http_parser_pause(parser, 1)
            return 0
        }
        return settings
    }

    /// Ends the header field just read: kept, or forgotten without building a `String`.
    private func endField() {
        if keepingValue {
            headers.add(String(decoding: fieldName.bytes, as: UTF8.self), String(decoding: fieldValue.bytes, as: UTF8.self))
        }
        fieldName.count = 0
        fieldValue.count = 0
        inValue = false
        keepingValue = false
    }

    /// Whether the field called `name` is kept (ASCII case-insensitive).
    private func keeps(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let keptHeaders else { return true }
        for kept in keptHeaders where Self.sameName(name, kept) { return true }
        return false
    }

    /// Whether `name` spells `other` (ASCII case-insensitive).
    private static func sameName(_ name: UnsafeBufferPointer<UInt8>, _ other: StaticString) -> Bool {
        guard other.utf8CodeUnitCount == name.count else { return false }
        for index in 0..<name.count where lower(other.utf8Start[index]) != lower(name[index]) { return false }
        return true
    }

    private static func lower(_ byte: UInt8) -> UInt8 {
        byte >= 65 && byte <= 90 ? byte | 0x20 : byte
    }
}
