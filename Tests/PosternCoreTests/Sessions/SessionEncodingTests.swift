import Foundation
import Testing
@testable import PosternCore
import PosternTesting

/// The packed forms sessions are held in (raw digests, slot pages and slot indexes): every session reads
/// back exactly as written, whatever its digests and tokens look like.
@Suite struct SessionEncodingTests {
    private static let t0 = Date(timeIntervalSince1970: 1_700_000_000.25)

    /// A session with the given digests and long, non-ASCII strings everywhere a string goes.
    private static func session(id: String = Session.newID(), token: String, refresh: String,
                                created: Date = t0, lastUsed: Date? = nil, maxAge: TimeInterval = 30 * 86_400) -> Session {
        Session(id: id, tokenDigest: token, refreshDigest: refresh,
                userID: "usér-😀-\(UUID().uuidString)", email: "zoë+tëst@exämple.com", role: "rôle-Ω",
                directusAccessToken: "eyJ" + String(repeating: "ä€😀x", count: 2_000) + ".sig",
                directusAccessExpiresAt: created.addingTimeInterval(900.125),
                directusRefreshToken: String(repeating: "R-ü-", count: 3_000),
                createdAt: created, lastUsedAt: lastUsed ?? created, expiresAt: created.addingTimeInterval(maxAge))
    }

