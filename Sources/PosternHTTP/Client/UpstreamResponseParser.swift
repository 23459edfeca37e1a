import CLLHTTP
import FoundationEssentials
import Glibc
import PosternIO

/// Parses the answers read from one upstream connection, one after another, with llhttp (Node's HTTP/1.1
/// parser) in response mode: framing by `Content-Length`, `chunked` or the close of the connection, no body for
/// 1xx, 204 and 304 (the client never sends `HEAD`).
///
/// An answer whose first read holds its whole head in the common shape (`PlainAnswerHead`: HTTP/1.1, a final
/// status, one `Content-Length`, plain fields) is read without llhttp, its body counted off that length; any
/// other answer goes to llhttp from its first byte, which judges everything unusual.
///
/// Bytes are parsed where they were read: only the header fields named in `keptHeaders` become `String`s, and
/// the body is copied once, into raw memory sized from `Content-Length` when the answer gives it, which becomes
/// the answer's `Data` without a copy.
///
/// Every answer is bounded: its head (status lines and header fields, interim answers included) by
/// `maxHeadBytes`, its body as sent (chunk framing and trailers included) by `maxBodyBytes`. Past either, or
/// with a `Content-Length` above `maxBodyBytes`, the answer is invalid at once; nothing beyond the ceiling is
/// kept (a header name or value is only ever as long as the head ceiling allows).
/// Loop thread only (owned by one `UpstreamConnection`).
final class UpstreamResponseParser {
    /// What feeding bytes to the parser gave.
    package enum Outcome: Equatable {
        /// The answer is not complete yet.
        case needMore
        /// The answer is complete; `leftover` bytes after it were not parsed (a well-behaved upstream sends none).
        case complete(leftover: Int)
        /// The bytes are not a valid HTTP answer (llhttp's error name, or the ceiling it passed).
        case invalid(String)
        /// The connection ended before the answer was complete.
        case truncated
    }

    /// The answer headers kept (nil: every one).
    private let keptHeaders: [StaticString]?
    /// Bit `k` (k < 63): a kept header's name is `k` bytes long; bit 63: one is 63 bytes or longer (every bit when
    /// every header is kept). A name whose length has no bit is not kept, without a comparison.
    private let keptLengths: UInt64
    /// The largest answer body, as sent (`directus.max_response_bytes`).
    let maxBodyBytes: Int
    /// The largest answer head: status line and header fields, interim answers' included (64 KiB).
    static let headCeiling = 64 * 1024
    /// The head ceiling this parser applies (`headCeiling`; smaller in the fuzz target).
    let maxHeadBytes: Int
    /// Whether answers with a `PlainAnswerHead` are read without llhttp (false: llhttp reads every answer, the
    /// reference the differential tests compare with).
    private let readsPlainHeads: Bool
    /// Bytes of the answer's head(s) parsed so far.
    private var headBytes = 0
    /// Bytes of the answer's body parsed so far, as sent (chunk framing included).
    private var bodyBytes = 0
    /// The final answer's head is complete: the bytes that follow are its body.
    private var inBody = false
    /// Set by `on_headers_complete` when it paused the parser at the end of a final answer's head.
    private var pausedAtBody = false
    /// The ceiling the answer passed, when a callback refused it.
    private var refusal: String?
    /// llhttp's state (it points at the shared callbacks); its `data` points back at this object.
    private let parser: UnsafeMutablePointer<llhttp_t>
    /// The status of the answer being parsed (valid once its headers are complete).
    private(set) var status = 0
    /// The kept headers of the answer being parsed.
    private(set) var headers = HTTPHeaders()
    /// The body of the answer, once it is complete (empty before).
    private(set) var body = HTTPBody.empty
    /// The body's bytes as they arrive (handed to `body` when the answer is complete).
    private var arriving = BodyBuffer()
    /// Whether the connection may carry another request after this answer (llhttp's verdict: HTTP/1.1
    /// without `Connection: close`, and a body not delimited by the close).
    private(set) var keepAlive = false
    private var messageComplete = false
    /// The header field being read (its name may arrive in several pieces), in buffers allocated once and
    /// grown when a field is longer: raw memory, so appending is a copy without an array's uniqueness and
    /// exclusivity checks.
    private let fieldName = RawBytes(capacity: 64)
    private let fieldValue = RawBytes(capacity: 64)
    /// The field being read is kept (decided when its name is complete).
    private var keepingValue = false
    /// The status line's code is not one of HTTP's (100–599): the answer is invalid.
    private var statusOutOfRange = false
    /// Nothing of the answer was fed yet: its first read may hold a `PlainAnswerHead`.
    private var atAnswerStart: Bool
    /// The body still to come and the keep-alive verdict of an answer whose head was a `PlainAnswerHead`
    /// (llhttp reads nothing of it); nil while llhttp reads the answer, or none has begun.
    private var plainBody: (left: Int, keepAlive: Bool)?
    /// llhttp read something since its last reset (else its state is still the initial one, and `reset` skips it).
    private var llhttpRead = false

