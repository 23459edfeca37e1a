import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternIO
import PosternRedis

/// The pub/sub bus between instances against a real redis-server: delivery to the other instances only,
/// and "drop everything" after a resubscription (messages may have been missed while disconnected).
@Suite(.serialized) struct RedisEventBusTests {
    @Test func announcementsReachTheOtherInstancesAndAResubscriptionDropsEverything() async throws {
        let server = try RedisServer()
        let group = EventLoopGroup(count: 1)
        let endpoint = try RedisEndpoint(url: server.url())
        let clients = RedisClientGroup(group: group, endpoint: endpoint)
        let a = RedisEventBus(clients: clients, endpoint: endpoint, loop: group.loops[0], collections: ["posts", "tags"])
        let b = RedisEventBus(clients: clients, endpoint: endpoint, loop: group.loops[0], collections: ["posts", "tags"])
        defer {
            a.close()
            b.close()
            clients.close()
            group.shutdown()
            server.stop()
        }
        let sessionsOnA = LockedBox<[String]>([]), sessionsOnB = LockedBox<[String]>([])
        let collectionsOnA = LockedBox<[String]>([]), collectionsOnB = LockedBox<[String]>([])
        let resetsOnA = LockedBox(0)
        a.revocations.subscribe { id in sessionsOnA.withLock { $0.append(id) } }
        b.revocations.subscribe { id in sessionsOnB.withLock { $0.append(id) } }
        a.revocations.subscribeReset { resetsOnA.withLock { $0 += 1 } }
        a.invalidations.subscribe { c in collectionsOnA.withLock { $0.append(c) } }
        b.invalidations.subscribe { c in collectionsOnB.withLock { $0.append(c) } }
        #expect(await a.waitUntilSubscribed())
        #expect(await b.waitUntilSubscribed())

        b.revocations.publish(sessionID: "s-1")
        b.invalidations.publish(collection: "posts")
        #expect(collectionsOnB.withLock { $0 } == ["posts"])  // the writer's own cache, before publish returns
        try await eventually("A hears B", timeout: 10) { sessionsOnA.withLock { $0 } == ["s-1"] && collectionsOnA.withLock { $0 } == ["posts"] }
        #expect(sessionsOnB.withLock { $0 }.isEmpty)  // its own announcement is not echoed back
        #expect(resetsOnA.withLock { $0 } == 0)

        // Redis goes away and comes back: A may have missed announcements, so it drops everything.
        try server.restart()
        try await eventually("A resubscribed and reset", timeout: 10) { resetsOnA.withLock { $0 } == 1 }
        #expect(collectionsOnA.withLock { $0 } == ["posts", "posts", "tags"])
    }
}
