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
        guard let config = CLI.loadConfig(arguments["--config"], command: "reload") else { return 2 }
        guard !config.admin.token.isEmpty else {
            CLI.fail("reload: no admin token: set POSTERN_ADMIN_TOKEN (or admin.token in the config file)")
            return 2
        }
        let endpoint: UpstreamEndpoint?
        if let adminURL {
            endpoint = UpstreamEndpoint(url: adminURL).flatMap { $0.tls ? nil : $0 }
        } else {
            endpoint = AdminSessionsClient.endpoint(config)
        }
        guard let endpoint else {
            return CLI.usageError("reload", "--admin must be an http:// URL such as http://127.0.0.1:9180 (got \(adminURL ?? config.adminListen))")
        }
        let outcome = await AdminReloadClient.run(endpoint: endpoint, token: config.admin.token, json: arguments["--json"] != nil)
        if !outcome.output.isEmpty { CLI.writeAll(STDOUT_FILENO, Data(outcome.output.utf8)) }
        if !outcome.error.isEmpty { CLI.fail("reload: \(outcome.error)") }
        return outcome.status
    }
}