    /// A body above this size gets no capacity reserved up front from its `Content-Length` (it grows as it comes).
    private static let maxReservation = 8 << 20

    /// A parser that keeps the answer headers named in `keptHeaders` (every one when nil) and refuses a body
    /// over `maxBodyBytes`; it reads plain heads itself unless `readsPlainHeads` is false.
    init(keptHeaders: [StaticString]?, maxBodyBytes: Int = UpstreamHTTPClient.defaultMaxResponseBytes,
         maxHeadBytes: Int = UpstreamResponseParser.headCeiling, readsPlainHeads: Bool = true) {
        self.keptHeaders = keptHeaders
        keptLengths = keptHeaders?.reduce(0) { $0 | 1 << UInt64(min($1.utf8CodeUnitCount, 63)) } ?? .max
        self.maxBodyBytes = maxBodyBytes
        self.maxHeadBytes = maxHeadBytes
        self.readsPlainHeads = readsPlainHeads
        atAnswerStart = readsPlainHeads
        parser = .allocate(capacity: 1)
        llhttp_init(parser, HTTP_RESPONSE, Self.settings)
    }

    deinit {
        parser.deallocate()
        arriving.discard()
    }

    /// Bytes the parser holds for the answer being parsed: its body so far and the header field being read
    /// (bounded by `maxBodyBytes` and `maxHeadBytes`; the fuzz target checks it).
    var heldBytes: Int { arriving.count + body.count + fieldName.count + fieldValue.count }

    /// Gets ready for the next answer (before each request is sent).
    func reset() {
        if llhttpRead {
            llhttp_reset(parser)
            llhttpRead = false
        }
        status = 0
        headers = HTTPHeaders()
        body = .empty
        arriving.discard()
        keepAlive = false
        messageComplete = false
        fieldName.count = 0
        fieldValue.count = 0
        keepingValue = false
        statusOutOfRange = false
        headBytes = 0
        bodyBytes = 0
        inBody = false
        pausedAtBody = false
        refusal = nil
        atAnswerStart = readsPlainHeads
        plainBody = nil
    }

    /// The complete answer's kept headers and body, moved out (no copy, no reference counted twice); `reset()`
    /// follows before the next answer.
    func takeHeadersAndBody() -> (HTTPHeaders, HTTPBody) {
        var taken = (HTTPHeaders(), HTTPBody.empty)
        swap(&taken.0, &headers)
        swap(&taken.1, &body)
        return taken
    }

