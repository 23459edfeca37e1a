/// An error that knows its HTTP answer: status, public code and message, and a private cause for logs.
import PosternHTTP

package struct GatewayError: Error, Sendable, CustomStringConvertible {
    /// The HTTP status.
    var status: Int
    /// The machine-readable code (`invalid_request`, `unauthorized`, …).
    var code: PosternErrorCode
    /// The message shown to the client (never a secret).
    var message: String
    /// Extra response headers (`Allow`, `Retry-After`, `WWW-Authenticate`).
    var headers: HTTPHeaders
    /// A private cause, for logs only.
    var cause: String?

    /// Builds an error.
    init(status: Int, code: PosternErrorCode, message: String, headers: HTTPHeaders = HTTPHeaders(), cause: String? = nil) {
        self.status = status
        self.code = code
        self.message = message
        self.headers = headers
        self.cause = cause
    }

    /// A log-friendly description (never sent to clients).
    package var description: String { "\(status) \(code.rawValue): \(message)" + (cause.map { " (\($0))" } ?? "") }

    /// 400 `invalid_request`.
    static func invalidRequest(_ message: String) -> GatewayError {
        GatewayError(status: 400, code: .invalidRequest, message: message)
    }

    /// 401 `unauthorized`, with `WWW-Authenticate`.
    static func unauthorized(_ message: String = "missing, invalid or expired token") -> GatewayError {
        GatewayError(status: 401, code: .unauthorized, message: message,
                     headers: ["WWW-Authenticate": "Bearer error=\"invalid_token\""])
    }

    /// 401 `invalid_credentials`.
    static let invalidCredentials = GatewayError(status: 401, code: .invalidCredentials,
                                                        message: "wrong email or password")

    /// 403 `forbidden`.
    static func forbidden(_ message: String = "you may not do this") -> GatewayError {
        GatewayError(status: 403, code: .forbidden, message: message)
    }

    /// 404 `not_found`.
    static func notFound(_ message: String = "not found") -> GatewayError {
        GatewayError(status: 404, code: .notFound, message: message)
    }

    /// 405 `method_not_allowed`, with `Allow`.
    static func methodNotAllowed(_ allowed: [HTTPMethod]) -> GatewayError {
        GatewayError(status: 405, code: .methodNotAllowed, message: "method not allowed",
                     headers: ["Allow": allowed.map(\.description).joined(separator: ", ")])
    }

    /// 409 `conflict`.
    static func conflict(_ message: String) -> GatewayError {
        GatewayError(status: 409, code: .conflict, message: message)
    }

    /// 413 `payload_too_large`.
    static func payloadTooLarge(_ limit: Int) -> GatewayError {
        GatewayError(status: 413, code: .payloadTooLarge, message: "request body larger than \(limit) bytes")
    }

    /// 429 `rate_limited`, with `Retry-After`.
    static func rateLimited(retryAfter seconds: Int) -> GatewayError {
        GatewayError(status: 429, code: .rateLimited, message: "too many requests, retry later",
                     headers: ["Retry-After": String(max(1, seconds))])
    }

    /// 502 `upstream_error`.
    static func upstreamError(_ cause: String) -> GatewayError {
        GatewayError(status: 502, code: .upstreamError, message: "the CMS answered something unusable", cause: cause)
    }

    /// 503 `upstream_unavailable`.
    static func upstreamUnavailable(_ cause: String) -> GatewayError {
        GatewayError(status: 503, code: .upstreamUnavailable, message: "the CMS cannot be reached", cause: cause)
    }

    /// 503 `session_store_unavailable`: the session store cannot answer, so a token can be neither
    /// accepted nor refused (never a 401 for that).
    static func sessionStoreUnavailable(_ cause: String) -> GatewayError {
        GatewayError(status: 503, code: .sessionStoreUnavailable, message: "the session store is unavailable; try again shortly", cause: cause)
    }

    /// 504 `upstream_timeout`.
    static func upstreamTimeout(_ cause: String) -> GatewayError {
        GatewayError(status: 504, code: .upstreamTimeout, message: "the CMS did not answer in time", cause: cause)
    }

    /// 500 `internal_error` (no detail leaked).
    static func internalError(_ cause: String) -> GatewayError {
        GatewayError(status: 500, code: .internalError, message: "internal error", cause: cause)
    }
}
