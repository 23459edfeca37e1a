import CLLHTTP
import FoundationEssentials
import Glibc
import PosternIO

/// Turns the bytes read from one client connection into requests, with llhttp (Node's HTTP/1.1 parser) in
/// request mode:
/// header names and values joined from the pieces the reads cut them into, the head held to
/// `maxHeaderBytes`, the body (decoded when chunked) to `bodyCeiling`, and the framing rules of
/// `RequestFraming` checked before the body is read.
///
/// Every byte counts against a limit: the empty lines before a request and the whole head (whitespace and line
/// breaks included) against `maxHeaderBytes`; a chunked body's size lines, extensions, line breaks and trailers
/// against `bodyCeiling`, with its data. Every byte outside the body's data is also checked for RFC 9112's line
/// breaks, which llhttp (Debian builds it without its strict mode) does not check: a CR only before an LF, an LF
/// only after a CR, and CRLF right after each chunk's data (§7.1). One pass over those bytes (`frame(upTo:)`).
///
/// A request whose whole head is at the start of the bytes at hand in the common shape (`PlainRequestHead`: HTTP/1.1,
/// no body, plain fields, one valid Host) is read without llhttp, which then never sees its bytes: it stays between
/// requests. Every other request goes to llhttp from its first byte, so llhttp judges everything unusual and every
/// refusal comes from its path.
///
/// `parse` stops after each whole request (the parser stays paused there), so that pipelined requests
/// are handed out one at a time; the bytes after it are given to the next `parse`. No socket: the
/// connection (`HTTPConnection`) owns the bytes, and the libFuzzer target `http_request_stream` drives
/// this type the same way. Loop thread only.
final class HTTPRequestAssembler {
    /// What one call to `parse` gave.
    package enum Step {
        /// Every byte was parsed and no request is whole yet.
        case needMore
        /// A whole request. `keepAlive`: the connection may carry another one after its answer (HTTP/1.1
        /// without `Connection: close`, or HTTP/1.0 with `Connection: keep-alive`, and no upgrade);
        /// `http10`: it came as HTTP/1.0.
        case request(HTTPRequest, keepAlive: Bool, http10: Bool)
        /// The bytes cannot be taken: answer this refusal and parse nothing after it.
        case refused(EdgeRefusal)
    }

    private let limits: ServerLimits
    private let peer: String
    /// Whether requests with a `PlainRequestHead` are read without llhttp (false: llhttp reads every request, the
    /// reference the plain reading is tested against).
    private let readsPlainHeads: Bool
    /// No byte of the next request has been parsed yet: llhttp is between requests, and the bytes at hand may start
    /// with a `PlainRequestHead`.
    private var atRequestStart = true
    /// llhttp's state (it points at the shared callbacks); its `data` points back at this assembler.
    private let parser: UnsafeMutablePointer<llhttp_t>

    // The request being parsed.
    /// The target of the request llhttp reads (empty between requests).
    private var url: [UInt8] = []
    /// The path of the last request (`pathAndQuery`), reused while the requests name it.
    private var lastPath = ""
    /// Its header lines (names and values, each field's place in it); reused for the next request when no
    /// request refers to it any more.
    private var block = HeaderBlock.make()
    /// The block before, while a request handed out may still hold it (a handler's task keeps its request a
    /// little after answering): taken back once free, so that a connection's requests rarely allocate one.
    private var spare: HeaderBlock?
    /// Where the field being read starts in the block's bytes (its name, then its value).
    private var fieldStart = 0
    /// Where the value of the field being read starts in the block's bytes (when `inValue`).
    private var valueStart = 0
    private var inValue = false
    /// The fields in `block` belong to a request already handed out (none of the next one has been read).
    private var handedOut = false
    /// The head is complete: fields now are trailers of a chunked body, checked but not kept (a trailer is no
    /// header, RFC 9110 §6.5.1: a `Content-Length` there must not join the request's headers).
    private var inTrailers = false
    private var body = Data()
    /// Bytes of the head so far, the empty lines before the request line included.
    private var headerBytes = 0
    /// Bytes of the body so far: its data, and a chunked body's framing.
    private var bodyBytes = 0
    /// The first byte of the current `parse` call's bytes not checked by `frame(upTo:)` yet (a body's data is
    /// never checked: `bodyData` steps over it).
    private var scanned = UnsafePointer<UInt8>(bitPattern: 1)!  // never read before `parse` sets it
    /// What the bytes checked last ended with (`postern_check_head_bytes`): bit 0 a CR (the next byte must be an LF),
    /// bit 1 an LF (the next byte must not be SP or HTAB: no obs-fold).
    private var pendingCR: Int32 = 0
    /// The last byte parsed was a backslash inside a chunk extension's quoted value: the first byte of the next
    /// `parse` is the character it quotes (RFC 9112 §7.1.1).
    private var quotedPairPending = false
    /// A chunk's data has just ended: the next byte must be the CR of a CRLF.
    private var chunkDataEnded = false
    /// `frame(upTo:)` counts against the body, not the head (the head is complete).
    private var inBody = false
    /// The body is chunked (known once the head is complete).
    private var chunked = false
    /// `Host` lines in the head, and whether each one's value was a valid host (RFC 9112 §3.2).
    private var hostLines = 0
    private var hostValid = true
    /// A `Transfer-Encoding` line is in the head (an HTTP/1.0 request with one is answered, then closed).
    private var transferEncodingSeen = false
    private var framingHeaderSeen = false
    /// A refusal was handed out: nothing after it is ever parsed (llhttp is left in an error state by a callback's
    /// refusal, but not by one `frame(upTo:)` finds after it returned).
    private var stopped = false
    private var expectContinue = false
    private var refusal: EdgeRefusal?
    /// Bytes of a request have arrived and it is not whole (nor refused) yet.
    private(set) var messageOpen = false
    /// The head of a request that waits for `100 Continue` was just parsed: the connection sends the
    /// interim answer now (`takeContinue()`), before anything else.
    private var continueDue = false

