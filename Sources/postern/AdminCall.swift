import FoundationEssentials
import PosternCore
import PosternHTTP
import PosternIO

/// One call of a command (`postern sessions`, `postern reload`) to a running gateway's admin listener: the request
/// with the admin token, the transport failure in words, and the answer's rendering that every command shares (the
/// body as it came with `--json`, an error answer as one line).
enum AdminCall {
    /// What a command prints and its exit status: 0 done, 1 refused (an error answer, or the listener could not be
    /// reached).
    struct Outcome: Sendable, Equatable {
        /// The exit status.
        var status: Int32
        /// What goes to standard output.
        var output: String
        /// What goes to standard error (one line, or empty).
        var error: String
    }

    /// How long a command waits for the admin listener.
    static let timeout: Double = 10

    /// What came back from the admin listener.
    enum Reply {
        /// Its answer.
        case answered(HTTPResponse)
        /// It could not be reached: what the command prints.
        case unreachable(Outcome)
    }

    /// Sends `method` `target` (the path and query under the admin listener) to `endpoint` with the admin `token`
    /// on a loop of its own named `loopName`.
    static func send(_ method: HTTPMethod, _ target: String, endpoint: UpstreamEndpoint, token: String,
                     loopName: String) async -> Reply {
        let group = EventLoopGroup(count: 1, name: loopName)
        defer { group.shutdown() }
        let transport = LoopTransport(group: group, endpoint: endpoint, maxConnections: 1)
        var headers = HTTPHeaders()
        headers.add("Accept", "application/json")
        headers.add("Authorization", "Bearer " + token)
        let request = UpstreamRequest(method: method, target: endpoint.basePath + target, headers: headers)
        let response: HTTPResponse
        do {
            response = try await transport.send(request, timeout: timeout)
        } catch {
            return .unreachable(Outcome(status: 1, output: "",
                                        error: "cannot reach the admin listener at \(endpoint.hostHeader): \(describe(error))"))
        }
        return .answered(response)
    }

    /// The body as it came (`--json`), ending in a newline; exit status 0 for a 200, 1 otherwise.
    static func verbatim(status: Int, body: Data) -> Outcome {
        let text = String(decoding: body, as: UTF8.self)
        return Outcome(status: status == 200 ? 0 : 1, output: text.hasSuffix("\n") ? text : text + "\n", error: "")
    }

    /// An error answer as one line: its message, status and code ("invalid token (HTTP 401 unauthorized)").
    static func refusal(_ value: JSONValue?, status: Int) -> Outcome {
        let message = value?["error"]?.stringValue ?? "unexpected answer"
        let code = value?["code"]?.stringValue.map { " \($0)" } ?? ""
        return Outcome(status: 1, output: "", error: "\(message) (HTTP \(status)\(code))")
    }

    /// A transport failure in words.
    static func describe(_ failure: UpstreamFailure) -> String {
        switch failure {
        case .unreachable(let reason): return reason.isEmpty ? "connection refused" : reason
        case .timeout: return "no answer within \(Int(timeout)) s"
        case .closed: return "the connection closed"
        case .badResponse(let reason): return "not an HTTP answer (\(reason))"
        }
    }
}
