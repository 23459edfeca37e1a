import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP

@Suite struct SessionManagerTests {
    struct Fixture {
        let clock = TestClock(date: Date(timeIntervalSince1970: 1_800_000_000))
        let store = MemorySessionStore()
        let standIn = DirectusStandIn()
        let manager: SessionManager
        let directus: DirectusClient

        init(idle: TimeInterval = 100, max: TimeInterval = 1000) {
            let standIn = self.standIn
            directus = DirectusClient(transport: InProcessTransport { standIn.handle($0) }, timeout: 3)
            let clock = self.clock
            manager = SessionManager(store: store, directus: directus, idleTTL: idle, maxTTL: max, clock: { clock.now })
        }

        func open() async throws -> IssuedTokens {
            let tokens = try await directus.login(email: "x@y.com", password: "123456", context: CallFields(requestID: "t", clientIP: "127.0.0.1"))
            return try await manager.open(tokens: tokens, email: "x@y.com", context: CallFields(requestID: "t", clientIP: "127.0.0.1"))
        }
    }

    @Test func tokensAreStoredOnlyAsDigests() async throws {
        let f = Fixture()
        let issued = try await f.open()
        let stored = try #require(try f.store.session(tokenDigest: Crypto.sha256Hex(issued.accessToken)))
        #expect(stored.tokenDigest != issued.accessToken)
        #expect(stored.refreshDigest == Crypto.sha256Hex(issued.refreshToken))
        #expect(stored.userID == f.standIn.userID(email: "x@y.com"))
        #expect(stored.role == DirectusStandIn.appUserRoleID)
        #expect(issued.accessToken.hasPrefix("pst_") && issued.accessToken.count == 47)
    }

    @Test func idleExpirySlidesWithUse() async throws {
        let f = Fixture(idle: 100, max: 1000)
        let issued = try await f.open()
        for _ in 0..<5 {
            f.clock.advance(90)
            _ = try await f.manager.authenticate(token: issued.accessToken)
        }
        f.clock.advance(101)
        await #expect(throws: GatewayError.self) { try await f.manager.authenticate(token: issued.accessToken) }
        // An expired session is gone for good.
        #expect(try f.store.count() == 0)
    }

    @Test func absoluteExpiryEndsEvenAnActiveSession() async throws {
        let f = Fixture(idle: 100, max: 250)
        let issued = try await f.open()
        f.clock.advance(90); _ = try await f.manager.authenticate(token: issued.accessToken)
        f.clock.advance(90); _ = try await f.manager.authenticate(token: issued.accessToken)
        f.clock.advance(90)
        await #expect(throws: GatewayError.self) { try await f.manager.authenticate(token: issued.accessToken) }
    }

    @Test func lastUsedIsBatchedNotWrittenPerRequest() async throws {
        let f = Fixture(idle: 1000, max: 10_000)
        let issued = try await f.open()
        let created = try #require(try f.store.session(tokenDigest: Crypto.sha256Hex(issued.accessToken))).lastUsedAt
        f.clock.advance(120)
        _ = try await f.manager.authenticate(token: issued.accessToken)
        #expect(try f.store.session(tokenDigest: Crypto.sha256Hex(issued.accessToken))?.lastUsedAt == created)
        await f.manager.flush()
        #expect(try f.store.session(tokenDigest: Crypto.sha256Hex(issued.accessToken))?.lastUsedAt == f.clock.now)
    }

    @Test func purgeRemovesExpiredSessions() async throws {
        let f = Fixture(idle: 100, max: 1000)
        _ = try await f.open()
        let live = try await f.open()
        f.clock.advance(60)
        _ = try await f.manager.authenticate(token: live.accessToken)
        await f.manager.flush()
        f.clock.advance(60)
        #expect(await f.manager.purgeExpired() == 1)
        #expect(await f.manager.activeSessions() == 1)
    }

    @Test func expiresAtReportsTheSlidingExpiry() async throws {
        let f = Fixture(idle: 100, max: 1000)
        let issued = try await f.open()
        #expect(f.manager.expiry(of: issued.session) == f.clock.now.addingTimeInterval(100))
    }

    @Test(arguments: ["", "Bearer", "pst_", "psr_abc", String(repeating: "a", count: 5000)])
    func malformedTokensAre401(token: String) async {
        let f = Fixture()
        await #expect(throws: GatewayError.self) { try await f.manager.authenticate(token: token) }
    }
}

/// Holds `/auth/refresh` calls until the test opens the gate.
final class RefreshGate: UpstreamTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var waiting: [CheckedContinuation<Void, Never>] = []
    private var open = false
    let inner: InProcessTransport

    init(_ standIn: DirectusStandIn) { inner = InProcessTransport { standIn.handle($0) } }

    private var heldWatchers: [CheckedContinuation<Void, Never>] = []

    var held: Int { lock.withLock { waiting.count } }

    /// Returns once a refresh call is being held.
    func firstHeld() async {
        await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
            let now = lock.withLock { () -> Bool in
                if !waiting.isEmpty { return true }
                heldWatchers.append(c)
                return false
            }
            if now { c.resume() }
        }
    }

    func release() {
        let all = lock.withLock { () -> [CheckedContinuation<Void, Never>] in
            open = true
            defer { waiting.removeAll() }
            return waiting
        }
        for c in all { c.resume() }
    }

    func send(_ request: UpstreamRequest, timeout: Double) async throws(UpstreamFailure) -> UpstreamResponse {
        if request.target.hasPrefix("/auth/refresh") {
            await withCheckedContinuation { (c: CheckedContinuation<Void, Never>) in
                let (go, watchers) = lock.withLock { () -> (Bool, [CheckedContinuation<Void, Never>]) in
                    if open { return (true, []) }
                    waiting.append(c)
                    defer { heldWatchers.removeAll() }
                    return (false, heldWatchers)
                }
                if go { c.resume() }
                for watcher in watchers { watcher.resume() }
            }
        }
        return try await inner.send(request, timeout: timeout)
    }
}

extension SessionManagerTests {
    @Test(.timeLimit(.minutes(1))) func aDirectusRefreshDoesNotRevivePosternTokensRotatedMeanwhile() async throws {
        let standIn = DirectusStandIn()
        let gate = RefreshGate(standIn)
        let directus = DirectusClient(transport: gate, timeout: 3)
        let manager = SessionManager(store: MemorySessionStore(), directus: directus, idleTTL: 1000, maxTTL: 10_000)
        let ctx = CallFields(requestID: "t", clientIP: "127.0.0.1")
        let issued = try await manager.open(tokens: try await directus.login(email: "x@y.com", password: "123456", context: ctx), email: "x@y.com", context: ctx)
        standIn.expireAllAccessTokens()
        let session = try await manager.authenticate(token: issued.accessToken)
        let call = Task {
            try await manager.withDirectusToken(session, context: ctx) { (token) async throws(DirectusError) -> HTTPBody in
                try await directus.listItems(target: "/items/posts?limit=1", token: token, context: ctx)
            }
        }
        await gate.firstHeld()
        let rotated = try await manager.rotate(refreshToken: issued.refreshToken, context: ctx)
        gate.release()
        _ = try await call.value
        await #expect(throws: GatewayError.self) { try await manager.authenticate(token: issued.accessToken) }
        let live = try await manager.authenticate(token: rotated.accessToken)
        #expect(live.directusAccessToken != session.directusAccessToken)
        #expect(standIn.refreshCount == 1)
    }
}
