import Synchronization
import PosternHTTP

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
    /// id; its `traceparent` (with `tracestate`) when valid, else a new trace. `traceparent` is parsed only when
    /// present, and one draw gives a new trace id and the gateway's span id.
    static func start(_ headers: HTTPHeaders) -> (id: String, trace: TraceContext) {
        let given = headers["X-Request-Id"]
        let keep = given.map(safe) ?? false
        let draw = next()
        var trace: TraceContext?
        if let parent = headers["traceparent"] {
            trace = TraceContext.parse(parent, state: headers["tracestate"], spanID: draw.span)
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

    /// Random start and odd step of the id sequence, drawn once from the system's secure generator.
    private static let seed: (start: UInt64, step: UInt64) = {
        let bytes = Crypto.randomBytes(16)
        var start: UInt64 = 0
        var step: UInt64 = 0
        for i in 0..<8 {
            start = start << 8 | UInt64(bytes[i])
            step = step << 8 | UInt64(bytes[8 + i])
        }
        return (start, step | 1)
    }()
    /// How many ids were drawn (one atomic add per request: no lock, no system call, no OpenSSL call).
    private static let counter = Atomic<UInt64>(0)

    /// A new trace id (two words, never both zero) and span id (never zero): a counter taken through a bijective
    /// mix (so trace ids never repeat within a process) keyed by a random seed (so they do not repeat across
    /// restarts and are not guessable by counting). They correlate log lines and traces; they are not secrets.
    @inline(__always)
    private static func next() -> (high: UInt64, low: UInt64, span: UInt64) {
        let n = counter.add(1, ordering: .relaxed).newValue
        let high = mix(seed.start &+ n &* seed.step)
        let low = mix(high ^ seed.step)
        let span = mix(low ^ seed.start)
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

    /// The splitmix64 finaliser: a bijection on 64 bits that spreads every input bit.
    private static func mix(_ value: UInt64) -> UInt64 {
        var z = value
        z = (z ^ (z >> 30)) &* 0xbf58476d1ce4e5b9
        z = (z ^ (z >> 27)) &* 0x94d049bb133111eb
        return z ^ (z >> 31)
    }
}
