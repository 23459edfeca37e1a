import FoundationEssentials
import PosternCore
import PosternHTTP
import PosternIO

/// `postern reload`: asks a running gateway's admin listener to read its config again (`POST /admin/reload`,
/// docs/api.md, Reloading the config) and says what it did. The command line is parsed by `main`.
enum AdminReloadClient {
    /// Makes the call on `endpoint` with the admin `token` and renders the answer: a line (the problems, one per
    /// line, for an invalid file) by default, the body as it came with `json`. Exit status 0 reloaded (changed or
    /// not), 1 refused (invalid, restart required, another error, or the listener unreachable).
    static func run(endpoint: UpstreamEndpoint, token: String, json: Bool) async -> AdminSessionsClient.Outcome {
        let group = EventLoopGroup(count: 1, name: "postern-reload")
        defer { group.shutdown() }
        let transport = LoopTransport(group: group, endpoint: endpoint, maxConnections: 1)
        var headers = HTTPHeaders()
        headers.add("Accept", "application/json")
        headers.add("Authorization", "Bearer " + token)
        let request = UpstreamRequest(method: .post, target: endpoint.basePath + "/admin/reload", headers: headers)
        let response: HTTPResponse
        do {
            response = try await transport.send(request, timeout: AdminSessionsClient.timeout)
        } catch {
            return .init(status: 1, output: "", error: "cannot reach the admin listener at \(endpoint.hostHeader): \(AdminSessionsClient.describe(error))")
        }
        return render(status: response.status, body: response.body, json: json)
    }

    /// The outcome of an answer with `status` and `body`.
    static func render(status: Int, body: Data, json: Bool) -> AdminSessionsClient.Outcome {
        let value = try? JSONValue.parse(body)
        let exit: Int32 = status == 200 ? 0 : 1
        if json {
            let text = String(decoding: body, as: UTF8.self)
            return .init(status: exit, output: text.hasSuffix("\n") ? text : text + "\n", error: "")
        }
        guard let value else { return .init(status: 1, output: "", error: "unexpected answer (HTTP \(status))") }
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
            let message = value["error"]?.stringValue ?? "unexpected answer"
            let code = value["code"]?.stringValue.map { " \($0)" } ?? ""
            return .init(status: 1, output: "", error: "\(message) (HTTP \(status)\(code))")
        }
    }
}
