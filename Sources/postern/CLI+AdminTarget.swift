import FoundationEssentials
import PosternCore
import PosternHTTP

extension CLI {
    /// Where a client command (`postern sessions`, `postern reload`) reaches the running gateway's admin listener,
    /// and the token it sends; or the exit status when it cannot (2: no config, no admin token, a bad `--admin`).
    enum AdminTarget {
        /// The admin listener and the admin token.
        case ready(UpstreamEndpoint, token: String)
        /// The problem is printed; exit with this status.
        case failed(Int32)
    }

    /// The admin target of `command` from the config at `configPath` and the `--admin` override `adminURL`.
    static func adminTarget(_ command: String, configPath: String?, adminURL: String?) -> AdminTarget {
        guard let config = loadConfig(configPath, command: command) else { return .failed(2) }
        guard !config.admin.token.isEmpty else {
            fail("\(command): no admin token: set POSTERN_ADMIN_TOKEN (or admin.token in the config file)")
            return .failed(2)
        }
        let endpoint: UpstreamEndpoint?
        if let adminURL {
            endpoint = UpstreamEndpoint(url: adminURL).flatMap { $0.tls ? nil : $0 }
        } else {
            endpoint = AdminSessionsClient.endpoint(config)
        }
        guard let endpoint else {
            return .failed(usageError(command, "--admin must be an http:// URL such as http://127.0.0.1:9180 (got \(adminURL ?? config.adminListen))"))
        }
        return .ready(endpoint, token: config.admin.token)
    }
}