    private static func temporaryDirectory() throws -> URL {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("postern-test-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        return dir
    }

    @Test func everyDigestTextReadsBackExactly() {
        let canonical = Crypto.sha256Hex("token")
        for text in [canonical, canonical.uppercased(), String(canonical.dropLast()), canonical + "0", "td", "",
                     String(repeating: "g", count: 64), "é" + String(canonical.dropFirst(2))] {
            var s = Self.session(token: text, refresh: text)
            #expect(s.tokenDigest == text)
            #expect(s.refreshDigest == text)
            s.tokenDigest = canonical
            #expect(s.tokenDigest == canonical)
        }
        // Only canonical lower-case hex is packed; the same digest in upper case stays a different text.
        #expect(SessionDigest(canonical) == .sha256(TokenKey(token: "token")))
        #expect(SessionDigest(canonical.uppercased()) == .text(canonical.uppercased()))
        let lower = Self.session(id: "a", token: canonical, refresh: "r")
        var upper = lower
        upper.tokenDigest = canonical.uppercased()
        #expect(lower != upper)
    }

    @Test(arguments: SessionStoreTestKind.allCases)
    func aSessionWithNonASCIIAndLongTokensRoundTrips(_ kind: SessionStoreTestKind) async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try kind.make(in: dir)
        let packed = Self.session(token: Crypto.sha256Hex("a"), refresh: Crypto.sha256Hex("b"))
        let odd = Self.session(token: "TD-not-hex", refresh: Crypto.sha256Hex("c").uppercased())
        try await store.insert(packed)
        try await store.insert(odd)
        for s in [packed, odd] {
            #expect(try await store.session(tokenDigest: s.tokenDigest) == s)
            #expect(try await store.session(refreshDigest: s.refreshDigest) == s)
            #expect(try await store.session(sessionID: s.id) == s)
        }
        // A digest only finds its session by its own text.
        #expect(try await store.session(refreshDigest: Crypto.sha256Hex("c")) == nil)
        #expect(try await store.session(tokenDigest: "td-not-hex") == nil)

        var rotated = try #require(try await store.rotate(sessionID: odd.id, refreshDigest: odd.refreshDigest,
                                                          newTokenDigest: Crypto.sha256Hex("d"), newRefreshDigest: "R2",
                                                          lastUsed: Self.t0.addingTimeInterval(1.5)))
        #expect(rotated.tokenDigest == Crypto.sha256Hex("d"))
        #expect(try await store.session(refreshDigest: "R2") == rotated)
        #expect(try await store.sessionID(usedRefreshDigest: odd.refreshDigest) == odd.id)
        #expect(try await store.session(tokenDigest: odd.tokenDigest) == nil)

        let newAccess = "ñ" + String(repeating: "ẞ", count: 5_000)
        rotated = try #require(try await store.updateDirectusTokens(sessionID: odd.id, accessToken: newAccess,
                                                                    accessExpiresAt: Self.t0.addingTimeInterval(7.75),
                                                                    refreshToken: "ref-ø", role: "rôle-Ψ"))
        #expect(rotated.directusAccessToken == newAccess)
        #expect(rotated.directusRefreshToken == "ref-ø")
        #expect(rotated.role == "rôle-Ψ")
        #expect(rotated.directusAccessExpiresAt == Self.t0.addingTimeInterval(7.75))
        #expect(try await store.session(sessionID: odd.id) == rotated)
        #expect(try await store.session(sessionID: packed.id) == packed)
    }

    @Test(arguments: SessionStoreTestKind.allCases)
    func expiryEdgesAreExactToTheSubsecond(_ kind: SessionStoreTestKind) async throws {
        let dir = try Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try kind.make(in: dir)
        let idle: TimeInterval = 3_600
        let now = Self.t0.addingTimeInterval(86_400)
        let ms = 0.001
        // Absolute expiry exactly now: dead; a millisecond later: alive (its idle expiry is far off).
        let absoluteEdge = Self.session(token: Crypto.sha256Hex("1"), refresh: Crypto.sha256Hex("1r"),
                                        created: now.addingTimeInterval(-100), maxAge: 100)
        let absoluteAfter = Self.session(token: Crypto.sha256Hex("2"), refresh: Crypto.sha256Hex("2r"),
                                         created: now.addingTimeInterval(-100), maxAge: 100 + ms)
        // Idle expiry exactly now: dead; a millisecond later: alive.
        let idleEdge = Self.session(token: Crypto.sha256Hex("3"), refresh: Crypto.sha256Hex("3r"),
                                    created: now.addingTimeInterval(-idle - 10), lastUsed: now.addingTimeInterval(-idle))
        let idleAfter = Self.session(token: Crypto.sha256Hex("4"), refresh: Crypto.sha256Hex("4r"),
                                     created: now.addingTimeInterval(-idle - 10), lastUsed: now.addingTimeInterval(-idle + ms))
        for s in [absoluteEdge, absoluteAfter, idleEdge, idleAfter] { try await store.insert(s) }
        #expect(absoluteEdge.isExpired(now: now, idleTTL: idle) && idleEdge.isExpired(now: now, idleTTL: idle))
        #expect(!absoluteAfter.isExpired(now: now, idleTTL: idle) && !idleAfter.isExpired(now: now, idleTTL: idle))

        #expect(try await Set(store.purgeExpired(now: now, idleTTL: idle)) == [absoluteEdge.id, idleEdge.id])
        // (By id: SQLite keeps times as seconds since 1970 in a REAL, which may move a millisecond fraction's last bits.)
        #expect(try await store.session(tokenDigest: absoluteAfter.tokenDigest)?.id == absoluteAfter.id)
        #expect(try await store.session(tokenDigest: idleAfter.tokenDigest)?.id == idleAfter.id)
        #expect(try await Set(store.purgeExpired(now: now.addingTimeInterval(ms), idleTTL: idle)) == [absoluteAfter.id, idleAfter.id])
        #expect(try await store.count() == 0)
    }

    /// Thousands of inserts, rotations and deletes in a random (seeded) order, checked after each round
    /// against a plain dictionary: every live session is found by id and both digests, no dead one is,
    /// and freed slots are reused without a stale index entry pointing at them.
    @Test func theMemoryStoreAgreesWithAPlainDictionaryUnderChurn() async throws {
        let store = MemorySessionStore()
        var model: [String: Session] = [:]
        var dead: [Session] = []
        var random = SplitMix64(seed: 9)
        var serial = 0
        func fresh() -> Session {
            serial += 1
            // One in ten with non-canonical digests (kept as text), the rest packed.
            let odd = serial % 10 == 0
            return Session(id: "s\(serial)", tokenDigest: odd ? "t\(serial)" : Crypto.sha256Hex("t\(serial)"),
                           refreshDigest: odd ? "r\(serial)" : Crypto.sha256Hex("r\(serial)"),
                           userID: "u\(serial % 37)", email: "e\(serial % 37)", role: serial % 3 == 0 ? nil : "role",
                           directusAccessToken: "a\(serial)", directusAccessExpiresAt: Self.t0, directusRefreshToken: "dr\(serial)",
                           createdAt: Self.t0, lastUsedAt: Self.t0, expiresAt: Self.t0.addingTimeInterval(Double(serial)))
        }
        for _ in 0..<6 {
            for _ in 0..<1_500 {
                let s = fresh()
                try store.insert(s)
                model[s.id] = s
            }
            for id in model.keys.shuffled(using: &random).prefix(700) {
                if Bool.random(using: &random), var s = model[id] {
                    serial += 1
                    let newRefresh = Crypto.sha256Hex("rot\(serial)")
                    s = try #require(try store.rotate(sessionID: id, refreshDigest: s.refreshDigest,
                                                      newTokenDigest: Crypto.sha256Hex("tok\(serial)"),
                                                      newRefreshDigest: newRefresh, lastUsed: Self.t0.addingTimeInterval(1)))
                    dead.append(model[id]!)  // the pre-rotation digests must no longer be found (ids are checked below)
                    model[id] = s
                } else {
                    try store.delete(sessionID: id)
                    dead.append(model.removeValue(forKey: id)!)  // just read from the model: present
                }
            }
            #expect(try store.count() == model.count)
            for s in model.values {
                #expect(try store.session(sessionID: s.id) == s)
                #expect(try store.session(tokenDigest: s.tokenDigest) == s)
                #expect(try store.session(refreshDigest: s.refreshDigest) == s)
            }
            for s in dead {
                #expect(try store.session(tokenDigest: s.tokenDigest) == nil)
                #expect(try store.session(refreshDigest: s.refreshDigest) == nil)
                if model[s.id] == nil { #expect(try store.session(sessionID: s.id) == nil) }
            }
            for user in 0..<37 {
                let expected = Set(model.values.filter { $0.userID == "u\(user)" }.map(\.id))
                #expect(Set(try store.recency(userID: "u\(user)").map(\.id)) == expected)
            }
        }
        let purged = try store.purgeExpired(now: Self.t0.addingTimeInterval(Double(serial + 1)), idleTTL: 1e9)
        #expect(Set(purged) == Set(model.keys))
        #expect(try store.count() == 0)
    }
}

/// The transcoder tests' seeded generator, usable with `shuffled(using:)` (a failing churn order replays).
extension SplitMix64: RandomNumberGenerator {}
