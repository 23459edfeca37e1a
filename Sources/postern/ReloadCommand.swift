import FoundationEssentials
import Glibc
import PosternCore

/// `postern reload` (docs/api.md, Reloading the config): asks the running gateway to read its config file again,
/// through its admin listener (`POST /admin/reload`), as `postern sessions` does. Exit status 0 reloaded (or
/// nothing changed), 1 refused (an invalid file, a restart-only key, or the listener unreachable), 2 usage or
/// configuration.
enum ReloadCommand {
    /// The usage line of `postern reload`.
    static let usage = """
        usage: postern reload [--json] [--admin http://host:port] [--config FILE]

          asks the running gateway to read its config file again (POST /admin/reload on its admin listener);
          --admin overrides admin_listen (POSTERN_ADMIN_LISTEN); the token is POSTERN_ADMIN_TOKEN (admin.token).
          Exit 0 reloaded or unchanged, 1 invalid config, restart required or unreachable, 2 usage or configuration
        """

    /// Runs `postern reload <arguments>`.
    static func run(_ arguments: [String], configPath: String?) async -> Int32 {
        var rest = arguments
        var json = false
        var adminURL: String?
        if rest.contains("--help") || rest.contains("-h") {
            print(usage)
            return 0
        }
        while !rest.isEmpty {
            let argument = rest.removeFirst()
            if argument == "--json" {
                json = true
            } else if argument == "--admin" || argument.hasPrefix("--admin=") {
                let value = argument == "--admin" ? (rest.isEmpty ? nil : rest.removeFirst()) : String(argument.dropFirst("--admin=".count))
                guard let value, !value.isEmpty else { return usageError("--admin needs a URL such as http://127.0.0.1:9180") }
                adminURL = value
            } else {
                return usageError("unexpected argument \(argument)")
            }
        }
        guard let config = CLI.loadConfig(configPath, command: "reload") else { return 2 }
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
            return usageError("--admin must be an http:// URL such as http://127.0.0.1:9180 (got \(adminURL ?? config.adminListen))")
        }
        let outcome = await AdminReloadClient.run(endpoint: endpoint, token: config.admin.token, json: json)
        if !outcome.output.isEmpty { CLI.writeAll(STDOUT_FILENO, Data(outcome.output.utf8)) }
        if !outcome.error.isEmpty { CLI.fail("reload: \(outcome.error)") }
        return outcome.status
    }

    /// Prints `message` and the usage to standard error; exit status 2.
    private static func usageError(_ message: String) -> Int32 {
        CLI.fail("reload: \(message)\n\(usage)")
        return 2
    }
}