    /// An assembler for a connection from `peer` (the address requests carry); it reads plain heads itself unless
    /// `readsPlainHeads` is false.
    init(limits: ServerLimits, peer: String, readsPlainHeads: Bool = true) {
        self.limits = limits
        self.peer = peer
        self.readsPlainHeads = readsPlainHeads
        parser = UnsafeMutablePointer<llhttp_t>.allocate(capacity: 1)
        llhttp_init(parser, HTTP_REQUEST, HTTPRequestAssembler.settings)
    }

    deinit { parser.deallocate() }

    /// Parses `count` bytes at `bytes` up to the end of the next whole request; returns how many were
    /// parsed (the rest belongs to the next call) and what they gave. After `.refused`, call no more.
    func parse(_ bytes: UnsafeRawPointer, count: Int) -> (parsed: Int, step: Step) {
        // The assembler outlives this call, so the unretained pointer is valid in every callback it runs.
        guard !stopped else { return (count, .refused(.badFraming(partialRequest(), reason: "nothing is read after a refusal"))) }
        if atRequestStart {
            if readsPlainHeads, let plain = plainRequest(bytes.assumingMemoryBound(to: UInt8.self), count) { return plain }
            atRequestStart = false
        }
        parser.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        let data = bytes.assumingMemoryBound(to: CChar.self)
        scanned = bytes.assumingMemoryBound(to: UInt8.self)
        var from = 0
        if quotedPairPending {
            quotedPairPending = false
            guard HTTPRequestAssembler.isQuotable(bytes.load(as: UInt8.self)) else { return (count, .refused(refusalForError(HPE_STRICT))) }
            from = 1
        }
        var code = llhttp_execute(parser, data + from, count - from)
        // llhttp 8.1 stops on the backslash of a quoted-pair in a chunk extension, which RFC 9112 §7.1.1 allows: go on
        // after the character it quotes (`resumeAfterQuotedPair`), as often as there are pairs.
        while code == HPE_STRICT, let resumeAt = resumeAfterQuotedPair(data, count) {
            code = resumeAt < count ? llhttp_execute(parser, data + resumeAt, count - resumeAt) : HPE_OK
        }
        if code == HPE_OK {
            guard frame(upTo: bytes.assumingMemoryBound(to: UInt8.self) + count) else {
                return (count, .refused(refusalForError(code)))
            }
            return (count, .needMore)
        }
        let n = llhttp_get_error_pos(parser).map { $0 - data } ?? count
        if code == HPE_PAUSED {
            llhttp_resume(parser)
            // The trailers of a chunked body (and nothing, for any other request) are checked before it is handed out.
            guard frame(upTo: bytes.assumingMemoryBound(to: UInt8.self) + n) else { return (n, .refused(refusalForError(code))) }
            let http10 = parser.pointee.http_major == 1 && parser.pointee.http_minor == 0
            // RFC 9112 §6.1: an HTTP/1.0 message with Transfer-Encoding is answered as faulty framing: then closed.
            let keepAlive = llhttp_should_keep_alive(parser) != 0 && parser.pointee.upgrade == 0 && !(http10 && transferEncodingSeen)
            let step = url.withUnsafeBufferPointer { wholeRequest(target: $0, keepAlive: keepAlive, http10: http10) }
            url.removeAll(keepingCapacity: true)
            return (n, step)
        }
        return (n, .refused(refusalForError(code)))
    }

