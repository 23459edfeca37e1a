import Foundation
import Synchronization

// The edge stages at the head of every chain, outermost first: observation (metrics, access log),
// response headers, CORS decoration, the request-target limit, CORS preflight, error rendering.
// Every route's responders, its 405 answer and the 404 answer are wrapped in the same stages.

/// Records every answer in the metrics and the access log, with the request's trace bound for the stages below.
struct ObservationMiddleware: Middleware {
    /// The metrics registry this stage uses.
    let metrics: Metrics
    /// The access log this stage uses.
    let log: AccessLog

    /// Runs the stage around `next`.
    func handle(_ request: HTTPRequest, context: RequestContext, next: any Responder) async throws(GatewayError) -> HTTPResponse {
        let trace = RequestTrace()
        let response = await RequestTrace.$current.withValue(trace) { () async -> HTTPResponse in
            do throws(GatewayError) {
                return try await next.respond(to: request, context: context)
            } catch {
                return ErrorRenderer.render(error, context: context)  // the stages below render every error; a safety net
            }
        }
        metrics.request(route: context.routePattern, method: ObservationMiddleware.methodLabel(request.method),
                        status: response.status, seconds: (ContinuousClock.now - context.startedAt).seconds)
        log.access(request, response, context: context, trace: trace)
        return response
    }

    /// A bounded method label for metrics.
    static func methodLabel(_ method: HTTPMethod) -> String {
        if case .other = method { return "OTHER" }
        return method.description
    }
}

/// Headers on every answer: the request id, `nosniff`, and `Cache-Control: no-store` under `/api/`.
struct ResponseHeadersMiddleware: Middleware {
    /// Runs the stage around `next`.
    func handle(_ request: HTTPRequest, context: RequestContext, next: any Responder) async throws(GatewayError) -> HTTPResponse {
        var response = try await next.respond(to: request, context: context)
        ResponseHeadersMiddleware.decorate(&response, path: request.path, requestID: context.requestID)
        return response
    }

    /// Sets the headers every answer carries (also used for answers refused before routing).
    static func decorate(_ response: inout HTTPResponse, path: String, requestID: String) {
        response.headers.reserve(3)  // one copy at most (a cached answer's list is shared with the cache)
        response.headers.set("X-Request-Id", requestID)
        response.headers.set("X-Content-Type-Options", "nosniff")
        if path.hasPrefix("/api/") { response.headers.set("Cache-Control", "no-store") }
    }
}

/// Adds the CORS headers of an allowed origin to every answer.
struct CORSHeadersMiddleware: Middleware {
    /// The CORS policy this stage uses.
    let cors: CORSPolicy

    /// Runs the stage around `next`.
    func handle(_ request: HTTPRequest, context: RequestContext, next: any Responder) async throws(GatewayError) -> HTTPResponse {
        var response = try await next.respond(to: request, context: context)
        cors.decorate(&response, origin: request.headers["Origin"])
        return response
    }
}

/// Answers a request target (path and query) longer than `maxBytes` with 414.
struct TargetLengthMiddleware: Middleware {
    /// Longest accepted request target, in bytes.
    static let maxBytes = 8192

    /// Runs the stage around `next`.
    func handle(_ request: HTTPRequest, context: RequestContext, next: any Responder) async throws(GatewayError) -> HTTPResponse {
        guard request.path.utf8.count + request.query.utf8.count <= TargetLengthMiddleware.maxBytes else {
            return ErrorRenderer.render(GatewayError(status: 414, code: .uriTooLong, message: "request target too long"),
                                        context: context)
        }
        return try await next.respond(to: request, context: context)
    }
}

/// Answers CORS preflights before routing and authentication.
struct CORSPreflightMiddleware: Middleware {
    /// The CORS policy this stage uses.
    let cors: CORSPolicy

    /// Runs the stage around `next`.
    func handle(_ request: HTTPRequest, context: RequestContext, next: any Responder) async throws(GatewayError) -> HTTPResponse {
        if cors.isPreflight(request) { return cors.preflight(request) }
        return try await next.respond(to: request, context: context)
    }
}

/// Renders the errors of the stages below as JSON answers, and logs them.
struct ErrorRenderingMiddleware: Middleware {
    /// The access log this stage uses.
    let log: AccessLog

    /// Runs the stage around `next`.
    func handle(_ request: HTTPRequest, context: RequestContext, next: any Responder) async throws(GatewayError) -> HTTPResponse {
        do throws(GatewayError) {
            return try await next.respond(to: request, context: context)
        } catch {
            log.error(error, context: context)
            return ErrorRenderer.render(error, context: context)
        }
    }
}

/// A responder that answers with an error, rendered (for 404 and 405, which are not logged as errors).
struct RenderedErrorResponder: Responder {
    /// The error it answers with.
    let error: GatewayError

    /// Answers with the rendered error.
    func respond(to request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        ErrorRenderer.render(error, context: context)
    }
}

/// The client's request id when it is safe (`[A-Za-z0-9._-]{1,128}`), else a new one.
enum RequestID {
    /// `given` if safe, else 24 random hex digits.
    static func accept(_ given: String?) -> String {
        if let given, !given.isEmpty, given.utf8.count <= 128, given.utf8.allSatisfy({ b in
            (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 46 || b == 95 || b == 45
        }) {
            return given
        }
        return generate()
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
    /// How many ids were generated (one atomic add per id: no lock, no system call, no OpenSSL call).
    private static let counter = Atomic<UInt64>(0)

    /// 24 hex digits: a counter taken through a bijective mix (so ids never repeat within a process) keyed by a
    /// random seed (so they do not repeat across restarts and are not guessable by counting). An id
    /// correlates log lines; it is not a secret.
    static func generate() -> String {
        let n = counter.add(1, ordering: .relaxed).newValue
        let a = mix(seed.start &+ n &* seed.step)
        let b = mix(a ^ seed.step)
        let digits: StaticString = "0123456789abcdef"
        return String(unsafeUninitializedCapacity: 24) { out in
            for i in 0..<16 { out[i] = digits.utf8Start[Int(a >> UInt64(60 - 4 * i) & 15)] }
            for i in 0..<8 { out[16 + i] = digits.utf8Start[Int(b >> UInt64(28 - 4 * i) & 15)] }
            return 24
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