    /// Parses `bytes`, the next ones read from the connection. While the head is incomplete, no more is parsed
    /// than its ceiling leaves; the parser pauses where the head ends, so that the body's bytes are counted apart.
    func feed(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        guard let base = bytes.baseAddress, !bytes.isEmpty else { return .needMore }
        if plainBody != nil { return feedPlainBody(bytes) }
        if atAnswerStart {
            atAnswerStart = false
            if let outcome = feedPlainHead(bytes) { return outcome }
        }
        parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        llhttpRead = true
        let end = base.assumingMemoryBound(to: CChar.self) + bytes.count
        var at = base.assumingMemoryBound(to: CChar.self)
        while at < end {
            let room = inBody ? end - at : min(end - at, maxHeadBytes - headBytes)
            guard room > 0 else { return .invalid("answer head over \(maxHeadBytes) bytes") }
            let error = llhttp_execute(parser, at, room)
            // Where a pause stopped the parser (the bytes before it are parsed).
            let parsed = error == HPE_PAUSED ? llhttp_get_error_pos(parser).map { $0 - at } ?? room : room
            if messageComplete {
                // The body's last bytes count as the others (so that where the reads were cut changes nothing).
                if inBody && bodyBytes + parsed > maxBodyBytes { return .invalid("answer body over \(maxBodyBytes) bytes") }
                // Paused in on_message_complete, at the answer's end: what follows belongs to no request.
                return .complete(leftover: end - at - parsed)
            }
            if pausedAtBody {
                // The final answer's head ends here: the rest is its body.
                pausedAtBody = false
                inBody = true
                headBytes += parsed
                llhttp_resume(parser)
                if at + parsed == end {
                    // No byte left: let llhttp take its decisions on the head now (how the body is framed), as it
                    // does when bytes follow, so that the end of the stream finds it ready (an empty body that
                    // runs to the close is complete there).
                    let error = llhttp_execute(parser, end, 0)
                    if messageComplete { return .complete(leftover: 0) }
                    if error != HPE_OK { return outcome(of: error) }
                }
            } else if error != HPE_OK {
                return outcome(of: error)
            } else if inBody {
                bodyBytes += parsed
                if bodyBytes > maxBodyBytes { return .invalid("answer body over \(maxBodyBytes) bytes") }
            } else {
                headBytes += parsed
            }
            at += parsed
        }
        return .needMore
    }

    /// Tells the parser that the connection ended: completes an answer delimited by the close.
    func feedEndOfStream() -> Outcome {
        if messageComplete { return .complete(leftover: 0) }
        // Its `Content-Length` is not all there.
        if plainBody != nil { return .truncated }
        parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        llhttpRead = true
        let error = llhttp_finish(parser)
        if messageComplete { return .complete(leftover: 0) }
        let outcome = outcome(of: error)
        return outcome == .needMore ? .truncated : outcome
    }

    /// Reads the answer's first read when it starts with a `PlainAnswerHead`, and the body bytes after it; nil
    /// when it does not (nothing is kept: llhttp gets the read).
    private func feedPlainHead(_ bytes: UnsafeRawBufferPointer) -> Outcome? {
        var kept = HTTPHeaders()
        let head = PlainAnswerHead.read(bytes, maxLength: maxHeadBytes, maxBody: maxBodyBytes,
                                        lengths: keptLengths) { name, value in
            if keeps(name) { kept.add(String(decoding: name, as: UTF8.self), String(decoding: value, as: UTF8.self)) }
        }
        guard let head else { return nil }
        status = head.status
        headers = kept
        if head.contentLength <= Self.maxReservation { arriving.reserve(head.contentLength) }
        plainBody = (head.contentLength, head.keepAlive)
        return feedPlainBody(UnsafeRawBufferPointer(rebasing: bytes[head.length...]))
    }

    /// Takes the bytes of a `PlainAnswerHead` answer's body from `bytes`; complete at its `Content-Length`.
    private func feedPlainBody(_ bytes: UnsafeRawBufferPointer) -> Outcome {
        // Not nil: called only while a plain answer's body is read.
        let (left, keepsAlive) = plainBody!
        let taken = min(left, bytes.count)
        // Not nil: `taken` > 0 bytes are there.
        if taken > 0 { arriving.append(bytes.baseAddress!, taken) }
        guard taken == left else {
            plainBody = (left - taken, keepsAlive)
            return .needMore
        }
        plainBody = nil
        keepAlive = keepsAlive
        messageComplete = true
        body = arriving.take()
        return .complete(leftover: bytes.count - taken)
    }