    /// Reads the request at the start of the `count` bytes at `p` when its head is a `PlainRequestHead` (within
    /// `maxHeaderBytes`): its fields into the block, its method into llhttp's state (where a refusal of the next
    /// request reads it, as after llhttp's own parse). Nil when it is not one.
    private func plainRequest(_ p: UnsafePointer<UInt8>, _ count: Int) -> (parsed: Int, step: Step)? {
        takeFreeBlock()
        block.reset()
        let read = PlainRequestHead.read(p, count: count, maxLength: limits.maxHeaderBytes) { nameStart, nameEnd, valueStart, valueEnd in
            let span = HeaderBlock.Span(nameStart: Int32(nameStart), nameEnd: Int32(nameEnd), valueStart: Int32(valueStart),
                                        valueEnd: Int32(valueEnd))
            if !block.add(span) {
                block = block.grown(adding: 0)
                _ = block.add(span)  // the grown block has room for it
            }
        }
        guard let head = read else {
            block.reset()  // the fields read before the bytes stopped being the shape
            return nil
        }
        store(UnsafeRawBufferPointer(start: p + head.fieldsStart, count: head.fieldsEnd - head.fieldsStart))
        parser.pointee.method = UInt8(head.method.rawValue)
        let target = UnsafeBufferPointer(start: p + head.targetStart, count: head.targetEnd - head.targetStart)
        return (head.length, wholeRequest(target: target, keepAlive: head.keepAlive, http10: false))
    }

    /// After llhttp stopped with `HPE_STRICT`: when it stopped on the backslash of a quoted-pair in a chunk extension's
    /// quoted value and the quoted character is HTAB, SP, a visible character or obs-text (RFC 9110 §5.6.4), the parser
    /// is put back in the quoted value and the offset to parse on from is returned (past the pair; `count` when the
    /// backslash ends the bytes, with the quoted character due first in the next `parse`). Else nil: the error stands.
    private func resumeAfterQuotedPair(_ data: UnsafePointer<CChar>, _ count: Int) -> Int? {
        // llhttp reports the error one byte past the backslash (it has stepped over it).
        guard let stop = llhttp_get_error_pos(parser), stop > data, stop <= data + count, (stop - 1).pointee == 0x5C else { return nil }
        let backslash = stop - 1 - data
        if backslash + 1 < count {
            guard HTTPRequestAssembler.isQuotable(UInt8(bitPattern: data[backslash + 1])) else { return nil }
        }
        guard postern_llhttp_resume_quoted_value(parser) == 0 else { return nil }
        if backslash + 1 < count { return backslash + 2 }
        quotedPairPending = true
        return count
    }

    /// Whether `byte` may follow the backslash of a quoted-pair: HTAB, SP, VCHAR or obs-text (RFC 9110 §5.6.4).
    private static func isQuotable(_ byte: UInt8) -> Bool {
        byte == 0x09 || (byte >= 0x20 && byte != 0x7F)
    }

    /// Checks and counts the bytes from `scanned` up to `end` (none of them a body's data): each CR followed by an
    /// LF, each LF after a CR, a CRLF first when a chunk's data has just ended; the bytes count against the head's
    /// limit, or the body's once the head is complete. False, with the refusal set, when they break a rule.
    private func frame(upTo end: UnsafePointer<UInt8>) -> Bool {
        let count = end - scanned
        guard count > 0 else { return true }
        if inBody {
            bodyBytes += count
            guard bodyBytes <= limits.bodyCeiling else {
                refusal = .bodyTooLarge(partialRequest())
                return false
            }
        } else {
            headerBytes += count
            guard headerBytes <= limits.maxHeaderBytes else {
                refusal = .badFraming(partialRequest(), reason: "request header block larger than \(limits.maxHeaderBytes) bytes")
                return false
            }
        }
        var p = scanned
        scanned = end
        if chunkDataEnded {
            chunkDataEnded = false
            guard p.pointee == 0x0D else {
                refusal = .badFraming(partialRequest(), reason: "malformed request: chunk data must end in CRLF")
                return false
            }
            pendingCR = 1
            p += 1
        }
        switch postern_check_head_bytes(p, end - p, &pendingCR) {
        case 0:
            return true
        case -2:
            refusal = .badFraming(partialRequest(), reason: "malformed request: obs-fold (a line starting with whitespace)")
            return false
        default:
            refusal = .badFraming(partialRequest(), reason: "malformed request: a line must end in CRLF")
            return false
        }
    }

