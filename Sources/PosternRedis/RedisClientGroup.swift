import PosternIO

/// One `RedisClient` per worker loop: a caller on loop N uses loop N's connection; a caller outside every loop
/// uses the first loop's (its call hops there).
package final class RedisClientGroup: Sendable {
    /// The clients, in the order of the group's loops.
    package let clients: [RedisClient]
    private let byLoop: [ObjectIdentifier: RedisClient]

    /// Connects one client per loop of `group` to `endpoint`.
    package init(group: EventLoopGroup, endpoint: RedisEndpoint, options: RedisOptions = RedisOptions()) {
        clients = group.loops.map { RedisClient(loop: $0, endpoint: endpoint, options: options) }
        var byLoop: [ObjectIdentifier: RedisClient] = [:]
        for client in clients { byLoop[ObjectIdentifier(client.loop)] = client }
        self.byLoop = byLoop
    }

    /// The client of the calling loop, or the first one off the loops.
    package var client: RedisClient {
        if let loop = EventLoop.current, let client = byLoop[ObjectIdentifier(loop)] { return client }
        return clients[0]  // an EventLoopGroup has at least one loop
    }

    /// Sends one command on the calling loop's connection (see `RedisClient.command`).
    package func command(_ arguments: [RedisArgument]) async throws(RedisError) -> RedisReply {
        try await client.command(arguments)
    }

    /// Runs a script on the calling loop's connection (see `RedisClient.evaluate`).
    package func evaluate(_ script: RedisScript, keys: [RedisArgument] = [], arguments: [RedisArgument] = [])
        async throws(RedisError) -> RedisReply {
        try await client.evaluate(script, keys: keys, arguments: arguments)
    }

    /// True when every loop's connection is up (for /readyz: a request on any loop can reach Redis).
    package var isConnected: Bool { clients.allSatisfy(\.isConnected) }

    /// Closes every connection (before the loops stop).
    package func close() {
        for client in clients { client.close() }
    }
}
