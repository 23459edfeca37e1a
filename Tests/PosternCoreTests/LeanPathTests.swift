import Foundation
import Testing
@testable import PosternCore

@Suite struct LeanPathTests {
    @Test func bearerTokensAreReadLikeBefore() {
        #expect(AuthenticationMiddleware.bearer("Bearer abc") == "abc")
        #expect(AuthenticationMiddleware.bearer("bEaReR   abc  ") == "abc")
        #expect(AuthenticationMiddleware.bearer("  Bearer abc") == "abc")
        #expect(AuthenticationMiddleware.bearer("Bearer") == nil)
        #expect(AuthenticationMiddleware.bearer("Bearer ") == nil)
        #expect(AuthenticationMiddleware.bearer("Bearerabc") == nil)
        #expect(AuthenticationMiddleware.bearer("Bearer a b") == nil)
        #expect(AuthenticationMiddleware.bearer("Basic abc") == nil)
        #expect(AuthenticationMiddleware.bearer("Bearer\tabc") == nil)
        #expect(AuthenticationMiddleware.bearer("Bearer é😀") == "é😀")
        #expect(AuthenticationMiddleware.bearer(nil) == nil)
    }

    @Test func generatedRequestIDsAreDistinctSafeHex() {
        var seen = Set<String>()
        for _ in 0..<10_000 {
            let id = RequestID.accept(nil)
            #expect(id.utf8.count == 24)
            #expect(id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) })
            seen.insert(id)
        }
        #expect(seen.count == 10_000)
        #expect(RequestID.accept("bad id!") != "bad id!")
        #expect(RequestID.accept("ok-1.2_3") == "ok-1.2_3")
    }
}
