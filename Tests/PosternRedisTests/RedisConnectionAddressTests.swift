import Foundation
import Testing
@testable import PosternRedis
@testable import PosternIO
import PosternTesting

/// A Redis host name with several addresses: the connection tries them in the resolver's order, and a connect that
/// is refused goes on to the next address at once, not after the reconnection back-off (here 10 minutes, so that a
/// connection that backed off would never be ready within the hang deadline).
@Suite struct RedisConnectionAddressTests {
    @Test func aRefusedFirstAddressGoesOnToTheNextOneAtOnceAndIsLeftOutOfTheNextPlan() async throws {
        let server = try RedisServer()  // 127.0.0.1
        let dead = ResolvedAddress(numeric: "127.0.0.2")!  // a literal numeric address (nothing listens there)
        let live = ResolvedAddress(numeric: "127.0.0.1")!  // a literal numeric address
        let lookups = LookupCount()
        let resolver = HostResolver(lookup: { _ in
            lookups.add()
            return .success([dead, live])
        })
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let options = RedisOptions(connectTimeout: 5, reconnectMinimum: 600, reconnectMaximum: 600)
        let endpoint = RedisEndpoint(host: "redis-two", port: server.port)
        let connection = RedisConnection(loop: group.loops[0], endpoint: endpoint, options: options)
        defer { group.loops[0].runAndWait { connection.close() } }
        try await withinHangDeadline(30) { () async throws in
            // The plan is [dead, live]: refused, then connected without a pause.
            group.loops[0].runAndWait {
                connection.resolver = resolver
                connection.start()
            }
            _ = try await eventually("the connection is ready") { connection.isReady }
            #expect(connection.readyTransitions == 1)
            // The refused address was reported: the next connection's plan leaves it out.
            let next = group.loops[0].runAndWait { () -> [String]? in
                var plan: [String]?
                DNSLookup { answer, _ in plan = answer?.addresses.map(\.numericText) }
                    .start(host: "redis-two", loop: group.loops[0], resolver: resolver)
                return plan
            }
            #expect(next == ["127.0.0.1"])
            #expect(lookups.count == 1)
        }
    }

    /// Counts lookups (from the resolver's threads).
    final class LookupCount: @unchecked Sendable {
        private let lock = NSLock()
        private var calls = 0

        func add() { lock.withLock { calls += 1 } }
        var count: Int { lock.withLock { calls } }
    }
}