    /// What llhttp's answer to the bytes means when no answer was completed.
    private func outcome(of error: llhttp_errno_t) -> Outcome {
        if let refusal { return .invalid(refusal) }
        switch error {
        case HPE_OK: return .needMore
        case HPE_PAUSED_UPGRADE: return .invalid("upgrade")
        case HPE_INVALID_EOF_STATE: return .truncated
        default:
            if statusOutOfRange { return .invalid("status code out of range") }
            return .invalid(String(cString: llhttp_errno_name(error)))
        }
    }

    // MARK: Callbacks

    /// Calls `body` with the parser's owner, without retaining it: `feed` and `feedEndOfStream` set `data`
    /// just before running the callbacks, while the owner is alive. (llhttp passes the parser it runs.)
    @inline(__always)
    private static func with(_ parser: UnsafeMutablePointer<llhttp_t>?, _ body: (UpstreamResponseParser) -> Int32) -> Int32 {
        Unmanaged<UpstreamResponseParser>.fromOpaque(parser!.pointee.data)._withUnsafeGuaranteedRef(body)
    }

    /// The callbacks, shared by every parser (they find their parser through `data`): written once, then
    /// only read, from any loop thread.
    nonisolated(unsafe) private static let settings: UnsafeMutablePointer<llhttp_settings_t> = {
        let pointer = UnsafeMutablePointer<llhttp_settings_t>.allocate(capacity: 1)
        pointer.initialize(to: makeSettings())
        return pointer
    }()

    private static func makeSettings() -> llhttp_settings_t {
        var settings = llhttp_settings_t()
        llhttp_settings_init(&settings)
        settings.on_header_field = { parser, at, length in
            UpstreamResponseParser.with(parser) { owner in
                if let at { owner.fieldName.append(at, length) }
                return 0
            }
        }
        settings.on_header_field_complete = { parser in
            UpstreamResponseParser.with(parser) { owner in
                owner.keepingValue = owner.keeps(owner.fieldName.bytes)
                return 0
            }
        }
        settings.on_header_value = { parser, at, length in
            UpstreamResponseParser.with(parser) { owner in
                if owner.keepingValue, let at { owner.fieldValue.append(at, length) }
                return 0
            }
        }
        settings.on_header_value_complete = { parser in
            UpstreamResponseParser.with(parser) { owner in
                owner.endField()
                return 0
            }
        }
        settings.on_headers_complete = { parser in
            UpstreamResponseParser.with(parser) { owner in
                // Non-nil: llhttp runs callbacks with the parser it runs.
                let state = parser!.pointee
                owner.status = Int(state.status_code)
                // Only HTTP's codes are answers (llhttp takes any three digits, even `000`).
                guard (100...599).contains(owner.status) else {
                    owner.statusOutOfRange = true
                    return -1
                }
                // 1xx, 204 and 304 answers have no body whatever their fields say (RFC 9112 §6.3). 1 tells llhttp
                // to read none.
                if owner.status < 200 || owner.status == 204 || owner.status == 304 { return 1 }
                if state.flags & UInt16(F_CONTENT_LENGTH.rawValue) != 0, state.content_length > 0 {
                    // A body announced over the ceiling is refused before a byte of it is read.
                    guard state.content_length <= UInt64(owner.maxBodyBytes) else {
                        owner.refusal = "answer Content-Length \(state.content_length) over \(owner.maxBodyBytes) bytes"
                        return -1
                    }
                    if state.content_length <= UInt64(UpstreamResponseParser.maxReservation) {
                        owner.arriving.reserve(Int(state.content_length))
                    }
                }
                // An empty body completes with the head (a pause here would wait for bytes that never come).
                if state.flags & UInt16(F_CONTENT_LENGTH.rawValue) != 0 && state.flags & UInt16(F_CHUNKED.rawValue) == 0
                    && state.content_length == 0 { return 0 }
                // Pause where the head ends, so that `feed` counts the bytes after it as the body's.
                owner.pausedAtBody = true
                return Int32(HPE_PAUSED.rawValue)
            }
        }
        settings.on_body = { parser, at, length in
            UpstreamResponseParser.with(parser) { owner in
                guard let at else { return 0 }
                // Nothing beyond the ceiling is kept (`feed` also counts the chunk framing against it).
                guard owner.arriving.count + length <= owner.maxBodyBytes else {
                    owner.refusal = "answer body over \(owner.maxBodyBytes) bytes"
                    return -1
                }
                owner.arriving.append(UnsafeRawPointer(at), length)
                return 0
            }
        }
        settings.on_message_complete = { parser in
            UpstreamResponseParser.with(parser) { owner in
                if (100..<200).contains(owner.status) {
                    // An interim answer (100 Continue, 103 Early Hints): the final one follows.
                    owner.headers = HTTPHeaders()
                    owner.status = 0
                    return 0
                }
                owner.keepAlive = llhttp_should_keep_alive(parser) != 0
                owner.messageComplete = true
                owner.body = owner.arriving.take()
                // Stop here: bytes after the answer are not parsed as another one.
                return Int32(HPE_PAUSED.rawValue)
            }
        }
        return settings
    }

