import FoundationEssentials
import Glibc
import PosternCore
import PosternHTTP

/// `postern sessions list|revoke …` (docs/api.md, Command line: sessions): parses its arguments, then
/// `AdminSessionsClient` calls the running gateway's admin listener. Exit status 0 done, 1 refused or not found
/// (or the listener unreachable), 2 usage or configuration.
enum SessionsCommand {
    /// Runs `postern sessions <arguments>` (parsed against `CommandUsage` "sessions").
    static func run(_ arguments: ParsedArguments) async -> Int32 {
        let configPath = arguments["--config"]
        let json = arguments["--json"] != nil
        let user = arguments["--user"]
        let adminURL = arguments["--admin"]
        let positional = arguments.arguments
        guard let verb = positional.first else { return usageError("say list or revoke") }
        let action: AdminSessionsClient.Action
        switch (verb, positional.count, user) {
        case ("list", 1, let user?): action = .list(user: user)
        case ("list", _, _): return usageError("list needs --user <email or user id> and nothing else")
        case ("revoke", 2, nil): action = .revoke(session: positional[1])
        case ("revoke", 1, let user?): action = .revokeUser(userID: user)
        case ("revoke", _, _): return usageError("revoke needs a session id (or prefix), or --user <user id>, not both")
        default: return usageError("unknown sessions command \(verb)")
        }
        let endpoint: UpstreamEndpoint, token: String
        switch CLI.adminTarget("sessions", configPath: configPath, adminURL: adminURL) {
        case .ready(let target, let adminToken): (endpoint, token) = (target, adminToken)
        case .failed(let status): return status
        }
        let outcome = await AdminSessionsClient.run(action, endpoint: endpoint, token: token, json: json)
        if !outcome.output.isEmpty { CLI.writeAll(STDOUT_FILENO, Data(outcome.output.utf8)) }
        if !outcome.error.isEmpty { CLI.fail("sessions: \(outcome.error)") }
        return outcome.status
    }

    /// Prints `message` and the usage to standard error; exit status 2.
    private static func usageError(_ message: String) -> Int32 {
        CLI.usageError("sessions", message)
    }
}
