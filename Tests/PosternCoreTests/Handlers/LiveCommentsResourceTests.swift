import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

/// The shipped `comments` resource through real sockets against the stand-in (docs/api.md, Resources): listed per
/// post with `?post=`, created by any signed-in user, changed or deleted only by its author (403 otherwise, with
/// nothing sent upstream).
@Suite(.serialized) struct LiveCommentsResourceTests {
    static func texts(_ r: RawHTTPClient.Response) -> [String] {
        (r.json?["comments"]?.arrayValue ?? []).compactMap { $0["text"]?.stringValue }
    }

    /// The writes (not reads) Directus received on `comments`.
    static func writes(_ gw: TestGateway) -> [HTTPRequest] {
        gw.upstream("/items/comments").filter { $0.method != .get }
    }

    @Test func theCommentsOfOnePost() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = try gw.login()
        let grace = try #require(gw.standIn.userID(email: "second@example.com"))
        let r = try gw.client().json("GET", "/api/v1/comments?post=1", token: token)
        #expect(r.status == 200, "\(r.text)")
        #expect(Self.texts(r) == ["Welcome to the tutorial!", "Thanks, glad you like it.", "Looking forward to more."])
        #expect(r.json?["total"] == .int(3))
        let first = try #require(r.json?["comments"]?.arrayValue?.first)
        #expect(first["post"] == .int(1))
        #expect(first["user"]?.stringValue == grace)
        #expect(first["date_created"]?.stringValue == "2025-05-01T11:00:00.000Z")
        #expect(first["id"]?.stringValue == "1")
        let sent = try #require(gw.upstream("/items/comments").last).queryItems
        #expect(sent.contains { $0.name == "filter[_and][0][post][_eq]" && $0.value == "1" })

        let none = try gw.client().json("GET", "/api/v1/comments?post=3", token: token)
        #expect(none.status == 200)
        #expect(none.json?["comments"]?.arrayValue == [])
        #expect(none.json?["total"] == .int(0))
        let every = try gw.client().json("GET", "/api/v1/comments", token: token)
        #expect(every.json?["total"] == .int(5))

        gw.standIn.clearReceived()
        let bad = try gw.client().json("GET", "/api/v1/comments?post=first", token: token)
        #expect(bad.status == 400)
        #expect(bad.json?["error"]?.stringValue?.contains("\"post\"") == true)
        #expect(gw.upstream("/items/").isEmpty)
    }

    @Test func anySignedInUserCommentsAndOnlyTheAuthorChangesOrDeletes() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let ada = try gw.login()
        let grace = try gw.login("second@example.com", "password2")
        let graceID = try #require(gw.standIn.userID(email: "second@example.com"))

        let created = try gw.client().json("POST", "/api/v1/comments", #"{"post": "2", "text": "Agreed."}"#, token: grace)
        #expect(created.status == 201, "\(created.text)")
        let comment = try #require(created.json?["comments"]?.arrayValue?.first)
        #expect(comment["text"]?.stringValue == "Agreed.")
        #expect(comment["post"] == .int(2))
        #expect(comment["user"]?.stringValue == graceID)
        let id = try #require(comment["id"]?.stringValue)
        let listed = try gw.client().json("GET", "/api/v1/comments?post=2", token: ada)
        #expect(Self.texts(listed) == ["Swift is a pleasure.", "Agreed."])

        // Someone else's comment: 403, and no write reaches Directus.
        gw.standIn.clearReceived()
        let patch = try gw.client().json("PATCH", "/api/v1/comments/\(id)", #"{"text": "Hijacked."}"#, token: ada)
        #expect(patch.status == 403, "\(patch.text)")
        #expect(patch.json?["code"]?.stringValue == "forbidden")
        let delete = try gw.client().json("DELETE", "/api/v1/comments/\(id)", token: ada)
        #expect(delete.status == 403)
        #expect(Self.writes(gw).isEmpty, "a write was sent: \(Self.writes(gw).map(\.path))")
        let unchanged = try gw.client().json("GET", "/api/v1/comments/\(id)", token: ada)
        #expect(Self.texts(unchanged) == ["Agreed."])

        // The author may.
        let edited = try gw.client().json("PATCH", "/api/v1/comments/\(id)", #"{"text": "Agreed, twice."}"#, token: grace)
        #expect(edited.status == 200)
        #expect(Self.texts(edited) == ["Agreed, twice."])
        let removed = try gw.client().json("DELETE", "/api/v1/comments/\(id)", token: grace)
        #expect(removed.status == 204)
        #expect(try gw.client().json("GET", "/api/v1/comments/\(id)", token: grace).status == 404)
    }

    @Test func commentingNeedsASignedInUser() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        gw.standIn.clearReceived()
        let r = try gw.client().json("POST", "/api/v1/comments", #"{"post": "1", "text": "Anonymous."}"#)
        #expect(r.status == 401)
        #expect(gw.upstream("/items/").isEmpty)
    }
}
