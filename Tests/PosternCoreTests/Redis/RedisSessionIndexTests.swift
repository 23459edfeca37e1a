import Foundation
import Testing
@testable import PosternCore
import PosternTesting

/// Creating and rotating a session write its index keys through one Lua definition: against a real redis-server, a
/// session rotated to new digests is filed exactly as the same session created with them.
@Suite(.serialized) struct RedisSessionIndexTests {
    /// What the index keys of session `id` hold: the digest keys' values, every expiry, the scores in `u:` and `all`,
    /// and the digests and last use in the session hash.
    struct Filing: Equatable {
        var digestKeys: [String?]
        var expiries: [Int64?]
        var scores: [String?]
        var fields: [String?]
    }

    static func filing(_ f: RedisSessionStoreTests.Fixture, _ s: Session) async throws -> Filing {
        let keys = ["postern:s:" + s.id, "postern:t:" + s.tokenDigest, "postern:r:" + s.refreshDigest]
        var filing = Filing(digestKeys: [], expiries: [], scores: [], fields: [])
        for key in keys.dropFirst() { filing.digestKeys.append(try await f.clients.command(["GET", .string(key)]).string) }
        for key in keys { filing.expiries.append(try await f.clients.command(["PEXPIRETIME", .string(key)]).integer) }
        for key in ["postern:u:" + s.userID, "postern:all"] {
            filing.scores.append(try await f.clients.command(["ZSCORE", .string(key), .string(s.id)]).string)
        }
        for field in ["td", "rd", "l"] {
            filing.fields.append(try await f.clients.command(["HGET", .string(keys[0]), .string(field)]).string)
        }
        return filing
    }

    @Test func aRotatedSessionIsFiledLikeOneCreatedWithItsNewDigests() async throws {
        let f = try RedisSessionStoreTests.Fixture()
        defer { f.close() }
        let first = RedisSessionStoreTests.session(age: 600, idle: 300)
        let now = Date(timeIntervalSince1970: Date().timeIntervalSince1970.rounded())
        var second = first
        second.tokenDigest = Crypto.sha256Hex(Crypto.newToken(prefix: "pst_"))
        second.refreshDigest = Crypto.sha256Hex(Crypto.newToken(prefix: "psr_"))
        second.lastUsedAt = now

        try await f.store.insert(first)
        let rotated = try await f.store.rotate(sessionID: first.id, refreshDigest: first.refreshDigest,
                                               newTokenDigest: second.tokenDigest, newRefreshDigest: second.refreshDigest,
                                               lastUsed: now)
        #expect(rotated == second)
        let afterRotation = try await Self.filing(f, second)
        for old in ["postern:t:" + first.tokenDigest, "postern:r:" + first.refreshDigest] {
            #expect(try await f.clients.command(["EXISTS", .string(old)]).integer == 0, "\(old)")
        }

        try await f.store.delete(sessionID: first.id)
        #expect(try await Self.filing(f, second).digestKeys == [nil, nil])
        try await f.store.insert(second)
        let afterCreation = try await Self.filing(f, second)

        #expect(afterRotation == afterCreation)
        #expect(afterCreation.digestKeys == [first.id, first.id])
        #expect(afterCreation.expiries.allSatisfy { ($0 ?? -1) > 0 })
    }
}