    /// Whether a `100 Continue` is due (the head of a request expecting it was parsed); clears it.
    func takeContinue() -> Bool {
        defer { continueDue = false }
        return continueDue
    }

    /// The connection answers something else instead (a timeout): the request being parsed is abandoned.
    func abandon() {
        messageOpen = false
    }

    // MARK: Parser callbacks

    /// A new request's first byte.
    fileprivate func messageBegan() -> Int32 {
        // The empty lines before the request line (RFC 9112 §2.2) count against its head: llhttp's wrapper
        // (Sources/CLLHTTP/api.c) put where the request line starts in `error_pos`.
        guard frame(upTo: UnsafeRawPointer(parser.pointee.error_pos).assumingMemoryBound(to: UInt8.self)) else { return -1 }
        messageOpen = true
        url.removeAll(keepingCapacity: true)
        takeFreeBlock()
        block.reset()
        fieldStart = 0
        valueStart = 0
        inValue = false
        handedOut = false
        inTrailers = false
        body = Data()
        hostLines = 0
        hostValid = true
        transferEncodingSeen = false
        framingHeaderSeen = false
        expectContinue = false
        return 0
    }

    /// Makes `block` one that no request handed out refers to: the last request's headers still in use somewhere
    /// keep their block, and this one takes the spare when it is free, else a new one.
    private func takeFreeBlock() {
        if !isKnownUniquelyReferenced(&block) {
            if spare != nil && isKnownUniquelyReferenced(&spare) {
                let free = spare.take() ?? HeaderBlock.make()  // not nil: checked just above
                spare = block
                block = free
            } else {
                spare = block
                block = HeaderBlock.make()
            }
        }
    }

    /// Whether the head up to the end of a piece of it (`at` + `length`) is still within `maxHeaderBytes`; false
    /// (with the refusal set) above it. Checked on every piece, so that one long read is refused as it is parsed.
    private func countHead(_ at: UnsafePointer<CChar>, _ length: Int) -> Bool {
        let upTo = UnsafeRawPointer(at + length).assumingMemoryBound(to: UInt8.self)
        guard headerBytes + (upTo - scanned) <= limits.maxHeaderBytes else {
            refusal = .badFraming(partialRequest(), reason: "request header block larger than \(limits.maxHeaderBytes) bytes")
            return false
        }
        return true
    }

    /// A piece of the request target: no TAB in it (llhttp, not strict, takes one; Node's strict parser and RFC 9112
    /// §3.2 do not).
    fileprivate func urlData(_ at: UnsafePointer<CChar>, _ length: Int) -> Int32 {
        guard countHead(at, length) else { return -1 }
        if memchr(at, 0x09, length) != nil {
            refusal = .badFraming(partialRequest(), reason: "malformed request: invalid URL")
            return -1
        }
        at.withMemoryRebound(to: UInt8.self, capacity: length) { url.append(contentsOf: UnsafeBufferPointer(start: $0, count: length)) }
        return 0
    }

    /// A piece of a header name.
    fileprivate func fieldData(_ at: UnsafePointer<CChar>, _ length: Int) -> Int32 {
        guard countHead(at, length) else { return -1 }
        let piece = UnsafeRawBufferPointer(start: at, count: length)
        // llhttp (not strict: its strict mode also refuses UTF-8 in the target, which curl sends as it is) takes
        // spaces in a name other than a framing one's; RFC 9112 §5.1 says to refuse whitespace in a name and
        // before the colon. The reason llhttp gives for a bad name character, so that the answer does not depend on
        // where the reads end.
        for byte in piece where byte == 0x20 || byte == 0x09 {
            refusal = .badFraming(partialRequest(), reason: "malformed request: invalid character in header")
            return -1
        }
        store(piece)
        return 0
    }

    /// A piece of a header value: visible characters, spaces and tabs only.
    fileprivate func valueData(_ at: UnsafePointer<CChar>, _ length: Int) -> Int32 {
        if !inValue {
            inValue = true
            valueStart = block.byteCount
        }
        guard countHead(at, length) else { return -1 }
        // llhttp refuses a control byte (other than HTAB) or DEL anywhere in a value.
        store(UnsafeRawBufferPointer(start: at, count: length))
        return 0
    }

