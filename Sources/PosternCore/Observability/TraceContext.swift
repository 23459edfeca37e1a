import FoundationEssentials
import PosternIO

/// A request's W3C trace context (https://www.w3.org/TR/trace-context/): the trace it belongs to, the gateway's
/// own span in it, and what the client sent along.
///
/// Kept as numbers: the hex forms are written where they go (the upstream request head, the access log line)
/// without a string per request; only `traceResponse` and the id of a trace a client started build one.
package struct TraceContext: Sendable, Equatable {
    /// The trace id's first 8 bytes (big-endian).
    let traceHigh: UInt64
    /// The trace id's last 8 bytes (big-endian).
    let traceLow: UInt64
    /// The gateway's span id, new for every request: the parent id of every upstream call. Never zero.
    let spanID: UInt64
    /// The trace flags, as the client sent them, or `01` (sampled) for a trace the gateway started.
    let flags: UInt8
    /// True when the client sent a valid `traceparent` (the answer then carries `traceresponse`).
    let fromClient: Bool
    /// The client's `tracestate`, as it came, passed on with a client's valid `traceparent` only
    /// (nil: none, over `maxStateBytes`, or with a byte outside printable ASCII).
    let state: String?

    /// Longest `tracestate` passed on, in bytes (the W3C limit for a whole list); a longer one is dropped.
    static let maxStateBytes = 512

    /// A context from its parts.
    init(traceHigh: UInt64, traceLow: UInt64, spanID: UInt64, flags: UInt8, fromClient: Bool, state: String?) {
        self.traceHigh = traceHigh
        self.traceLow = traceLow
        self.spanID = spanID
        self.flags = flags
        self.fromClient = fromClient
        self.state = state
    }

    /// The context of a request that sent `traceparent` (and `tracestate`): the client's trace with `spanID` as the
    /// gateway's span when `traceparent` is valid, else nil (the caller starts a trace: an invalid one is ignored,
    /// never refused).
    static func parse(_ traceparent: String, state: String?, spanID: UInt64) -> TraceContext? {
        var text = traceparent
        return text.withUTF8 { b -> TraceContext? in
            // version "-" trace-id "-" parent-id "-" flags: 2 + 1 + 32 + 1 + 16 + 1 + 2 = 55 bytes. A later version
            // than 00 may append fields after a "-" (read as 00); version ff is invalid.
            guard b.count >= 55, let version = hexByte(b, 0), version != 0xff,
                  b.count == 55 || (version != 0 && b[55] == UInt8(ascii: "-")),
                  b[2] == UInt8(ascii: "-"), b[35] == UInt8(ascii: "-"), b[52] == UInt8(ascii: "-"),
                  let high = hex64(b, 3), let low = hex64(b, 19), let parent = hex64(b, 36), let flags = hexByte(b, 53),
                  high | low != 0, parent != 0 else { return nil }
            return TraceContext(traceHigh: high, traceLow: low, spanID: spanID, flags: flags, fromClient: true,
                                state: state.flatMap(acceptedState))
        }
    }

    /// `state` when it may be passed on: at most `maxStateBytes` bytes of printable ASCII.
    private static func acceptedState(_ state: String) -> String? {
        guard !state.isEmpty, state.utf8.count <= maxStateBytes, state.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7f }) else {
            return nil
        }
        return state
    }

    /// The value of the lower-case hex digit `b` (nil for anything else, upper case included).
    @inline(__always)
    private static func hexValue(_ b: UInt8) -> UInt64? {
        switch b {
        case 0x30...0x39: return UInt64(b - 0x30)
        case 0x61...0x66: return UInt64(b - 0x61 + 10)
        default: return nil
        }
    }

    /// Two lower-case hex digits at `at`.
    private static func hexByte(_ b: UnsafeBufferPointer<UInt8>, _ at: Int) -> UInt8? {
        guard let high = hexValue(b[at]), let low = hexValue(b[at + 1]) else { return nil }
        return UInt8(high << 4 | low)
    }

    /// Sixteen lower-case hex digits at `at`.
    private static func hex64(_ b: UnsafeBufferPointer<UInt8>, _ at: Int) -> UInt64? {
        var value: UInt64 = 0
        for i in at..<at + 16 {
            guard let digit = hexValue(b[i]) else { return nil }
            value = value << 4 | digit
        }
        return value
    }

    // MARK: Hex forms

    /// Lower-case hex digits.
    private static let digits: StaticString = "0123456789abcdef"

    /// Writes `value` as 16 lower-case hex digits at `out` (two 8-byte stores, no digit loop).
    @inline(__always)
    static func writeHex(_ value: UInt64, _ out: UnsafeMutablePointer<UInt8>) {
        let raw = UnsafeMutableRawPointer(out)
        raw.storeBytes(of: hexDigits(UInt32(truncatingIfNeeded: value >> 32)).littleEndian, as: UInt64.self)
        raw.storeBytes(of: hexDigits(UInt32(truncatingIfNeeded: value)).littleEndian, toByteOffset: 8, as: UInt64.self)
    }

    /// The 8 lower-case hex digits of `word`, first digit in the lowest byte: each nibble spread into a byte of its
    /// own, then `'0'` added, and `'a' - '0' - 10` more to the bytes above 9 (those that carry into bit 4 when 6 is
    /// added), all 8 at once.
    @inline(__always)
    private static func hexDigits(_ word: UInt32) -> UInt64 {
        var v = UInt64(word)
        v = (v | v << 16) & 0x0000_FFFF_0000_FFFF
        v = (v | v << 8) & 0x00FF_00FF_00FF_00FF
        v = (v | v << 4) & 0x0F0F_0F0F_0F0F_0F0F
        v = v.byteSwapped
        let letters = ((v &+ 0x0606_0606_0606_0606) >> 4) & 0x0101_0101_0101_0101
        return v &+ 0x3030_3030_3030_3030 &+ letters &* 0x27
    }

    /// The trace id, 32 lower-case hex digits.
    var traceID: String {
        String(unsafeUninitializedCapacity: 32) { out in
            // Safe: `out` has room for 32 bytes.
            let base = out.baseAddress!
            TraceContext.writeHex(traceHigh, base)
            TraceContext.writeHex(traceLow, base + 16)
            return 32
        }
    }

    /// `00-<trace id>-<span id>-<flags>` (55 bytes) written at `out`.
    func writeParent(_ out: UnsafeMutablePointer<UInt8>) {
        out[0] = 0x30
        out[1] = 0x30
        out[2] = 0x2D
        TraceContext.writeHex(traceHigh, out + 3)
        TraceContext.writeHex(traceLow, out + 19)
        out[35] = 0x2D
        TraceContext.writeHex(spanID, out + 36)
        out[52] = 0x2D
        out[53] = TraceContext.digits.utf8Start[Int(flags >> 4)]
        out[54] = TraceContext.digits.utf8Start[Int(flags & 15)]
    }

    /// `00-<trace id>-<gateway span id>-<flags>`: the `traceparent` of upstream calls and the `traceresponse` of
    /// the answer.
    var traceparent: String {
        String(unsafeUninitializedCapacity: 55) { out in
            // Safe: `out` has room for 55 bytes.
            writeParent(out.baseAddress!)
            return 55
        }
    }

    /// Writes the head fields of an upstream call to `output`: `traceparent`, and `tracestate` when the client
    /// sent one (printable ASCII, checked when parsed).
    func appendFields(to output: RawBytes) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 70) { buffer in
            // Safe: a temporary allocation of 70 bytes always has a base address.
            let out = buffer.baseAddress!
            let name: StaticString = "traceparent: "
            out.update(from: name.utf8Start, count: 13)
            writeParent(out + 13)
            out[68] = 13
            out[69] = 10
            output.append(UnsafeRawPointer(out), 70)
        }
        if let state {
            output.append("tracestate: " as StaticString)
            output.append(state)
            output.append(13, 10)
        }
    }

    /// Writes the trace id as a JSON string (quoted, 32 hex digits) to `bytes`.
    func appendQuotedTraceID(to bytes: inout [UInt8]) {
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 34) { buffer in
            // Safe: a temporary allocation of 34 bytes always has a base address.
            let out = buffer.baseAddress!
            out[0] = 0x22
            TraceContext.writeHex(traceHigh, out + 1)
            TraceContext.writeHex(traceLow, out + 17)
            out[33] = 0x22
            bytes.append(contentsOf: UnsafeBufferPointer(start: out, count: 34))
        }
    }
}
