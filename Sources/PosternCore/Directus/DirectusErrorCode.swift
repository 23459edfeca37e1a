/// The `extensions.code` values of Directus error answers that Postern acts on; anything else is `.other`.
package enum DirectusErrorCode: Sendable, Hashable, CustomStringConvertible {
    /// `FORBIDDEN`: no permission, or (for an item) missing: Directus does not tell them apart.
    case forbidden
    /// `TOKEN_EXPIRED`: the access token has expired.
    case tokenExpired
    /// `INVALID_TOKEN`: the access token is not valid.
    case invalidToken
    /// `INVALID_CREDENTIALS`: wrong email or password, or an unknown refresh token.
    case invalidCredentials
    /// `USER_SUSPENDED`: the account is not active.
    case userSuspended
    /// `INVALID_OTP`: a one-time password is needed or wrong.
    case invalidOTP
    /// `INVALID_IP`: the account may not sign in from this address.
    case invalidIP
    /// `INVALID_PAYLOAD`: the body is malformed.
    case invalidPayload
    /// `FAILED_VALIDATION`: a field value failed validation.
    case failedValidation
    /// `INVALID_QUERY`: a query parameter is malformed.
    case invalidQuery
    /// `VALUE_TOO_LONG`: a value exceeds its column.
    case valueTooLong
    /// `VALUE_OUT_OF_RANGE`: a number outside its column's range.
    case valueOutOfRange
    /// `NOT_NULL_VIOLATION`: a required value is missing.
    case notNullViolation
    /// `INVALID_FOREIGN_KEY`: a relation points at nothing.
    case invalidForeignKey
    /// `CONTAINS_NULL_VALUES`: a column change meets null values.
    case containsNullValues
    /// `RECORD_NOT_UNIQUE`: a unique value is taken.
    case recordNotUnique
    /// `REQUESTS_EXCEEDED`: Directus's own rate limiter.
    case requestsExceeded
    /// `ROUTE_NOT_FOUND`: no such endpoint (e.g. the collection does not exist).
    case routeNotFound
    /// Any other code, as sent.
    case other(String)

    private static let known: [(DirectusErrorCode, String)] = [
        (.forbidden, "FORBIDDEN"), (.tokenExpired, "TOKEN_EXPIRED"), (.invalidToken, "INVALID_TOKEN"),
        (.invalidCredentials, "INVALID_CREDENTIALS"), (.userSuspended, "USER_SUSPENDED"), (.invalidOTP, "INVALID_OTP"),
        (.invalidIP, "INVALID_IP"), (.invalidPayload, "INVALID_PAYLOAD"), (.failedValidation, "FAILED_VALIDATION"),
        (.invalidQuery, "INVALID_QUERY"), (.valueTooLong, "VALUE_TOO_LONG"), (.valueOutOfRange, "VALUE_OUT_OF_RANGE"),
        (.notNullViolation, "NOT_NULL_VIOLATION"), (.invalidForeignKey, "INVALID_FOREIGN_KEY"),
        (.containsNullValues, "CONTAINS_NULL_VALUES"), (.recordNotUnique, "RECORD_NOT_UNIQUE"),
        (.requestsExceeded, "REQUESTS_EXCEEDED"), (.routeNotFound, "ROUTE_NOT_FOUND"),
    ]

    /// The code for a wire value.
    init(_ raw: String) {
        self = DirectusErrorCode.known.first { $0.1 == raw }?.0 ?? .other(raw)
    }

    /// The wire value, e.g. `FORBIDDEN`.
    var rawValue: String {
        if case .other(let raw) = self { return raw }
        return DirectusErrorCode.known.first { $0.0 == self }?.1 ?? ""
    }

    /// The wire value.
    package var description: String { rawValue }

    /// True for the codes that reject a field value or the body's shape (400 `invalid_request`).
    var rejectsInput: Bool {
        switch self {
        case .invalidPayload, .failedValidation, .invalidQuery, .valueTooLong, .valueOutOfRange, .notNullViolation,
             .invalidForeignKey, .containsNullValues:
            return true
        default:
            return false
        }
    }
}
