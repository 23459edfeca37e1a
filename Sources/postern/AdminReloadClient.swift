import FoundationEssentials
import PosternCore
import PosternHTTP

/// `postern reload`: asks a running gateway's admin listener to read its config again (`POST /admin/reload`,
/// docs/api.md, Reloading the config) and says what it did. The command line is parsed by `main`.
enum AdminReloadClient {
    /// Makes the call on `endpoint` with the admin `token` and renders the answer: a line (the problems, one per
    /// line, for an invalid file) by default, the body as it came with `json`. Exit status 0 reloaded (changed or
    /// not), 1 refused (invalid, restart required, another error, or the listener unreachable).
    static func run(endpoint: UpstreamEndpoint, token: String, json: Bool) async -> AdminCall.Outcome {
        switch await AdminCall.send(.post, "/admin/reload", endpoint: endpoint, token: token, loopName: "postern-reload") {
        case .answered(let response): return render(status: response.status, body: response.body, json: json)
        case .unreachable(let outcome): return outcome
        }
    }

    /// The outcome of an answer with `status` and `body`.
    static func render(status: Int, body: Data, json: Bool) -> AdminCall.Outcome {
        if json { return AdminCall.verbatim(status: status, body: body) }
        guard let value = try? JSONValue.parse(body) else {
            return .init(status: 1, output: "", error: "unexpected answer (HTTP \(status))")
        }
        switch (status, value["code"]?.stringValue) {
        case (200, _):
            let generation = value["generation"]?.intValue ?? 0
            let changed = value["changed"] == .bool(true)
            return .init(status: 0, output: changed ? "reloaded: config generation \(generation)\n"
                            : "unchanged: config generation \(generation) keeps serving\n", error: "")
        case (400, "invalid_config"?):
            let problems = value["problems"]?.arrayValue?.compactMap(\.stringValue) ?? []
            return .init(status: 1, output: "", error: "the config is invalid, the running config keeps serving:\n"
                            + problems.map { "  " + $0 }.joined(separator: "\n"))
        case (409, "restart_required"?):
            let keys = value["keys"]?.arrayValue?.compactMap(\.stringValue) ?? []
            return .init(status: 1, output: "", error: "only a restart can change \(keys.joined(separator: ", ")); nothing was reloaded")
        default:
            return AdminCall.refusal(value, status: status)
        }
    }
}
