import Foundation

/// One entry of Directus's error envelope `{"errors":[{"message","extensions":{"code",…}}]}`.
public struct DirectusErrorEntry: Sendable, Equatable {
    /// `extensions.code`, e.g. `FORBIDDEN`.
    public var code: DirectusErrorCode
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
    public var code: DirectusErrorCode? {
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
        code == .tokenExpired || code == .invalidToken
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
            DirectusErrorEntry(code: DirectusErrorCode(e["extensions"]?["code"]?.stringValue ?? "UNKNOWN"),
                               message: e["message"]?.stringValue ?? "",
                               field: e["extensions"]?["field"]?.stringValue)
        }
        return .api(status: response.status, errors: entries)
    }
}
