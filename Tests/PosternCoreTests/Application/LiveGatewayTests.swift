import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternCoreTesting
import PosternHTTP

@Suite(.serialized) struct LiveGatewayTests {
    @Test func loginAnswers200WithTheClientShape() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let r = try gw.client().json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
        #expect(r.status == 200)
        let user = try #require(r.json?["user"])
        let token = try #require(user["token"]?.stringValue)
        #expect(token.hasPrefix("pst_"))
        #expect(user["email"] == .string("x@y.com"))
        #expect(user["id"]?.stringValue == gw.standIn.userID(email: "x@y.com"))
        #expect(user["expires_at"]?.stringValue?.hasSuffix("Z") == true)
        #expect(r.json?["data"]?["accessToken"]?.stringValue == token)
        #expect(r.json?["data"]?["refreshToken"]?.stringValue?.hasPrefix("psr_") == true)
        #expect(r.headers["Cache-Control"] == "no-store")
        // No Directus token leaves the gateway.
        #expect(!r.text.contains("eyJ"))
    }
}

extension LiveGatewayTests {
    @Test func twentyConcurrentRequestsAfterExpiryRefreshDirectusOnce() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.expireAllAccessTokens()
        let before = gw.standIn.refreshCount
        // 20 clients on 20 threads, connected first, then released together.
        let statuses = gw.concurrently(20) { client in try client.json("GET", "/api/v1/books", token: token) }
        #expect(statuses == Array(repeating: 200, count: 20))
        #expect(gw.standIn.refreshCount - before == 1)
        let refreshes = gw.upstream("/auth/refresh")
        #expect(refreshes.count == 1)
        #expect(refreshes.allSatisfy { $0.headers["Authorization"] == nil })
    }

    @Test func expiredDirectusTokenIsRefreshedBeforeTheCall() throws {
        var options = DirectusStandIn.Options()
        options.accessTokenTTL = 6  // the gateway refreshes 5 s before expiry
        let clock = TestClock()
        let gw = try TestGateway(standInOptions: options, clock: clock.gatewayClock)
        defer { gw.stop() }
        let token = try gw.login()
        clock.advance(1.2)  // the token now expires in 4.8 s: inside the gateway's 5 s margin
        let r = try gw.client().json("GET", "/api/v1/books", token: token)
        #expect(r.status == 200)
        #expect(gw.standIn.refreshCount == 1)
        // The item call came after the refresh, never with a stale token.
        let paths = gw.standIn.received.map(\.path).filter { $0 != "/auth/login" }
        #expect(paths.first == "/auth/refresh")
    }

    @Test func deadDirectusRefreshTokenEndsTheSession() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = try gw.login()
        // Log the Directus session out behind the gateway's back, then make the access token stale.
        gw.standIn.revokeAllRefreshTokens()
        gw.standIn.expireAllAccessTokens()
        let r = try gw.client().json("GET", "/api/v1/books", token: token)
        #expect(r.status == 401)
        #expect(r.json?["total"] == .int(0))
        // The gateway tried Directus's refresh once, and the refused refresh ended the Postern session:
        // the next call is 401 without asking Directus again.
        #expect(gw.upstream("/auth/refresh").count == 1)
        #expect(try gw.client().json("GET", "/api/v1/user/me", token: token).status == 401)
        #expect(gw.upstream("/auth/refresh").count == 1)
    }

    @Test func sessionsSurviveARestartWithTheSQLiteStore() throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("postern-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("sessions.db").path
        let gw = try TestGateway { $0.sessions.store = "sqlite:\(path)" }
        defer { gw.stop() }
        let token = try gw.login()
        #expect(try gw.client().json("GET", "/api/v1/books", token: token).status == 200)
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)
        try gw.restartGateway()
        let r = try gw.client().json("GET", "/api/v1/books", token: token)
        #expect(r.status == 200)
        #expect(r.json?["books"]?.arrayValue?.isEmpty == false)
        // Logout is still effective after the restart.
        #expect(try gw.client().json("POST", "/api/v1/user/logout", token: token).status == 204)
        try gw.restartGateway()
        #expect(try gw.client().json("GET", "/api/v1/books", token: token).status == 401)
    }

    @Test func traversalIDsNeverReachAnotherUpstreamPath() throws {
        var options = DirectusStandIn.Options()
        options.seed = true
        let gw = try TestGateway(standInOptions: options) { config in
            // A string-keyed resource, where odd ids are valid keys and must be encoded, not interpreted.
            var notes = ResourceConfig(name: "notes", collection: "posts", fields: [("id", "id"), ("title", "title")])
            notes.idType = .string
            notes.required = ["title"]
            notes.writable = ["title"]
            notes.permissions = [.list: .authenticated, .read: .authenticated, .create: .authenticated,
                                 .update: .authenticated, .delete: .authenticated]
            config.resources.append(notes)
        }
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        for id in ["..%2F..%2Fusers%2Fme", "..", "%2E%2E", "1%3Fx%3D1", "a%23b", "..%5Cusers"] {
            let r = try gw.client().json("GET", "/api/v1/notes/\(id)", token: token)
            #expect(r.status == 404, "\(id)")
            _ = try gw.client().json("DELETE", "/api/v1/notes/\(id)", token: token)
        }
        let paths = gw.standIn.received.map(\.path)
        #expect(!paths.isEmpty)
        for path in paths {
            #expect(path.hasPrefix("/items/posts/"), "\(path)")
            #expect(!path.contains("/users"), "\(path)")
        }
        #expect(gw.standIn.posts().count >= 5)
    }
}
