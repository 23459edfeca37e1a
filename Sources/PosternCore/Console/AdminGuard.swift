import FoundationEssentials
import PosternHTTP

/// The admin listener's guard (docs/api.md, Operator console): every request whose path is under `/admin/`
/// needs `Authorization: Bearer <admin.token>`, checked before routing, so that an unknown `/admin/…` path
/// tells nothing to a caller without the token and any route added under `/admin/` is guarded without a
/// word of its own. `/`, `/metrics`, `/healthz` and `/readyz` are not under it. Failed authentications are
/// limited per client IP and logged (`AdminAuthFailures`).
struct AdminGuard: Sendable {
    /// The SHA-256 of the configured token; nil when none is configured (`/admin/…` is then 403 `admin_disabled`).
    private let digest: [UInt8]?
    /// The count of failed authentications per client IP, and their log lines.
    private let failures: AdminAuthFailures?

    /// The guard of `config.token` (empty: no token, the operator API is off), with its failures counted and
    /// logged by `failures` (none: not limited, as in tests of the comparison alone).
    init(_ config: AdminConfig, failures: AdminAuthFailures? = nil) {
        digest = config.token.isEmpty ? nil : Crypto.sha256(config.token)
        self.failures = failures
    }

    /// True for a path the guard covers: `/admin/` and everything below it (compared bytewise).
    static func covers(_ path: String) -> Bool {
        path.utf8.starts(with: "/admin/".utf8)
    }

    /// Lets the request through, or throws the answer: 403 `admin_disabled` when no token is configured,
    /// 401 `unauthorized` (with `WWW-Authenticate: Bearer`) when the bearer token is missing or wrong. The
    /// token is compared as SHA-256 digests with `CRYPTO_memcmp`: the time taken says nothing about how much
    /// of it matched, nor its length.
    func check(_ request: HTTPRequest) throws(GatewayError) {
        guard let digest else {
            throw GatewayError(status: 403, code: .adminDisabled,
                               message: "the operator API is off: set admin.token (POSTERN_ADMIN_TOKEN) to turn it on")
        }
        guard let presented = AuthenticationStage.bearer(request.headers["Authorization"]) else {
            throw GatewayError(status: 401, code: .unauthorized, message: "missing admin bearer token",
                               headers: ["WWW-Authenticate": "Bearer realm=\"postern-admin\""])
        }
        guard Crypto.constantTimeEquals(Crypto.sha256(presented), digest) else {
            throw GatewayError(status: 401, code: .unauthorized, message: "wrong admin token",
                               headers: ["WWW-Authenticate": "Bearer realm=\"postern-admin\", error=\"invalid_token\""])
        }
    }

    /// `check` with the failures counted: 429 for a client IP past the limit (before the token is compared), a
    /// failure kept and logged, a success given back.
    func check(_ request: HTTPRequest, _ context: RequestContext) throws(GatewayError) {
        guard let failures, digest != nil else { return try check(request) }
        let ip = context.clientIP
        try failures.claim(ip: ip)
        do throws(GatewayError) {
            try check(request)
        } catch {
            let missing = AuthenticationStage.bearer(request.headers["Authorization"]) == nil
            failures.failed(ip: ip, path: request.path, reason: missing ? "missing_token" : "wrong_token",
                            requestID: context.requestID)
            throw error
        }
        failures.succeeded(ip: ip)
    }

    /// `endpoint` behind the guard: the guard's answer first, then the endpoint's (routed or the 404 one).
    func guarding(_ endpoint: Endpoint) -> Endpoint {
        Endpoint { [self] request, context throws(GatewayError) in
            try check(request, context)
            return try await endpoint.respond(to: request, context: context)
        }
    }
}
