import FoundationEssentials
import PosternHTTP

/// A Directus error answer: one status and one or more `{message, extensions:{…, code}}` entries.
package struct StandInError: Error, Sendable {
    /// One entry of the `errors` array.
    package struct Entry: Sendable {
        /// The human-readable message.
        package var message: String
        /// The `extensions.code`, e.g. `FORBIDDEN`.
        package var code: String
        /// Extra extension members, spread before `code`.
        package var extensions: [(String, JSONValue)]
    }

    /// The HTTP status.
    package var status: Int
    /// The entries, in order.
    package var entries: [Entry]

    /// One error with one entry.
    package init(status: Int, code: String, message: String, extensions: [(String, JSONValue)] = []) {
        self.status = status
        self.entries = [Entry(message: message, code: code, extensions: extensions)]
    }

    /// The Directus error envelope as a response.
    package var response: HTTPResponse {
        let errors: [JSONValue] = entries.map { entry in
            .object([
                ("message", .string(entry.message)),
                ("extensions", .object(entry.extensions + [("code", .string(entry.code))])),
            ])
        }
        return DirectusStandIn.jsonResponse(status, .object([("errors", .array(errors))]))
    }

    /// 400 `INVALID_PAYLOAD` with `Invalid payload. <reason>.`.
    static func invalidPayload(_ reason: String) -> StandInError {
        StandInError(status: 400, code: "INVALID_PAYLOAD", message: "Invalid payload. \(reason).",
                      extensions: [("reason", .string(reason))])
    }

    /// 400 `INVALID_QUERY` with `Invalid query. <reason>.`.
    static func invalidQuery(_ reason: String) -> StandInError {
        StandInError(status: 400, code: "INVALID_QUERY", message: "Invalid query. \(reason).",
                      extensions: [("reason", .string(reason))])
    }

    /// 401 `INVALID_CREDENTIALS`.
    static let invalidCredentials = StandInError(status: 401, code: "INVALID_CREDENTIALS",
                                                  message: "Invalid user credentials.")

    /// 401 `TOKEN_EXPIRED`.
    static let tokenExpired = StandInError(status: 401, code: "TOKEN_EXPIRED", message: "Token expired.")

    /// 403 `INVALID_TOKEN`.
    static let invalidToken = StandInError(status: 403, code: "INVALID_TOKEN", message: "Invalid token.")

    /// 403 `FORBIDDEN` with the default message and no reason (what `readOne` of a missing item gives).
    static let forbidden = StandInError(status: 403, code: "FORBIDDEN",
                                         message: "You don't have permission to access this.")

    /// 403 `FORBIDDEN` carrying `reason` equal to the message (v11 style).
    static func forbidden(_ message: String) -> StandInError {
        StandInError(status: 403, code: "FORBIDDEN", message: message, extensions: [("reason", .string(message))])
    }

    /// 403 for a collection that does not exist or may not be accessed.
    static func forbiddenCollection(_ collection: String, queriedIn: String = "root") -> StandInError {
        let place = queriedIn == "root" ? "root" : "\"\(queriedIn)\""
        return forbidden("You don't have permission to access collection \"\(collection)\" or it does not exist. Queried in \(place).")
    }

    /// 403 for a field that does not exist or may not be accessed.
    static func forbiddenField(_ field: String, collection: String) -> StandInError {
        forbidden("You don't have permission to access field \"\(field)\" in collection \"\(collection)\" or it does not exist. Queried in root.")
    }

    /// 403 for a field of a related collection (`queriedIn` is the relational field it was reached through).
    static func forbiddenField(_ field: String, collection: String, queriedIn: String) -> StandInError {
        let place = queriedIn == "root" ? "root" : "\"\(queriedIn)\""
        return forbidden("You don't have permission to access field \"\(field)\" in collection \"\(collection)\" or it does not exist. Queried in \(place).")
    }

    /// 400 `FAILED_VALIDATION` for one field.
    static func failedValidation(field: String, type: String, message: String) -> StandInError {
        StandInError(status: 400, code: "FAILED_VALIDATION", message: "Validation failed for field \"\(field)\". \(message)",
                      extensions: [("field", .string(field)), ("path", .array([])), ("type", .string(type))])
    }

    /// 404 `ROUTE_NOT_FOUND`.
    static func routeNotFound(_ path: String) -> StandInError {
        StandInError(status: 404, code: "ROUTE_NOT_FOUND", message: "Route \(path) doesn't exist.",
                      extensions: [("path", .string(path))])
    }

    /// 500 `INTERNAL_SERVER_ERROR`.
    static let internalError = StandInError(status: 500, code: "INTERNAL_SERVER_ERROR",
                                             message: "An unexpected error occurred.")
}
