import PosternHTTP
import PosternIO

/// The request id and trace context of a new request: the client's request id when it is safe
/// (`[A-Za-z0-9._-]{1,128}`), else the trace id; the client's trace when its `traceparent` is valid, else a new one.
enum RequestID {
    /// `given` if safe, else a new trace id (32 hex digits).
    static func accept(_ given: String?) -> String {
        if let given, safe(given) { return given }
        return generate().id
    }

    /// True for a client request id that may be kept: `[A-Za-z0-9._-]{1,128}`.
    static func safe(_ given: String) -> Bool {
        !given.isEmpty && given.utf8.count <= 128 && given.utf8.allSatisfy { b in
            (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 46 || b == 95 || b == 45
        }
    }

    /// The request id and trace context of a request with `headers`: its `X-Request-Id` when safe, else the trace
    /// id; its `traceparent` (with its `tracestate` lines combined: `traceState`) when valid, else a new trace. `traceparent` is parsed only when
    /// present, and one draw gives a new trace id and the gateway's span id.
    static func start(_ headers: HTTPHeaders) -> (id: String, trace: TraceContext) {
        let given = headers["X-Request-Id"]
        let keep = given.map(safe) ?? false
        let draw = next()
        var trace: TraceContext?
        if let parent = headers["traceparent"] {
            trace = TraceContext.parse(parent, state: traceState(headers), spanID: draw.span)
        }
        let context = trace ?? TraceContext(traceHigh: draw.high, traceLow: draw.low, spanID: draw.span, flags: 1,
                                            fromClient: false, state: nil)
        if keep, let given { return (given, context) }
        return (trace == nil ? hex(draw.high, draw.low) : context.traceID, context)
    }

    /// A new request id (a new trace id) and the trace it starts.
    static func generate() -> (id: String, trace: TraceContext) {
        let draw = next()
        return (hex(draw.high, draw.low), TraceContext(traceHigh: draw.high, traceLow: draw.low, spanID: draw.span,
                                                        flags: 1, fromClient: false, state: nil))
    }

    /// A new trace context (numbers only, no string), for contexts built without a request (tests, tools).
    static func newTrace() -> TraceContext {
        let draw = next()
        return TraceContext(traceHigh: draw.high, traceLow: draw.low, spanID: draw.span, flags: 1, fromClient: false, state: nil)
    }

    /// A new trace id (two words, never both zero) and span id (never zero), from the kernel's CSPRNG through the
    /// loop's buffer (`KernelRandom`): no id says anything about another one, nor how many requests came between.
    @inline(__always)
    private static func next() -> (high: UInt64, low: UInt64, span: UInt64) {
        let (high, low, span) = KernelRandom.threeWords()
        return (high, high | low == 0 ? 1 : low, span == 0 ? 1 : span)
    }

    /// `high` and `low` as 32 lower-case hex digits.
    private static func hex(_ high: UInt64, _ low: UInt64) -> String {
        String(unsafeUninitializedCapacity: 32) { out in
            // Safe: `out` has room for 32 bytes.
            let base = out.baseAddress!
            TraceContext.writeHex(high, base)
            TraceContext.writeHex(low, base + 16)
            return 32
        }
    }
}