    /// Ends the header field just read: kept, or forgotten without building a `String`.
    private func endField() {
        if keepingValue {
            headers.add(String(decoding: fieldName.bytes, as: UTF8.self), Self.trimmed(fieldValue.bytes))
        }
        fieldName.count = 0
        fieldValue.count = 0
        keepingValue = false
    }

    /// A field value without the spaces and tabs after it (llhttp drops those before it, not always those after).
    private static func trimmed(_ value: UnsafeBufferPointer<UInt8>) -> String {
        var end = value.count
        while end > 0 && (value[end - 1] == 0x20 || value[end - 1] == 0x09) { end -= 1 }
        return String(decoding: UnsafeBufferPointer(rebasing: value[..<end]), as: UTF8.self)
    }

    /// Whether the field called `name` is kept (ASCII case-insensitive).
    private func keeps(_ name: UnsafeBufferPointer<UInt8>) -> Bool {
        guard let keptHeaders else { return true }
        guard keptLengths >> UInt64(min(name.count, 63)) & 1 != 0 else { return false }
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

/// An answer's body as it arrives, in `malloc`ed memory that becomes a `Data` without a copy (`take`): each piece
/// is one copy, without `Data`'s own checks on every append. Owned by one parser on one loop thread.
private struct BodyBuffer {
    /// The bytes (nil while nothing is held or reserved).
    private var base: UnsafeMutableRawPointer?
    /// Bytes allocated.
    private var capacity = 0
    /// Bytes held.
    private(set) var count = 0

    /// Room for `bytes` in all (a `Content-Length` known up front), so that the pieces need no growth.
    mutating func reserve(_ bytes: Int) {
        if bytes > capacity { resize(to: bytes) }
    }

    /// Appends `length` bytes from `at`, growing to twice the size when full.
    mutating func append(_ at: UnsafeRawPointer, _ length: Int) {
        guard length > 0 else { return }
        if count + length > capacity { resize(to: max(capacity * 2, count + length, 256)) }
        // Not nil: the resize above allocated room for these bytes.
        (base! + count).copyMemory(from: at, byteCount: length)
        count += length
    }

    /// The bytes as `HeapBytes` that take the memory over; the buffer is empty afterwards.
    mutating func take() -> HTTPBody {
        guard let base, count > 0 else {
            discard()
            return .empty
        }
        let bytes = HeapBytes(taking: base, count: count)
        self.base = nil
        capacity = 0
        count = 0
        return .heap(bytes)
    }

    /// Frees the bytes; the buffer is empty afterwards.
    mutating func discard() {
        free(base)
        base = nil
        capacity = 0
        count = 0
    }

    /// Moves the bytes to an allocation of `size` bytes.
    private mutating func resize(to size: Int) {
        guard let grown = realloc(base, size) else { fatalError("out of memory (\(size) bytes)") }
        base = grown
        capacity = size
    }
}