    /// A header line ends (llhttp has read its line break): it is added, or the request refused when the line has
    /// no name (llhttp, not strict, takes `: value`; a field name is a token of at least one character).
    fileprivate func fieldComplete() -> Int32 {
        if (inValue ? valueStart : block.byteCount) == fieldStart {
            refusal = .badFraming(partialRequest(), reason: "malformed request: invalid character in header")
            return -1
        }
        finishField()
        return 0
    }

    /// Adds the header line collected so far (the value without the whitespace around it).
    private func finishField() {
        let nameEnd = inValue ? valueStart : block.byteCount
        var lower = inValue ? valueStart : nameEnd
        var upper = block.byteCount
        block.withBytes { bytes in
            while upper > lower && (bytes[upper - 1] == 0x20 || bytes[upper - 1] == 0x09) { upper -= 1 }
            while lower < upper && (bytes[lower] == 0x20 || bytes[lower] == 0x09) { lower += 1 }
        }
        let span = HeaderBlock.Span(nameStart: Int32(fieldStart), nameEnd: Int32(nameEnd), valueStart: Int32(lower), valueEnd: Int32(upper))
        switch nameEnd - fieldStart {
        case 14 where nameEquals("content-length"):
            framingHeaderSeen = true
        case 17 where nameEquals("transfer-encoding"):
            framingHeaderSeen = true
            transferEncodingSeen = transferEncodingSeen || !inTrailers
        case 4 where !inTrailers && nameEquals("host"):
            hostLines += 1
            hostValid = hostValid && block.withBytes { HTTPRequestAssembler.validHost(UnsafeBufferPointer(rebasing: $0[lower..<upper])) }
        case 6 where nameEquals("expect"):
            expectContinue = equalsIgnoringCase(lower, upper, "100-continue")
        default:
            break
        }
        if inTrailers {
            block.truncate(to: fieldStart)
        } else if !block.add(span) {
            block = block.grown(adding: 0)
            _ = block.add(span)  // the grown block has room for it
        }
        fieldStart = block.byteCount
        inValue = false
    }

    /// Appends a piece of a name or value to the block (a bigger one when it is full).
    private func store(_ piece: UnsafeRawBufferPointer) {
        if !block.append(piece) {
            block = block.grown(adding: piece.count)
            _ = block.append(piece)  // the grown block has room for it
        }
    }

    /// Whether `bytes` are a valid `Host` value (RFC 9112 §3.2, RFC 3986 §3.2.2): empty, or a host — a name of
    /// letters, digits and `-._~%!$&'()*+,;=`, or an IP literal in brackets — with an optional `:port` of digits.
    static func validHost(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let start = 0, end = bytes.count
        var i = start
        if i < end && bytes[i] == UInt8(ascii: "[") {
            while i < end && bytes[i] != UInt8(ascii: "]") {
                let byte = bytes[i]
                guard byte == UInt8(ascii: "[") && i == start || HTTPRequestAssembler.isHostByte(byte) || byte == UInt8(ascii: ":") else { return false }
                i += 1
            }
            guard i < end else { return false }
            i += 1
        } else {
            while i < end && bytes[i] != UInt8(ascii: ":") {
                guard HTTPRequestAssembler.isHostByte(bytes[i]) else { return false }
                i += 1
            }
        }
        guard i < end else { return true }
        guard bytes[i] == UInt8(ascii: ":") else { return false }
        i += 1
        while i < end {
            guard bytes[i] >= 0x30 && bytes[i] <= 0x39 else { return false }
            i += 1
        }
        return true
    }

    /// Whether `byte` may appear in a host name (RFC 3986 reg-name: unreserved, sub-delims and `%`): one bit per
    /// ASCII byte in two words (`hostBytesLow` for 0–63, `hostBytesHigh` for 64–127).
    @inline(__always)
    private static func isHostByte(_ byte: UInt8) -> Bool {
        byte < 64 ? hostBytesLow >> UInt64(byte) & 1 != 0 : byte < 128 && hostBytesHigh >> UInt64(byte - 64) & 1 != 0
    }

    /// The host bytes below 64: `!`, `$%&'()*+,-.`, the digits, `;` and `=`.
    private static let hostBytesLow: UInt64 = 0x2BFF7FF200000000
    /// The host bytes from 64 to 127: the letters, `_` and `~`.
    private static let hostBytesHigh: UInt64 = 0x47FFFFFE87FFFFFE

