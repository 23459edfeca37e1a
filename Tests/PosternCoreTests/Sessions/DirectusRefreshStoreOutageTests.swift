import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternCoreTesting
import PosternHTTP

/// A `SwitchableSessionStore` that counts the Directus-token writes it refused while down.
final class CountingSwitchableStore: SessionStore, @unchecked Sendable {
    let inner = SwitchableSessionStore()
    let refusedDirectusWrites = LockedBox(0)

    func setDown(_ value: Bool) { inner.setDown(value) }
    func isAvailable() async -> Bool { await inner.isAvailable() }
    func insert(_ session: Session) async throws(SessionStoreError) { try await inner.insert(session) }
    func session(tokenDigest: String) async throws(SessionStoreError) -> Session? { try await inner.session(tokenDigest: tokenDigest) }
    func session(refreshDigest: String) async throws(SessionStoreError) -> Session? {
        try await inner.session(refreshDigest: refreshDigest)
    }
    func sessionID(usedRefreshDigest: String) async throws(SessionStoreError) -> String? {
        try await inner.sessionID(usedRefreshDigest: usedRefreshDigest)
    }
    func session(sessionID: String) async throws(SessionStoreError) -> Session? { try await inner.session(sessionID: sessionID) }
    func update(_ session: Session) async throws(SessionStoreError) { try await inner.update(session) }
    func rotate(sessionID: String, refreshDigest: String, newTokenDigest: String, newRefreshDigest: String,
                lastUsed: Date) async throws(SessionStoreError) -> Session? {
        try await inner.rotate(sessionID: sessionID, refreshDigest: refreshDigest, newTokenDigest: newTokenDigest,
                               newRefreshDigest: newRefreshDigest, lastUsed: lastUsed)
    }
    func updateDirectusTokens(sessionID: String, accessToken: String, accessExpiresAt: Date, refreshToken: String,
                              role: String?) async throws(SessionStoreError) -> Session? {
        do {
            return try await inner.updateDirectusTokens(sessionID: sessionID, accessToken: accessToken, accessExpiresAt: accessExpiresAt,
                                                        refreshToken: refreshToken, role: role)
        } catch {
            refusedDirectusWrites.withLock { $0 += 1 }
            throw error
        }
    }
    func recency(userID: String) async throws(SessionStoreError) -> [SessionRecency] { try await inner.recency(userID: userID) }
    func touch(_ lastUsed: [String: Date]) async throws(SessionStoreError) { try await inner.touch(lastUsed) }
    func delete(sessionID: String) async throws(SessionStoreError) { try await inner.delete(sessionID: sessionID) }
    func purgeExpired(now: Date, idleTTL: TimeInterval) async throws(SessionStoreError) -> [String] {
        try await inner.purgeExpired(now: now, idleTTL: idleTTL)
    }
    func count() async throws(SessionStoreError) -> Int { try await inner.count() }
}

/// Directus rotated the session's refresh token, and the store went away before the new one was written:
/// the gateway keeps trying to store it (briefly) instead of losing the only valid Directus refresh token.
@Suite(.serialized) struct DirectusRefreshStoreOutageTests {
    @Test func newDirectusTokensAreStoredOnceTheStoreIsBack() throws {
        let store = CountingSwitchableStore()
        let gw = try TestGateway(store: store)
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.expireAllAccessTokens()
        gw.upstreamGate.close(holding: 1) { $0.path == "/auth/refresh" }
        let requests = BackgroundRequests()
        let port = gw.port
        requests.start(1) { try RawHTTPClient(port: port).json("GET", "/api/v1/books?limit=1", token: token) }
        try eventually("the refresh reached Directus") { gw.upstreamGate.heldCount == 1 }
        store.setDown(true)  // Directus rotates its refresh token now; the store cannot record it yet
        gw.upstreamGate.open()
        try eventually("the gateway tried to store the new tokens") { store.refusedDirectusWrites.withLock { $0 } >= 1 }
        store.setDown(false)
        let answer = requests.join().first ?? nil
        #expect(answer?.status == 200, "\(answer?.text ?? "no answer")")
        // The session survives: another expiry refreshes with the stored (new) Directus refresh token.
        gw.standIn.expireAllAccessTokens()
        #expect(try gw.client().json("GET", "/api/v1/books?limit=1", token: token).status == 200)
        #expect(gw.standIn.refreshCount == 2)
    }
}
