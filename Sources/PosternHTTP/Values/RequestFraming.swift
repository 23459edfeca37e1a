import PosternIO

/// The rules on how a request says where its body ends (docs/api.md, Upstream and edge rules): when they
/// disagree, a proxy in front and the gateway could read two different requests from the same bytes.
enum RequestFraming {
    /// Why the framing of a request (its method and header lines, as received) is refused, or nil when it is fine.
    ///
    /// - More than one `Content-Length` line, even with equal values (RFC 9110 lets a recipient refuse them).
    /// - A `Content-Length` that is not plain ASCII digits (`+39`, `3 9`); leading zeros are digits (RFC 9110
    ///   `1*DIGIT`), and whitespace around the value is not part of it (the server strips it before we see it).
    /// - A `Transfer-Encoding` other than one `chunked`, or one beside a `Content-Length` (RFC 9112 §6.1, §6.3).
    /// - A body on `HEAD` or `TRACE`: many servers and proxies read none there, so its bytes would become the next request.
    static func problem(method: HTTPMethod, headers: HTTPHeaders) -> String? {
        let lengths = headers.values("Content-Length")
        let encodings = headers.values("Transfer-Encoding")
        if lengths.count > 1 { return "more than one Content-Length" }
        if let length = lengths.first, length.isEmpty || !length.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) {
            return "Content-Length must be digits"
        }
        if !encodings.isEmpty {
            guard encodings.count == 1, encodings[0].lowercased() == "chunked" else { return "unsupported Transfer-Encoding" }
            if !lengths.isEmpty { return "both Transfer-Encoding and Content-Length" }
        }
        if method == .head || method == .other("TRACE") {
            if !encodings.isEmpty || lengths.contains(where: { $0.utf8.contains { $0 != 0x30 } }) {
                return "\(method) carries no body"
            }
        }
        return nil
    }
}

/// A request that the server refuses itself, before any handler runs; it closes the connection after the answer.
package enum EdgeRefusal: Sendable {
    /// The request's framing is ambiguous (`RequestFraming`): 400.
    case badFraming(HTTPRequest, reason: String)
    /// The request did not arrive whole within the request deadline: 408.
    case requestTimeout
    /// The request's body is larger than the server reads at all (`ServerLimits.bodyCeiling`): 413.
    case bodyTooLarge(HTTPRequest)

    /// A plain JSON answer, for servers without a gateway in front (the Directus stand-in).
    static func plainAnswer(_ refusal: EdgeRefusal) -> HTTPResponse {
        switch refusal {
        case .badFraming(_, let reason):
            return .json(400, .object([("error", .string(reason)), ("code", .string("invalid_request"))]))
        case .requestTimeout:
            return .json(408, .object([("error", .string("request not received in time")), ("code", .string("request_timeout"))]))
        case .bodyTooLarge:
            return .json(413, .object([("error", .string("request body too large")), ("code", .string("payload_too_large"))]))
        }
    }
}
