import FoundationEssentials
import PosternHTTP

/// The admin listener's guard (docs/api.md, Operator console): every request whose path is under `/admin/`
/// needs `Authorization: Bearer <admin.token>`, checked before routing, so that an unknown `/admin/…` path
/// tells nothing to a caller without the token and any route added under `/admin/` is guarded without a
/// word of its own. `/`, `/metrics`, `/healthz` and `/readyz` are not under it.
struct AdminGuard: Sendable {
    /// The SHA-256 of the configured token; nil when none is configured (`/admin/…` is then 403 `admin_disabled`).
    private let digest: [UInt8]?

    /// The guard of `config.token` (empty: no token, the operator API is off).
    init(_ config: AdminConfig) {
        digest = config.token.isEmpty ? nil : Crypto.sha256(config.token)
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

    /// `endpoint` behind the guard: the guard's answer first, then the endpoint's (routed or the 404 one).
    func guarding(_ endpoint: Endpoint) -> Endpoint {
        Endpoint { [self] request, context throws(GatewayError) in
            try check(request)
            return try await endpoint.respond(to: request, context: context)
        }
    }
}
