import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternCoreTesting
import PosternHTTP

/// The upstream connection pool (docs/api.md, Upstream and edge rules), through real sockets: one worker
/// with one pooled connection in front of a slow or keep-alive-closing fake Directus.
@Suite(.serialized) struct LiveUpstreamPoolTests {
    static let login = #"{"email":"x@y.com","password":"123456"}"#

    /// One worker, one pooled connection, and `configure` for the rest.
    static func gateway(_ fake: ScriptedUpstream, _ configure: (inout PosternConfig) -> Void = { _ in }) throws -> TestGateway {
        try TestGateway { config in
            config.directus.url = fake.url
            config.workers = 1
            config.directus.maxConnectionsPerWorker = 1
            configure(&config)
        }
    }

    // MARK: Waiting for a connection

    @Test func waitingForAConnectionCountsTowardsTheUpstreamTimeout() throws {
        // Each answer takes 1 s and the timeout is 1.5 s: the call that waited 1 s for the only connection
        // has 0.5 s left for a 1 s answer.
        let fake = try ScriptedUpstream(every: [.wait(1.0)] + ScriptedUpstream.Misbehaviour.status(200, LiveUpstreamFailureTests.loginAnswer))
        defer { fake.stop() }
        let gw = try Self.gateway(fake) { $0.directus.timeoutMs = 1500 }
        defer { gw.stop() }
        let statuses = gw.concurrently(2) { try $0.json("POST", "/api/v1/user/login", Self.login) }
        #expect(statuses.sorted() == [200, 504], "\(statuses)")
    }

    @Test func callsBeyondTheWaitingLimitAre503AtOnce() throws {
        let fake = try ScriptedUpstream(every: [.wait(1.0)] + ScriptedUpstream.Misbehaviour.status(200, LiveUpstreamFailureTests.loginAnswer))
        defer { fake.stop() }
        let gw = try Self.gateway(fake) { config in
            config.directus.timeoutMs = 5000
            config.directus.maxWaitingPerWorker = 1
        }
        defer { gw.stop() }
        let codes = CodeList()
        let statuses = gw.concurrently(3) { client in
            let r = try client.json("POST", "/api/v1/user/login", Self.login)
            codes.append(r.json?["code"]?.stringValue ?? "")
            return r
        }
        // One call in flight, one waiting, the third refused without reaching Directus.
        #expect(statuses.sorted() == [200, 200, 503], "\(statuses)")
        #expect(codes.all.contains("upstream_unavailable"))
        #expect(fake.requests.count == 2)
        // A full queue says nothing about Directus: the circuit stays closed.
        #expect(gw.app.gateway.metrics.render().contains("queue_full"))
        #expect(try gw.client().json("POST", "/api/v1/user/login", Self.login).status == 200)
    }

    // MARK: Keep-alive connections that Directus (Node) closes when idle

    @Test func postAfterDirectusIdleCloseGoesOutOnAFreshConnection() throws {
        // Directus closes a keep-alive connection idle for 300 ms, and the close crosses the next request;
        // Postern does not reuse a connection idle for more than 200 ms.
        let fake = try ScriptedUpstream(every: [.send(ScriptedUpstream.answer(LiveUpstreamFailureTests.loginAnswer)), .closeWhenIdle(milliseconds: 300)])
        defer { fake.stop() }
        let gw = try Self.gateway(fake) { $0.directus.keepaliveIdleMs = 200 }
        defer { gw.stop() }
        let client = gw.client()
        for round in 1...3 {
            #expect(try client.json("POST", "/api/v1/user/login", Self.login).status == 200, "round \(round)")
            // Right after Directus's idle close, a non-idempotent request.
            try eventually("the fake never reached its idle close") { fake.idleCloses >= round }
            let r = try client.json("POST", "/api/v1/user/login", Self.login)
            #expect(r.status == 200, "round \(round): \(r.text)")
        }
        // Nothing was sent on the connections Directus had closed.
        #expect(fake.requests.count == 6)
    }

    @Test func theSameArrangementLosesThePostWhenTheIdleLimitIsAboveDirectus() throws {
        // The control: with Postern's idle limit above Directus's close, the POST goes out on the closing
        // connection and is lost (502, never retried) — the fault the idle limit prevents.
        let fake = try ScriptedUpstream(every: [.send(ScriptedUpstream.answer(LiveUpstreamFailureTests.loginAnswer)), .closeWhenIdle(milliseconds: 300)])
        defer { fake.stop() }
        let gw = try Self.gateway(fake) { $0.directus.keepaliveIdleMs = 60_000 }
        defer { gw.stop() }
        let client = gw.client()
        #expect(try client.json("POST", "/api/v1/user/login", Self.login).status == 200)
        try eventually("fake.idleCloses >= 1") { fake.idleCloses >= 1 }
        let r = try client.json("POST", "/api/v1/user/login", Self.login)
        #expect(r.status == 502, "\(r.text)")
        #expect(fake.requests.count == 2)
    }

    @Test func standInClosesIdleKeepAliveConnectionsLikeNodeAndPostsStillSucceed() throws {
        #expect(DirectusStandIn.Options().keepAliveTimeoutMs == 5000, "Node's default keep-alive timeout")
        var options = DirectusStandIn.Options()
        options.keepAliveTimeoutMs = 300
        let gw = try TestGateway(standInOptions: options) { config in
            config.workers = 1
            config.directus.keepaliveIdleMs = 200
        }
        defer { gw.stop() }
        let client = gw.client()
        for round in 1...3 {
            let r = try client.json("POST", "/api/v1/user/login", Self.login)
            #expect(r.status == 200, "round \(round): \(r.text)")
            // The stand-in closed the pooled connection once it idled 300 ms.
            try eventually("the stand-in closed its idle connection") { gw.standInServer.openConnections == 0 }
        }
        #expect(gw.upstream("/auth/login").count == 3)
    }
}

/// Collects strings from several threads.
final class CodeList: @unchecked Sendable {
    private let lock = NSLock()
    private var items: [String] = []
    func append(_ item: String) { lock.withLock { items.append(item) } }
    var all: [String] { lock.withLock { items } }
}
