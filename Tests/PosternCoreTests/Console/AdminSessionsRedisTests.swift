import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import DirectusStandIn
import PosternHTTP

/// The operator's session control with two gateway instances on one real redis-server: a session signed in on
/// one is listed on the other, and a revocation on either ends the session on both within 1 s, even where it
/// was cached.
@Suite(.serialized) struct AdminSessionsRedisTests {
    static let adminToken = "redis-admin-token-0123456789"

    /// One admin call on `app`'s admin listener.
    static func admin(_ app: Application, _ method: String, _ target: String) throws -> RawHTTPClient.Response {
        try RawHTTPClient(port: app.adminPort).json(method, target, token: adminToken)
    }

    @Test func aRevocationOnOneInstanceEndsTheSessionOnTheOtherWithinOneSecond() throws {
        let two = try TwoGateways { $0.admin.token = Self.adminToken }
        defer { two.stop() }
        let r = try two.client(two.a).json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#,
                                           headers: ["User-Agent": "phone/2"])
        let token = try #require(r.json?["user"]?["token"]?.stringValue)
        let kept = try two.login(two.a)
        // B caches the session: only the revocation announcement can take it out of B's cache.
        #expect(try two.me(two.b, token) == 200)
        #expect(try two.me(two.b, token) == 200)

        // Listed on B, with what A saw at sign-in.
        let listed = try Self.admin(two.b, "GET", "/admin/sessions?user=x@y.com")
        guard case .array(let items)? = listed.json?["data"] else { throw TestFailure("list: \(listed.text)") }
        let mine = try #require(items.first { $0["user_agent"]?.stringValue == "phone/2" })
        #expect(items.count == 2 && mine["client_ip"]?.stringValue == "127.0.0.1")
        let id = try #require(mine["id"]?.stringValue)

        let revoked = try Self.admin(two.a, "DELETE", "/admin/sessions/" + id.prefix(10))
        #expect(revoked.status == 200 && revoked.json?["data"]?["revoked"]?.intValue == 1, "\(revoked.text)")
        #expect(try two.me(two.a, token) == 401)
        try eventually("the revoked token refused on B", timeout: 1) { try two.me(two.b, token) == 401 }
        #expect(try two.me(two.b, kept.token) == 200)

        // All of a user's sessions, revoked on B, end on A (where they were signed in and cached) too.
        #expect(try two.me(two.a, kept.token) == 200)
        let userID = try #require(two.standIn.userID(email: "x@y.com"))
        let all = try Self.admin(two.b, "DELETE", "/admin/users/\(userID)/sessions")
        #expect(all.status == 200 && all.json?["data"]?["revoked"]?.intValue == 1, "\(all.text)")
        try eventually("the user's sessions refused on A", timeout: 1) { try two.me(two.a, kept.token) == 401 }
        let empty = try Self.admin(two.a, "GET", "/admin/sessions?user=" + userID)
        #expect(empty.json?["data"] == .array([]), "\(empty.text)")
    }
}