    /// Whether the name of the field being read spells `lower` (lowercase ASCII), ignoring case.
    private func nameEquals(_ lower: StaticString) -> Bool {
        equalsIgnoringCase(fieldStart, inValue ? valueStart : block.byteCount, lower)
    }

    /// Whether the block's bytes `start..<end` spell `lower` (lowercase ASCII), ignoring the case of letters
    /// only (`1` and `-` match themselves alone, never a control byte that differs from them by 0x20).
    private func equalsIgnoringCase(_ start: Int, _ end: Int, _ lower: StaticString) -> Bool {
        guard end - start == lower.utf8CodeUnitCount else { return false }
        let other = lower.utf8Start
        return block.withBytes { bytes in
            for i in 0..<(end - start) {
                let byte = bytes[start + i], want = other[i]
                if byte == want { continue }
                guard byte | 0x20 == want, want >= UInt8(ascii: "a"), want <= UInt8(ascii: "z") else { return false }
            }
            return true
        }
    }

    /// The head is complete: check its framing and the body size before reading the body.
    /// Returns 0 to read on, and anything but 0, 1 or 2 to stop with the refusal set.
    fileprivate func headersComplete() -> Int32 {
        // llhttp's wrapper put where the head ends in `error_pos` (Sources/CLLHTTP/api.c).
        guard frame(upTo: UnsafeRawPointer(parser.pointee.error_pos).assumingMemoryBound(to: UInt8.self)) else { return -1 }
        inTrailers = true
        inBody = true
        guard parser.pointee.http_major == 1 else {
            refusal = .badFraming(partialRequest(), reason: "unsupported HTTP version")
            return -1
        }
        // RFC 9112 §3.2: one Host line, with a valid value; an HTTP/1.1 request must have one.
        guard hostLines <= 1, hostValid, hostLines == 1 || parser.pointee.http_minor == 0 else {
            let reason = hostLines > 1 ? "more than one Host" : hostLines == 0 ? "missing Host" : "invalid Host"
            refusal = .badFraming(partialRequest(), reason: reason)
            return -1
        }
        let method = currentMethod
        if framingHeaderSeen || method == .head || method == .other("TRACE"),
           let reason = RequestFraming.problem(method: method, headers: HTTPHeaders(block: block)) {
            refusal = .badFraming(partialRequest(), reason: reason)
            return -1
        }
        let flags = parser.pointee.flags
        chunked = flags & UInt16(F_CHUNKED.rawValue) != 0
        // llhttp's content_length is 0 when the request has no Content-Length.
        let length = flags & UInt16(F_CONTENT_LENGTH.rawValue) != 0 ? parser.pointee.content_length : 0
        if !chunked, length > 0 {
            guard length <= UInt64(limits.bodyCeiling) else {
                refusal = .bodyTooLarge(partialRequest())
                return -1
            }
            body.reserveCapacity(Int(length))
        }
        if expectContinue && parser.pointee.http_major == 1 && parser.pointee.http_minor >= 1 && (chunked || length > 0) {
            // The client waits for this before it sends the body.
            continueDue = true
        }
        return 0
    }

    /// A piece of the body (chunked bodies arrive decoded), within the ceiling.
    fileprivate func bodyData(_ at: UnsafePointer<CChar>, _ length: Int) -> Int32 {
        let data = UnsafeRawPointer(at).assumingMemoryBound(to: UInt8.self)
        // A chunked body's size line (and the CRLF after the chunk before) comes before its data.
        guard frame(upTo: data) else { return -1 }
        guard bodyBytes + length <= limits.bodyCeiling else {
            refusal = .bodyTooLarge(partialRequest())
            return -1
        }
        bodyBytes += length
        scanned = data + length
        body.append(data, count: length)
        // llhttp's count of the chunk's bytes still to come is 0 when this piece ends it: a CRLF must follow.
        if chunked && parser.pointee.content_length == 0 { chunkDataEnded = true }
        return 0
    }

    /// A whole request: stop the parser here, so that `parse` hands it out and parses nothing after it yet.
    fileprivate func messageComplete() -> Int32 {
        messageOpen = false
        return Int32(HPE_PAUSED.rawValue)
    }

    /// The next request starts from nothing: its head's count (the empty lines before it included), its body's,
    /// and the line-break checks (called once the bytes up to the end of the request were checked).
    private func startOver() {
        headerBytes = 0
        bodyBytes = 0
        inBody = false
        chunked = false
        pendingCR = 0
        chunkDataEnded = false
    }

