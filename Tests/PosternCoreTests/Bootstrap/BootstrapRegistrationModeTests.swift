import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import DirectusPlan

/// `register` mode leaves Directus's own `/users` closed: the bootstrap creates no Public create rule on
/// `directus_users` there, and removes the one a former `users` run left.
@Suite struct BootstrapRegistrationModeTests {
    /// An anonymous `POST /users` straight to Directus (what anyone who can reach it may send).
    static func anonymousUserCreate(_ standIn: DirectusStandIn, _ email: String) -> Int {
        standIn.handle(HTTPRequest(method: .post, target: "/users", headers: ["Content-Type": "application/json"],
                                   body: Data(#"{"email":"\#(email)","password":"pw-1234"}"#.utf8))).status
    }

    @Test func freshRegisterModeRunCreatesNoPublicRule() async throws {
        let standIn = BootstrapTests.fresh()
        let report = try await BootstrapTests.bootstrap(standIn, registration: "register").run()
        #expect(BootstrapTests.requests(standIn) == [
            "GET /server/health", "POST /auth/login", "GET /server/info", "GET /policies",
            "GET /collections/posts", "POST /collections",
            "GET /relations/posts/user_created", "POST /relations",
            "GET /relations/posts/user_updated", "POST /relations",
            "GET /collections/comments", "POST /collections", "GET /fields/posts/comments", "POST /fields/posts",
            "GET /relations/comments/post", "POST /relations", "GET /relations/comments/user_created", "POST /relations",
            "GET /roles", "POST /roles", "GET /policies", "POST /policies", "GET /access", "POST /access",
            "GET /permissions", "POST /permissions",
            "GET /access", "GET /permissions", "GET /settings", "PATCH /settings",
        ])
        // The only POST /permissions is the App User policy's.
        let posts = standIn.received.filter { $0.method == .post && $0.path == "/permissions" }
        #expect(posts.count == 1)
        let rows = try #require(BootstrapTests.body(posts.first)?.arrayValue)
        #expect(rows.allSatisfy { $0["policy"] == .string(report.policyID) })
        #expect(!rows.contains { $0["collection"] == .string("directus_users") && $0["action"] == .string("create") })
        #expect(Self.anonymousUserCreate(standIn, "anyone@example.com") == 403)
    }

    @Test func switchingFromUsersToRegisterRemovesThePublicRule() async throws {
        let standIn = BootstrapTests.fresh()
        let first = try await BootstrapTests.bootstrap(standIn, registration: "users").run()
        #expect(Self.anonymousUserCreate(standIn, "before@example.com") == 204)
        let token = try #require(await BootstrapTests.adminToken(standIn))
        let listed = standIn.handle(HTTPRequest(
            method: .get, target: "/permissions?filter%5Bpolicy%5D%5B_eq%5D=\(first.publicPolicyID)&limit=-1",
            headers: ["Authorization": "Bearer \(token)"]))
        let publicRule = try #require((try? JSONValue.parse(listed.body))?["data"]?.arrayValue?.first {
            $0["collection"] == .string("directus_users") && $0["action"] == .string("create")
        })
        let id = try #require(publicRule["id"]?.intValue)

        standIn.clearReceived()
        let lines = BootstrapLines()
        let second = try await BootstrapTests.bootstrap(standIn, registration: "register", lines: lines).run()
        let writes = BootstrapTests.writes(standIn).map { "\($0.method) \($0.path)" }
        #expect(writes == ["DELETE /permissions/\(id)", "PATCH /settings"])
        #expect(second.steps.contains(BootstrapReport.Step(name: "Public permission directus_users create", outcome: .removed)))
        #expect(lines.all.contains("Public permission directus_users create: removed"))
        #expect(lines.all.last?.contains("1 removed") == true)
        #expect(Self.anonymousUserCreate(standIn, "after@example.com") == 403)

        // Once removed, a rerun in register mode changes nothing.
        standIn.clearReceived()
        let third = try await BootstrapTests.bootstrap(standIn, registration: "register").run()
        #expect(BootstrapTests.writes(standIn).isEmpty)
        #expect(!third.changed)
    }

    @Test func aPublicRuleSomeoneElseAddedIsReportedNotRemoved() async throws {
        let standIn = BootstrapTests.fresh()
        let token = try #require(await BootstrapTests.adminToken(standIn))
        let made = standIn.handle(HTTPRequest(
            method: .post, target: "/permissions",
            headers: ["Authorization": "Bearer \(token)", "Content-Type": "application/json"],
            body: Data(#"{"policy":"\#(BootstrapPlan.publicPolicyID)","collection":"directus_users","action":"create","fields":["email","password"],"presets":{"role":"some-other-role"}}"#.utf8)))
        #expect(made.status == 200)
        let lines = BootstrapLines()
        _ = try await BootstrapTests.bootstrap(standIn, registration: "register", lines: lines).run()
        #expect(!standIn.received.contains { $0.method == .delete })
        #expect(lines.all.contains { $0.hasPrefix("warning: the Public policy has another create rule on directus_users") })
    }
}
