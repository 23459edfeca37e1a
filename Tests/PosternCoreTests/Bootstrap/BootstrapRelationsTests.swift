@testable import DirectusPlan
import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP

/// `postern bootstrap` creates the demo's comments, their relations and the related read rules (docs/bootstrap.md, 5b,
/// §8.4), on a fresh stand-in, idempotently.
@Suite struct BootstrapRelationsTests {
    /// One admin call to the stand-in; the answer's status and `data`.
    static func call(_ standIn: DirectusStandIn, _ method: HTTPMethod, _ target: String, _ body: String? = nil,
                     token: String?) -> (status: Int, data: JSONValue?) {
        var headers = HTTPHeaders()
        if let token { headers.add("Authorization", "Bearer \(token)") }
        if body != nil { headers.add("Content-Type", "application/json") }
        let response = standIn.handle(HTTPRequest(method: method, target: target, headers: headers,
                                                  body: Data((body ?? "").utf8)))
        return (response.status, (try? JSONValue.parse(response.body))?["data"])
    }

    static func token(_ standIn: DirectusStandIn, _ email: String, _ password: String) -> String? {
        call(standIn, .post, "/auth/login", #"{"email":"\#(email)","password":"\#(password)"}"#, token: nil)
            .data?["access_token"]?.stringValue
    }

    @Test func aFreshDirectusGetsCommentsTheirRelationsAndTheAlias() async throws {
        let standIn = BootstrapTests.fresh()
        let report = try await BootstrapTests.bootstrap(standIn).run()
        let admin = try #require(Self.token(standIn, "admin@example.com", "admin-password"))

        let comments = Self.call(standIn, .get, "/fields/comments", token: admin)
        #expect(comments.data?.arrayValue?.compactMap { $0["field"]?.stringValue }
            == ["id", "post", "body", "user_created", "date_created"])
        let alias = Self.call(standIn, .get, "/fields/posts/comments", token: admin).data
        #expect(alias?["type"] == .string("alias"))
        #expect(alias?["schema"] == .null)
        let post = Self.call(standIn, .get, "/relations/comments/post", token: admin).data
        #expect(post?["related_collection"] == .string("posts"))
        #expect(post?["meta"]?["one_field"] == .string("comments"))
        #expect(Self.call(standIn, .get, "/relations/comments/user_created", token: admin).data?["related_collection"]
            == .string("directus_users"))
        for name in ["collection comments", "field posts.comments (one-to-many alias)",
                     "relation comments.post → posts", "relation comments.user_created → directus_users"] {
            #expect(report.steps.contains(BootstrapReport.Step(name: name, outcome: .created)), "\(name)")
        }

        // The rules: every user row's id and first_name, the mapped comment fields, own-only comment writes.
        let rules = Self.call(standIn, .get, "/permissions?filter[policy][_eq]=\(report.policyID)&limit=-1", token: admin)
            .data?.arrayValue ?? []
        let userReads = rules.filter { $0["collection"] == .string("directus_users") && $0["action"] == .string("read") }
        #expect(userReads.contains { $0["fields"] == .array([.string("id"), .string("first_name")]) && $0["permissions"] == .null })
        #expect(userReads.count == 2)
        let commentRead = rules.first { $0["collection"] == .string("comments") && $0["action"] == .string("read") }
        #expect(commentRead?["fields"] == .array(BootstrapPlan.commentReadFields.map(JSONValue.string)))
    }

    @Test func aRegisteredUserCommentsAndReadsNamesThroughTheRelations() async throws {
        let standIn = BootstrapTests.fresh()
        _ = try await BootstrapTests.bootstrap(standIn).run()
        for email in ["u1@example.com", "u2@example.com"] {
            #expect(Self.call(standIn, .post, "/users", #"{"email":"\#(email)","password":"pw-1234"}"#, token: nil).status == 204)
        }
        let u1 = try #require(Self.token(standIn, "u1@example.com", "pw-1234"))
        let u2 = try #require(Self.token(standIn, "u2@example.com", "pw-1234"))
        let u2ID = try #require(standIn.userID(email: "u2@example.com"))

        let post = Self.call(standIn, .post, "/items/posts", #"{"title":"hello"}"#, token: u1)
        let postID = try #require(post.data?["id"]?.intValue)
        #expect(Self.call(standIn, .post, "/items/comments", #"{"post":\#(postID),"body":"first!"}"#, token: u2).status == 200)
        let read = Self.call(standIn, .get, "/items/posts/\(postID)?fields=id,comments.body,comments.user_created.id",
                             token: u1)
        #expect(read.status == 200)
        #expect(read.data?["comments"] == .array([.object([("body", .string("first!")),
                                                           ("user_created", .object([("id", .string(u2ID))]))])]))
        // Another user's email is readable only through the own-row rule: null on u2's row for u1.
        let email = Self.call(standIn, .get, "/items/comments?fields=user_created.email", token: u1)
        #expect(email.data == .array([.object([("user_created", .object([("email", .null)]))])]))
        #expect(Self.call(standIn, .get, "/items/comments?fields=user_created.password", token: u1).status == 403)
        // The comment's author may delete it; the post's author may not.
        let commentID = try #require(Self.call(standIn, .get, "/items/comments?fields=id", token: u1).data?.arrayValue?
            .first?["id"]?.intValue)
        #expect(Self.call(standIn, .delete, "/items/comments/\(commentID)", token: u1).status == 403)
        #expect(Self.call(standIn, .delete, "/items/comments/\(commentID)", token: u2).status == 204)
    }

    @Test func aRelationWithoutItsAliasGetsOnePatchThenNothing() async throws {
        let standIn = BootstrapTests.fresh()
        let admin = try #require(Self.token(standIn, "admin@example.com", "admin-password"))
        _ = try await BootstrapTests.bootstrap(standIn).run()
        // Someone removed the one-to-many side of the relation in the Data Studio.
        #expect(Self.call(standIn, .patch, "/relations/comments/post", #"{"meta":{"one_field":null}}"#, token: admin).status == 200)
        standIn.clearReceived()
        let report = try await BootstrapTests.bootstrap(standIn).run()
        #expect(report.steps.contains(BootstrapReport.Step(name: "relation comments.post → posts", outcome: .updated)))
        let patches = standIn.received.filter { $0.method == .patch && $0.path.hasPrefix("/relations") }
        #expect(patches.map(\.path) == ["/relations/comments/post"])
        #expect(Self.call(standIn, .get, "/relations/comments/post", token: admin).data?["meta"]?["one_field"]
            == .string("comments"))

        standIn.clearReceived()
        let second = try await BootstrapTests.bootstrap(standIn).run()
        #expect(!second.changed)
        #expect(BootstrapTests.writes(standIn).isEmpty, "\(BootstrapTests.writes(standIn).map(\.path))")
    }
}
