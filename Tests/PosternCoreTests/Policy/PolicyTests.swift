import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import DirectusStandIn
import PosternHTTP

@Suite struct PolicyTests {
    static let user = Session(id: "s", tokenDigest: "t", refreshDigest: "r", userID: "u1", email: "a@example.com",
                              role: "role-editor", directusAccessToken: "jwt", directusAccessExpiresAt: .distantFuture,
                              directusRefreshToken: "rt", createdAt: .now, lastUsedAt: .now, expiresAt: .distantFuture)

    @Test(arguments: [
        (PermissionRule.public, false, PolicyDecision.allow),
        (.public, true, .allow),
        (.authenticated, false, .unauthenticated),
        (.authenticated, true, .allow),
        (.owner, false, .unauthenticated),
        (.owner, true, .allowIfOwner),
        (.role("role-editor"), true, .allow),
        (.role("role-admin"), true, .deny),
        (.role("role-editor"), false, .unauthenticated),
        (.nobody, true, .deny),
        (.nobody, false, .deny),
    ])
    func decisionMatrix(rule: PermissionRule, signedIn: Bool, expected: PolicyDecision) {
        #expect(Policy.decide(rule, identity: signedIn ? PolicyTests.user : nil) == expected)
    }

    @Test(arguments: ["public", "authenticated", "owner", "nobody", "role:abc"])
    func rulesRoundTripThroughTheirConfigText(text: String) {
        #expect(PermissionRule(text)?.description == text)
    }

    @Test(arguments: ["", "role:", "admin", "Owner"])
    func unknownRuleTextIsRejected(text: String) {
        #expect(PermissionRule(text) == nil)
    }
}

@Suite struct PolicyRouteTests {
    /// Table-driven: per rule, what each caller gets on a read of user x@y.com's post through the pipeline.
    @Test(arguments: [
        ("owner", "x@y.com", 200), ("owner", "second@example.com", 403), ("owner", nil, 401),
        ("authenticated", "second@example.com", 200), ("nobody", "x@y.com", 403), ("public", nil, 403),
        ("role:6f1b2c3d-4e5f-4a6b-8c7d-9e0f1a2b3c4d", "second@example.com", 200), ("role:other", "x@y.com", 403),
    ] as [(String, String?, Int)])
    func readRuleThroughThePipeline(rule: String, caller: String?, status: Int) async throws {
        let gw = InProcessGateway { config in
            config.resources[0].permissions[.read] = PermissionRule(rule)
        }
        let id = try #require(gw.postIDs(ownedBy: "x@y.com").first)
        var token: String?
        if let caller { token = try await gw.login(caller, caller == "x@y.com" ? "123456" : "password2") }
        let a = await gw.send(.get, "/api/v1/books/\(id)", token: token)
        // `public` with no token reaches Directus anonymously, whose Public role may not read posts: 403 hides 404.
        let expected = rule == "public" ? 404 : status
        #expect(a.status == expected, "\(rule) as \(caller ?? "anonymous")")
    }

    @Test func ownerRuleOnListShowsOnlyOwnItems() async throws {
        let gw = InProcessGateway { $0.resources[0].permissions[.list] = .owner }
        let token = try await gw.login()
        let a = await gw.send(.get, "/api/v1/books?limit=100", token: token)
        #expect(a.status == 200)
        let uid = gw.standIn.userID(email: "x@y.com")
        let users = a.json?["books"]?.arrayValue?.map { $0["user"]?.stringValue } ?? []
        #expect(!users.isEmpty)
        #expect(users.allSatisfy { $0 == uid })
        #expect(a.json?["total"] == .int(Int64(gw.postIDs(ownedBy: "x@y.com").count)))
    }
}
