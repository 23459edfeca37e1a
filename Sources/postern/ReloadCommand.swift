import FoundationEssentials
import Glibc
import PosternCore
import PosternHTTP

/// `postern reload` (docs/api.md, Reloading the config): asks the running gateway to read its config file again,
/// through its admin listener (`POST /admin/reload`), as `postern sessions` does. Exit status 0 reloaded (or
/// nothing changed), 1 refused (an invalid file, a restart-only key, a wrong token, or the listener unreachable),
/// 2 usage or configuration.
enum ReloadCommand {
    /// Runs `postern reload` (parsed against `CommandUsage` "reload").
    static func run(_ arguments: ParsedArguments) async -> Int32 {
        let adminURL = arguments["--admin"]
        let endpoint: UpstreamEndpoint, token: String
        switch CLI.adminTarget("reload", configPath: arguments["--config"], adminURL: adminURL) {
        case .ready(let target, let adminToken): (endpoint, token) = (target, adminToken)
        case .failed(let status): return status
        }
        let outcome = await AdminReloadClient.run(endpoint: endpoint, token: token, json: arguments["--json"] != nil)
        if !outcome.output.isEmpty { CLI.writeAll(STDOUT_FILENO, Data(outcome.output.utf8)) }
        if !outcome.error.isEmpty { CLI.fail("reload: \(outcome.error)") }
        return outcome.status
    }
}
