import FoundationEssentials
import PosternCore
import PosternHTTP

/// `postern sessions list|revoke`: the operator's session control from the command line, as calls to a running
/// gateway's admin listener (docs/api.md, Command line: sessions). The command line is parsed by `main`; this
/// makes the call and renders the answer.
enum AdminSessionsClient {
    /// What to ask the admin listener.
    enum Action: Sendable, Equatable {
        /// `GET /admin/sessions?user=` (an e-mail or a user id).
        case list(user: String)
        /// `DELETE /admin/sessions/{id}` (a full id or a prefix of at least 8 characters).
        case revoke(session: String)
        /// `DELETE /admin/users/{id}/sessions`.
        case revokeUser(userID: String)
    }

    /// The admin listener `config` names (`admin_listen`; a wildcard address is called on loopback).
    static func endpoint(_ config: PosternConfig) -> UpstreamEndpoint? {
        guard let listen = config.adminListenAddress else { return nil }
        let host = listen.host == "0.0.0.0" || listen.host.isEmpty ? "127.0.0.1" : (listen.host == "::" ? "::1" : listen.host)
        return UpstreamEndpoint(url: "http://\(host.contains(":") ? "[\(host)]" : host):\(listen.port)")
    }

    /// Makes the call for `action` on `endpoint` with the admin `token`, and renders the answer: a table or a
    /// line by default, the body as it came with `json`.
    static func run(_ action: Action, endpoint: UpstreamEndpoint, token: String, json: Bool) async -> AdminCall.Outcome {
        switch await AdminCall.send(action.method, action.target, endpoint: endpoint, token: token,
                                    loopName: "postern-sessions") {
        case .answered(let response): return render(action, status: response.status, body: response.body, json: json)
        case .unreachable(let outcome): return outcome
        }
    }

    /// The outcome of an answer with `status` and `body` to `action`.
    static func render(_ action: Action, status: Int, body: Data, json: Bool) -> AdminCall.Outcome {
        if json { return AdminCall.verbatim(status: status, body: body) }
        let value = try? JSONValue.parse(body)
        guard status == 200, let value else { return AdminCall.refusal(value, status: status) }
        switch action {
        case .list(let user):
            guard case .array(let items)? = value["data"] else {
                return AdminCall.Outcome(status: 1, output: "", error: "unexpected answer (no data)")
            }
            return AdminCall.Outcome(status: 0, output: table(items, user: user), error: "")
        case .revoke, .revokeUser:
            let count = value["data"]?["revoked"]?.intValue ?? 0
            return AdminCall.Outcome(status: 0, output: "revoked \(count) session\(count == 1 ? "" : "s")\n", error: "")
        }
    }

    /// The listing as a table: one line per session under a header line, or a line saying there is none.
    static func table(_ items: [JSONValue], user: String) -> String {
        guard !items.isEmpty else { return "no live sessions for \(user)\n" }
        let header = ["ID PREFIX", "USER ID", "EMAIL", "CREATED", "LAST SEEN", "CLIENT IP", "USER AGENT"]
        let rows = items.map { item in
            ["id_prefix", "user_id", "email", "created_at", "last_seen_at", "client_ip", "user_agent"].map { key in
                let text = item[key]?.stringValue ?? ""
                return text.isEmpty ? "-" : String(text.prefix(key == "user_agent" ? 60 : 40))
            }
        }
        var widths = header.map(\.count)
        for row in rows {
            for (i, cell) in row.enumerated() { widths[i] = max(widths[i], cell.count) }
        }
        func line(_ cells: [String]) -> String {
            cells.enumerated().map { i, cell in
                i == cells.count - 1 ? cell : cell + String(repeating: " ", count: widths[i] - cell.count)
            }.joined(separator: "  ") + "\n"
        }
        return line(header) + rows.map(line).joined()
    }

    /// `text` percent-encoded for a path segment or a query value (RFC 3986 unreserved bytes kept).
    static func percentEncoded(_ text: String) -> String {
        var out = ""
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                out += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 15)]], as: UTF8.self)
            }
        }
        return out
    }
}

extension AdminSessionsClient.Action {
    /// The method of the call.
    var method: HTTPMethod {
        if case .list = self { return .get }
        return .delete
    }

    /// The path and query of the call.
    var target: String {
        switch self {
        case .list(let user): return "/admin/sessions?user=" + AdminSessionsClient.percentEncoded(user)
        case .revoke(let session): return "/admin/sessions/" + AdminSessionsClient.percentEncoded(session)
        case .revokeUser(let userID): return "/admin/users/" + AdminSessionsClient.percentEncoded(userID) + "/sessions"
        }
    }
}
