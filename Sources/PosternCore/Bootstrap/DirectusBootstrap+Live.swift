import FoundationEssentials
import PosternIO
import PosternHTTP

extension DirectusBootstrap {
    /// Runs the bootstrap against `config.directus.url` over a one-loop libevent transport (the CLI's path).
    package static func runLive(config: PosternConfig, credentials: BootstrapCredentials,
                               log: @escaping @Sendable (String) -> Void) async throws(BootstrapError) -> BootstrapReport {
        guard let endpoint = UpstreamEndpoint(url: config.directus.url) else {
            throw .step(name: "configuration", reason: "directus.url \"\(config.directus.url)\" is not an http(s) URL")
        }
        let group = EventLoopGroup(count: 1, name: "postern-bootstrap")
        defer { group.shutdown() }
        let transport = LoopTransport(group: group, endpoint: endpoint, maxConnections: 1)
        let client = DirectusClient(transport: transport, timeout: Double(config.directus.timeoutMs) / 1000)
        return try await DirectusBootstrap(client: client, config: config, credentials: credentials, log: log).run()
    }
}
