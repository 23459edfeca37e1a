import FoundationEssentials
import PosternHTTP
import PosternIO

/// One entry of Directus's error envelope `{"errors":[{"message","extensions":{"code",…}}]}`.
package struct DirectusErrorEntry: Sendable, Equatable {
    /// `extensions.code`, e.g. `FORBIDDEN`.
    var code: DirectusErrorCode
    /// The message (logged, never matched on).
    var message: String
    /// `extensions.field`, when present.
    var field: String?
    /// The answer's `Retry-After` header on a 429 or 503, as it came (passed on to the client).
    var retryAfter: String? = nil
}

/// Why a Directus call failed.
package enum DirectusError: Error, Sendable, Equatable {
    /// Directus answered an error status with its envelope.
    case api(status: Int, errors: [DirectusErrorEntry])
    /// Directus could not be reached, timed out, or hung up.
    case transport(UpstreamFailure)
    /// Directus answered something unusable (5xx without envelope, not JSON, wrong shape).
    case badAnswer(String)

    /// The first error code, if Directus sent an envelope.
    var code: DirectusErrorCode? {
        if case .api(_, let errors) = self { return errors.first?.code }
        return nil
    }

    /// The HTTP status Directus answered, if any.
    var status: Int? {
        if case .api(let status, _) = self { return status }
        return nil
    }

    /// True for an expired or invalid Directus access token (refresh once and retry).
    var isStaleToken: Bool {
        code == .tokenExpired || code == .invalidToken
    }

    /// Decodes an error answer; anything not a Directus envelope is a bad answer.
    /// A 503 is Directus saying it cannot serve now (`SERVICE_UNAVAILABLE` from its pressure limiter, or
    /// `/server/health` answering `{"status":"error"}`), with or without an envelope.
    static func from(_ response: UpstreamResponse) -> DirectusError {
        let json = try? JSONValue.parse(response.body)
        var entries = (json?["errors"]?.arrayValue ?? []).map { e in
            DirectusErrorEntry(code: DirectusErrorCode(e["extensions"]?["code"]?.stringValue ?? "UNKNOWN"),
                               message: e["message"]?.stringValue ?? "",
                               field: e["extensions"]?["field"]?.stringValue)
        }
        if response.status == 503 && entries.isEmpty {
            entries = [DirectusErrorEntry(code: DirectusErrorCode("SERVICE_UNAVAILABLE"), message: "Directus answered 503")]
        }
        if response.status == 503 || response.status == 429, let value = retryAfter(response.headers["Retry-After"]) {
            for index in entries.indices { entries[index].retryAfter = value }
        }
        if response.status >= 500 && response.status != 503 {
            return .badAnswer("Directus answered \(response.status)")
        }
        guard !entries.isEmpty else {
            return .badAnswer("Directus answered \(response.status) without an error envelope")
        }
        return .api(status: response.status, errors: entries)
    }

    /// A `Retry-After` value worth passing on: delay seconds or an HTTP date, printable ASCII, not too long.
    private static func retryAfter(_ raw: String?) -> String? {
        guard let value = raw?.trimmedSpaces(), !value.isEmpty, value.utf8.count <= 64,
              value.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x7F }) else { return nil }
        return value
    }
}
