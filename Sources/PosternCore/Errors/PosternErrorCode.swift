/// Postern's own error codes, the `code` of every error body (docs/api.md, Errors).
package enum PosternErrorCode: String, Sendable, Equatable, CaseIterable {
    /// 400: malformed JSON, wrong types, unknown or read-only field, bad query value.
    case invalidRequest = "invalid_request"
    /// 400 (`POST /admin/reload`): the config file is invalid; the old config keeps serving.
    case invalidConfig = "invalid_config"
    /// 409 (`POST /admin/reload`): a key that only a restart can change was changed; nothing was reloaded.
    case restartRequired = "restart_required"
    /// 401: no bearer, or an unknown, expired or revoked token.
    case unauthorized
    /// 401: login with a wrong email or password.
    case invalidCredentials = "invalid_credentials"
    /// 403: the policy denies the action.
    case forbidden
    /// 403: a call under `/admin/` while no admin token is configured (`admin.token`).
    case adminDisabled = "admin_disabled"
    /// 404: unknown route, or an item that does not exist or the caller may not read.
    case notFound = "not_found"
    /// 405: known path, other method.
    case methodNotAllowed = "method_not_allowed"
    /// 408: a request did not arrive whole within `limits.request_timeout_s`.
    case requestTimeout = "request_timeout"
    /// 409: e.g. email already registered.
    case conflict
    /// 409: an operator's session id prefix matches more than one session (`DELETE /admin/sessions/{id}`).
    case ambiguousSessionID = "ambiguous_session_id"
    /// 413: body above the configured limit.
    case payloadTooLarge = "payload_too_large"
    /// 414: request target (path and query) too long.
    case uriTooLong = "uri_too_long"
    /// 429: too many requests.
    case rateLimited = "rate_limited"
    /// 500: a bug; no detail leaked.
    case internalError = "internal_error"
    /// 502: Directus answered something unusable.
    case upstreamError = "upstream_error"
    /// 503: Directus cannot be reached.
    case upstreamUnavailable = "upstream_unavailable"
    /// 503: the shared session store (Redis) cannot be reached; the token was not judged.
    case sessionStoreUnavailable = "session_store_unavailable"
    /// 504: Directus did not answer in time.
    case upstreamTimeout = "upstream_timeout"
}
