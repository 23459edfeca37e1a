import Foundation

/// One entry of Directus's error envelope `{"errors":[{"message","extensions":{"code",…}}]}`.
public struct DirectusErrorEntry: Sendable, Equatable {
    /// `extensions.code`, e.g. `FORBIDDEN`.
    public var code: String
    /// The message (logged, never matched on).
    public var message: String
    /// `extensions.field`, when present.
    public var field: String?
}

/// Why a Directus call failed.
public enum DirectusError: Error, Sendable, Equatable {
    /// Directus answered an error status with its envelope.
    case api(status: Int, errors: [DirectusErrorEntry])
    /// Directus could not be reached, timed out, or hung up.
    case transport(UpstreamFailure)
    /// Directus answered something unusable (5xx without envelope, not JSON, wrong shape).
    case badAnswer(String)

    /// The first error code, if Directus sent an envelope.
    public var code: String? {
        if case .api(_, let errors) = self { return errors.first?.code }
        return nil
    }

    /// The HTTP status Directus answered, if any.
    public var status: Int? {
        if case .api(let status, _) = self { return status }
        return nil
    }

    /// True for an expired or invalid Directus access token (refresh once and retry).
    public var isStaleToken: Bool {
        code == "TOKEN_EXPIRED" || code == "INVALID_TOKEN"
    }

    /// Decodes an error answer; anything not a Directus envelope is a bad answer.
    static func from(_ response: UpstreamResponse) -> DirectusError {
        if response.status >= 500 {
            return .badAnswer("Directus answered \(response.status)")
        }
        guard let json = try? JSONValue.parse(response.body), let list = json["errors"]?.arrayValue, !list.isEmpty else {
            return .badAnswer("Directus answered \(response.status) without an error envelope")
        }
        let entries = list.map { e in
            DirectusErrorEntry(code: e["extensions"]?["code"]?.stringValue ?? "UNKNOWN",
                               message: e["message"]?.stringValue ?? "",
                               field: e["extensions"]?["field"]?.stringValue)
        }
        return .api(status: response.status, errors: entries)
    }

    /// The default translation into a gateway answer (DESIGN §1.3). Callers handle FORBIDDEN,
    /// credentials and token cases that depend on the route before falling back to this.
    public func gatewayError(fieldName: (String) -> String? = { _ in nil }) -> GatewayError {
        switch self {
        case .transport(.unreachable(let why)): return .upstreamUnavailable(why)
        case .transport(.timeout): return .upstreamTimeout("no answer in time")
        case .transport(.closed): return .upstreamError("connection closed by Directus")
        case .transport(.badResponse(let why)): return .upstreamError(why)
        case .badAnswer(let why): return .upstreamError(why)
        case .api(let status, let errors):
            let first = errors.first
            switch first?.code {
            case "RECORD_NOT_UNIQUE":
                let field = first?.field.flatMap(fieldName) ?? first?.field ?? "value"
                return .conflict("\(field) is already taken")
            case "INVALID_PAYLOAD", "FAILED_VALIDATION", "INVALID_QUERY", "VALUE_TOO_LONG", "VALUE_OUT_OF_RANGE",
                 "NOT_NULL_VIOLATION", "INVALID_FOREIGN_KEY", "CONTAINS_NULL_VALUES":
                if let field = first?.field {
                    let name = fieldName(field) ?? field
                    return .invalidRequest("invalid value for field \"\(name)\"")
                }
                return .invalidRequest("the request was rejected as invalid")
            case "REQUESTS_EXCEEDED":
                return .rateLimited(retryAfter: 60)
            case "FORBIDDEN":
                return .forbidden()
            case "TOKEN_EXPIRED", "INVALID_TOKEN", "INVALID_CREDENTIALS":
                return .unauthorized()
            case "ROUTE_NOT_FOUND":
                return .upstreamError("Directus route not found (is the collection set up?)")
            default:
                return .upstreamError("Directus answered \(status) \(first?.code ?? "")")
            }
        }
    }
}
