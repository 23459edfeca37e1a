import Foundation
import Testing
@testable import PosternCore
import PosternTesting

/// A session's fields live in a shared box, and it keeps value semantics: a change to a copy never shows in the
/// original (`HTTPRequest`: HTTPValueSemanticsTests).
@Suite struct SessionValueSemanticsTests {
    static func session() -> Session {
        let now = Date(timeIntervalSince1970: 1_800_000_000)
        return Session(id: "s-1", tokenDigest: String(repeating: "a", count: 64), refreshDigest: String(repeating: "b", count: 64),
                       userID: "u-1", email: "a@example.com", role: "r-1", directusAccessToken: "jwt-1",
                       directusAccessExpiresAt: now + 900, directusRefreshToken: "rt-1", createdAt: now, lastUsedAt: now,
                       expiresAt: now + 86_400)
    }

    @Test func aChangedSessionCopyLeavesTheOriginalAsItWas() {
        let original = SessionValueSemanticsTests.session()
        var copy = original
        #expect(copy == original)
        copy.lastUsedAt = original.lastUsedAt + 60
        copy.role = nil
        copy.directusAccessToken = "jwt-2"
        #expect(original.lastUsedAt == Date(timeIntervalSince1970: 1_800_000_000))
        #expect(original.role == "r-1" && original.directusAccessToken == "jwt-1")
        #expect(copy.role == nil && copy.directusAccessToken == "jwt-2")
        #expect(copy != original)
        // Equal fields in separate boxes are equal sessions.
        #expect(SessionValueSemanticsTests.session() == original)
    }
}
