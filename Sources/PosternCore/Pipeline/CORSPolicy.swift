import FoundationEssentials
import PosternHTTP

/// CORS (docs/api.md, Limits and defaults): which origins may call, answered before routing and authentication.
struct CORSPolicy: Sendable {
    private let anyOrigin: Bool
    private let origins: Set<String>
    private let allowCredentials: Bool
    private let maxAge: Int
    static let methods = "GET, POST, PUT, PATCH, DELETE"
    static let headers = "Authorization, Content-Type, X-Request-Id, traceparent, tracestate"

    /// A policy that allows no origin: no answer carries CORS headers, and every preflight is 403 (the admin
    /// listener's: docs/api.md, Operator console).
    static let noOrigin: CORSPolicy = {
        var config = CORSConfig()
        config.allowedOrigins = []
        return CORSPolicy(config)
    }()

    init(_ config: CORSConfig) {
        anyOrigin = config.allowedOrigins.contains("*")
        origins = Set(config.allowedOrigins.filter { $0 != "*" }.map { $0.lowercased() })
        // Never a wildcard with credentials (config validation refuses it; this keeps it so regardless).
        allowCredentials = config.allowCredentials && !anyOrigin
        maxAge = config.maxAgeSeconds
    }

    /// The `Access-Control-Allow-Origin` value for a request's `Origin`, or nil when not allowed.
    func allowedOrigin(_ origin: String?) -> String? {
        guard let origin else { return nil }
        if anyOrigin { return "*" }
        return origins.contains(origin.lowercased()) ? origin : nil
    }

    /// True for a preflight: `OPTIONS` with `Origin` and `Access-Control-Request-Method`.
    func isPreflight(_ request: HTTPRequest) -> Bool {
        request.method == .options && request.headers["Origin"] != nil && request.headers["Access-Control-Request-Method"] != nil
    }

    /// The preflight answer: 204 with the allowed methods and headers (403 for an origin not allowed).
    func preflight(_ request: HTTPRequest) -> HTTPResponse {
        guard let origin = allowedOrigin(request.headers["Origin"]) else {
            return HTTPResponse(status: 403, headers: ["Vary": "Origin"])
        }
        var headers: HTTPHeaders = [
            "Access-Control-Allow-Origin": origin, "Access-Control-Allow-Methods": CORSPolicy.methods,
            "Access-Control-Allow-Headers": CORSPolicy.headers, "Access-Control-Max-Age": String(maxAge),
        ]
        if origin != "*" { headers.add("Vary", "Origin") }
        if allowCredentials { headers.add("Access-Control-Allow-Credentials", "true") }
        return HTTPResponse(status: 204, headers: headers)
    }

    /// Adds the CORS headers of an actual (non-preflight) answer.
    func decorate(_ response: inout HTTPResponse, origin: String?) {
        guard let allowed = allowedOrigin(origin) else { return }
        response.headers.set("Access-Control-Allow-Origin", allowed)
        response.headers.set("Access-Control-Expose-Headers", "X-Request-Id, traceresponse, Retry-After, WWW-Authenticate")
        if allowed != "*" { response.headers.add("Vary", "Origin") }
        if allowCredentials { response.headers.set("Access-Control-Allow-Credentials", "true") }
    }
}
