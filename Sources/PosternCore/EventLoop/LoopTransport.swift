import Foundation

/// The production transport: each event loop sends through its own keep-alive pool.
public final class LoopTransport: UpstreamTransport, @unchecked Sendable {
    private let clients: [ObjectIdentifier: UpstreamHTTPClient]
    private let fallback: (EventLoop, UpstreamHTTPClient)

    /// One pool per loop of `group` (its responses carry only the headers the gateway reads), each with at most `maxConnections` connections and `maxWaiting` calls
    /// waiting for one; connections idle longer than `keepaliveIdle` seconds are not reused.
    public init(group: EventLoopGroup, endpoint: UpstreamEndpoint, maxConnections: Int, tls: TLSClientContext? = nil,
                maxWaiting: Int = 1024, keepaliveIdle: Double = 4.0) {
        var clients: [ObjectIdentifier: UpstreamHTTPClient] = [:]
        for loop in group.loops {
            clients[ObjectIdentifier(loop)] = UpstreamHTTPClient(loop: loop, endpoint: endpoint, maxConnections: maxConnections,
                                                                 tls: tls, maxWaiting: maxWaiting, keepaliveIdle: keepaliveIdle,
                                                                 keptHeaders: UpstreamHTTPClient.gatewayHeaders)
        }
        self.clients = clients
        let first = group.loops[0]
        // Every loop got a client just above.
        fallback = (first, clients[ObjectIdentifier(first)]!)
    }

    /// Sends on the current loop's pool, or hops to the first loop when called from elsewhere.
    public func send(_ request: UpstreamRequest, timeout: Double) async throws(UpstreamFailure) -> UpstreamResponse {
        if let loop = EventLoop.current, let client = clients[ObjectIdentifier(loop)] {
            return try await client.send(request, timeout: timeout)
        }
        let (loop, client) = fallback
        let result = await Task(executorPreference: loop) { () -> Result<UpstreamResponse, UpstreamFailure> in
            do throws(UpstreamFailure) {
                return .success(try await client.send(request, timeout: timeout))
            } catch {
                return .failure(error)
            }
        }.value
        return try result.get()
    }
}