    // MARK: Requests

    /// The method of the request being parsed.
    private var currentMethod: HTTPMethod {
        switch llhttp_method(rawValue: UInt32(parser.pointee.method)) {
        case HTTP_GET: return .get
        case HTTP_POST: return .post
        case HTTP_HEAD: return .head
        case HTTP_PUT: return .put
        case HTTP_DELETE: return .delete
        case HTTP_OPTIONS: return .options
        case HTTP_PATCH: return .patch
        case let other: return .other(String(cString: llhttp_method_name(other)))
        }
    }

    /// What has arrived of the request being parsed, for a refusal (the target may be cut short).
    private func partialRequest() -> HTTPRequest {
        let target = url.isEmpty ? "/" : String(decoding: url, as: UTF8.self)
        // Strings, not the block: the block is written on while parsing goes on.
        var seen = HTTPHeaders()
        guard !handedOut else { return HTTPRequest(method: currentMethod, target: target, headers: seen, remoteAddress: peer) }
        for (name, value) in block.fields() { seen.add(name, value) }
        let nameEnd = inValue ? valueStart : block.byteCount
        if nameEnd > fieldStart { seen.add(block.string(fieldStart, nameEnd), block.string(nameEnd, block.byteCount)) }
        return HTTPRequest(method: currentMethod, target: target, headers: seen, remoteAddress: peer)
    }

    /// The request just completed, with its `target` (its fields in the block, its method in llhttp's state) and the
    /// connection's keep-alive verdict; the next byte starts the next request.
    private func wholeRequest(target whole: UnsafeBufferPointer<UInt8>, keepAlive: Bool, http10: Bool) -> Step {
        startOver()
        atRequestStart = true
        let (path, query) = HTTPRequestAssembler.pathAndQuery(whole, lastPath: &lastPath)
        let request = HTTPRequest(method: currentMethod, path: path, query: query, headers: HTTPHeaders(block: block),
                                  body: body, remoteAddress: peer)
        handedOut = true
        body = Data()
        return .request(request, keepAlive: keepAlive, http10: http10)
    }

    /// The path and query of a request target, straight from its bytes (split at the first `?`); the absolute form
    /// (`http://host/path`, RFC 9112 §3.2.2) is taken from its path on. `lastPath`: the path made last (see `path`).
    private static func pathAndQuery(_ whole: UnsafeBufferPointer<UInt8>, lastPath: inout String) -> (path: String, query: String) {
        let start = HTTPRequestAssembler.pathStart(whole)
        let target = UnsafeBufferPointer(rebasing: whole[start...])
        // An absolute form without a path means `/` (RFC 9112 §3.2.2 → RFC 9110 §4.2.3).
        let empty = start > 0 ? "/" : ""
        // The `?` found by memchr (a generic byte loop costs more on the usual short path).
        guard let base = target.baseAddress, let mark = memchr(base, 0x3F, target.count) else {
            return (target.isEmpty ? empty : path(target, lastPath: &lastPath), "")
        }
        let q = UnsafeRawPointer(mark) - UnsafeRawPointer(base)
        return (q == 0 ? empty : path(UnsafeBufferPointer(rebasing: target[..<q]), lastPath: &lastPath),
                String(decoding: UnsafeBufferPointer(rebasing: target[(q + 1)...]), as: UTF8.self))
    }

    /// The text of a path's bytes: `lastPath` when they are its bytes (a connection's requests often name the same
    /// path: no new `String`, no UTF-8 check), else a new `String`, which becomes `lastPath`.
    private static func path(_ bytes: UnsafeBufferPointer<UInt8>, lastPath: inout String) -> String {
        let same = lastPath.utf8.withContiguousStorageIfAvailable { last in
            // Not nil: both hold `bytes.count` > 0 bytes (an empty path is never made here).
            last.count == bytes.count && memcmp(last.baseAddress!, bytes.baseAddress!, bytes.count) == 0
        }
        if same != true { lastPath = String(decoding: bytes, as: UTF8.self) }
        return lastPath
    }

