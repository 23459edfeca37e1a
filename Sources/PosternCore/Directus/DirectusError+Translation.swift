import FoundationEssentials
import PosternHTTP

// How Directus errors become Postern errors (docs/api.md, Errors): one translator per operation,
// all on `DirectusErrorCode`, never on raw strings. The default translation is the table's
// general rows; each operation handles its own codes first.

extension DirectusError {
    /// The default translation into a gateway answer; `fieldName` maps a Directus field to the resource's.
    func gatewayError(fieldName: (String) -> String? = { _ in nil }) -> GatewayError {
        switch self {
        case .transport(.unreachable(let why)): return .upstreamUnavailable(why)
        case .transport(.timeout): return .upstreamTimeout("no answer in time")
        case .transport(.closed): return .upstreamError("connection closed by Directus")
        case .transport(.badResponse(let why)): return .upstreamError(why)
        case .badAnswer(let why): return .upstreamError(why)
        case .api(let status, let errors):
            let first = errors.first
            if status == 503 {
                // Directus cannot serve now (pressure limiter, health): unavailable, with its Retry-After.
                var error = GatewayError.upstreamUnavailable("Directus answered 503 \(first?.code.rawValue ?? "")")
                if let retryAfter = first?.retryAfter { error.headers.set("Retry-After", retryAfter) }
                return error
            }
            switch first?.code {
            case .recordNotUnique:
                let field = first?.field.flatMap(fieldName) ?? first?.field ?? "value"
                return .conflict("\(field) is already taken")
            case let code? where code.rejectsInput:
                if let field = first?.field {
                    let name = fieldName(field) ?? field
                    return .invalidRequest("invalid value for field \"\(name)\"")
                }
                return .invalidRequest("the request was rejected as invalid")
            case .requestsExceeded:
                var error = GatewayError.rateLimited(retryAfter: 60)
                if let retryAfter = first?.retryAfter { error.headers.set("Retry-After", retryAfter) }
                return error
            case .forbidden:
                return .forbidden()
            case .tokenExpired, .invalidToken, .invalidCredentials:
                return .unauthorized()
            case .routeNotFound:
                return .upstreamError("Directus route not found (is the collection set up?)")
            default:
                return .upstreamError("Directus answered \(status) \(first?.code.rawValue ?? "")")
            }
        }
    }

    /// `POST /auth/login`: refused credentials (wrong password, suspended, OTP, IP) are 401 `invalid_credentials`.
    func forLogin() -> GatewayError {
        switch code {
        case .invalidCredentials, .userSuspended, .invalidOTP, .invalidIP: return .invalidCredentials
        case .invalidPayload: return .invalidRequest("email must be a valid email address and password a string")
        default: return gatewayError()
        }
    }

    /// `POST /users/register` or `POST /users`: a taken email is 409, a refused registration 403.
    func forRegistration() -> GatewayError {
        switch code {
        case .recordNotUnique: return .conflict("email already registered")
        case .forbidden: return .forbidden("registration is disabled")
        case .failedValidation, .invalidPayload: return .invalidRequest("invalid \(firstField ?? "email or password")")
        default: return gatewayError()
        }
    }

    /// True when Directus refused a session's refresh token (the session is dead).
    var refusesRefreshToken: Bool {
        guard let status else { return false }
        return status == 401 || status == 403 || status == 400
    }

    /// `POST /auth/refresh` for a session's Directus tokens: a refused refresh token is 401 "session expired".
    func forTokenRefresh() -> GatewayError {
        refusesRefreshToken ? .unauthorized("session expired") : gatewayError()
    }

    /// An item call (read, list, create, update, delete): `FORBIDDEN` becomes `forbidden` (404 or 403, as the
    /// caller decided), validation errors name the resource's field.
    func forItemCall(forbidden: GatewayError, fieldName: (String) -> String?) -> GatewayError {
        code == .forbidden ? forbidden : gatewayError(fieldName: fieldName)
    }

    /// `extensions.field` of the first error, if any.
    var firstField: String? {
        if case .api(_, let errors) = self { return errors.first?.field }
        return nil
    }
}
