import FoundationEssentials
import PosternCore
import PosternHTTP
import PosternIO

/// `postern healthcheck`: whether the local gateway is up, for a container's health check.
enum Healthcheck {
    /// True when the local gateway's `/healthz` answers 200 within 3 s.
    static func run(config: PosternConfig) async -> Bool {
        guard let listen = config.listenAddress else { return false }
        let host = listen.host == "0.0.0.0" || listen.host.isEmpty ? "127.0.0.1" : (listen.host == "::" ? "::1" : listen.host)
        guard let endpoint = UpstreamEndpoint(url: "http://\(host.contains(":") ? "[\(host)]" : host):\(listen.port)") else { return false }
        let group = EventLoopGroup(count: 1, name: "postern-healthcheck")
        defer { group.shutdown() }
        let transport = LoopTransport(group: group, endpoint: endpoint, maxConnections: 1)
        do {
            let response = try await transport.send(UpstreamRequest(method: .get, target: "/healthz"), timeout: 3)
            return response.status == 200
        } catch {
            return false
        }
    }
}