    /// Where the path starts in a request target: 0 in the origin form (`/path`); after the scheme and the authority
    /// in the absolute form (`http://host:port/path`, any letter case), at its end when it has no path.
    private static func pathStart(_ target: UnsafeBufferPointer<UInt8>) -> Int {
        guard let first = target.first, first != UInt8(ascii: "/") else { return 0 }
        var i = 0
        // scheme "://": letters only here (http, https)
        while i < target.count, (target[i] | 0x20) >= UInt8(ascii: "a"), (target[i] | 0x20) <= UInt8(ascii: "z") { i += 1 }
        guard i > 0, target.count - i >= 3, target[i] == UInt8(ascii: ":"), target[i + 1] == UInt8(ascii: "/"),
              target[i + 2] == UInt8(ascii: "/") else { return 0 }
        i += 3
        while i < target.count, target[i] != UInt8(ascii: "/"), target[i] != UInt8(ascii: "?") { i += 1 }
        return i
    }

    /// The parser stopped on an error: our own refusal when a callback set one, else the parser's reason.
    private func refusalForError(_ code: llhttp_errno_t) -> EdgeRefusal {
        messageOpen = false
        stopped = true
        if let refusal {
            self.refusal = nil
            return refusal
        }
        let reason: String
        switch code {
        case HPE_INVALID_CONTENT_LENGTH:
            reason = "Content-Length must be digits"
        case HPE_UNEXPECTED_CONTENT_LENGTH:
            reason = RequestFraming.problem(method: currentMethod, headers: partialRequest().headers) ?? "more than one Content-Length"
        case HPE_INVALID_TRANSFER_ENCODING:
            reason = "unsupported Transfer-Encoding"
        default:
            reason = "malformed request: \(HTTPRequestAssembler.describe(code))"
        }
        return .badFraming(partialRequest(), reason: reason)
    }

    /// What a refusal says for llhttp's error `code`: fixed words for the common errors (Node's http-parser's, which
    /// clients and tests match), llhttp's own name for the rest.
    private static func describe(_ code: llhttp_errno_t) -> String {
        switch code {
        case HPE_INVALID_METHOD: return "invalid HTTP method"
        case HPE_INVALID_URL: return "invalid URL"
        case HPE_INVALID_CONSTANT: return "invalid constant string"
        case HPE_INVALID_VERSION: return "invalid HTTP version"
        case HPE_INVALID_HEADER_TOKEN: return "invalid character in header"
        case HPE_INVALID_CHUNK_SIZE: return "invalid character in chunk size header"
        case HPE_CR_EXPECTED, HPE_LF_EXPECTED: return "LF character expected"
        case HPE_UNEXPECTED_SPACE: return "unexpected whitespace"
        case HPE_STRICT: return "strict mode assertion failed"
        default: return String(cString: llhttp_errno_name(code))
        }
    }

    /// The parser's callbacks (one table for every assembler; the assembler travels in `parser.data`).
    nonisolated(unsafe) private static let settings: UnsafeMutablePointer<llhttp_settings_t> = {
        let s = UnsafeMutablePointer<llhttp_settings_t>.allocate(capacity: 1)
        s.initialize(to: llhttp_settings_t())
        llhttp_settings_init(s)
        s.pointee.on_message_begin = { p in HTTPRequestAssembler.with(p) { $0.messageBegan() } }
        s.pointee.on_url = { p, at, n in HTTPRequestAssembler.with(p) { $0.urlData(at!, n) } }
        s.pointee.on_header_field = { p, at, n in HTTPRequestAssembler.with(p) { $0.fieldData(at!, n) } }
        s.pointee.on_header_value = { p, at, n in HTTPRequestAssembler.with(p) { $0.valueData(at!, n) } }
        s.pointee.on_header_value_complete = { p in HTTPRequestAssembler.with(p) { $0.fieldComplete() } }
        s.pointee.on_headers_complete = { p in HTTPRequestAssembler.with(p) { $0.headersComplete() } }
        s.pointee.on_body = { p, at, n in HTTPRequestAssembler.with(p) { $0.bodyData(at!, n) } }
        s.pointee.on_message_complete = { p in HTTPRequestAssembler.with(p) { $0.messageComplete() } }
        return s
    }()

    /// Calls `body` with the assembler of a parser, without retaining it: `parse` runs every callback while
    /// the assembler is alive. (llhttp passes the parser it was given, and its data callbacks a pointer
    /// into the bytes being parsed: neither is ever nil.)
    @inline(__always)
    private static func with(_ parser: UnsafeMutablePointer<llhttp_t>?, _ body: (HTTPRequestAssembler) -> Int32) -> Int32 {
        Unmanaged<HTTPRequestAssembler>.fromOpaque(parser!.pointee.data)._withUnsafeGuaranteedRef(body)
    }
}
