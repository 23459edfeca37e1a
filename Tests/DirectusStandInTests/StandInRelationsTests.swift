import DirectusStandIn
import Foundation
@testable import PosternCore
import PosternTesting
import Testing
import PosternIO
import PosternHTTP

/// The stand-in on 127.0.0.1:0 behind a real `HTTPServer`, called through sockets.
private final class LiveStandIn {
    let standIn: DirectusStandIn
    private let group: EventLoopGroup
    private let server: HTTPServer
    private let client: RawHTTPClient

    init() throws {
        let standIn = DirectusStandIn()
        self.standIn = standIn
        group = EventLoopGroup(count: 1, name: "standin-relations")
        server = HTTPServer(group: group, limits: standIn.serverLimits) { standIn.handle($0) }
        try server.start(host: "127.0.0.1", port: 0)
        client = RawHTTPClient(port: server.port)
    }

    func stop() {
        client.close()
        server.shutdown(grace: 0.5)
        group.shutdown()
    }

    func call(_ method: String, _ target: String, _ body: String? = nil, token: String? = nil) throws -> RawHTTPClient.Response {
        try client.json(method, target, body, token: token)
    }

    func token(_ email: String = "x@y.com", _ password: String = "123456") throws -> String {
        try call("POST", "/auth/login", #"{"email":"\#(email)","password":"\#(password)"}"#).json?["data"]?["access_token"]?
            .stringValue ?? ""
    }

    var admin: String { get throws { try token("admin@example.com", "admin-password") } }

    /// The stored read rules of the App User policy on `collection`.
    func appReadRules(_ collection: String) throws -> [JSONValue] {
        let query = "filter[policy][_eq]=\(DirectusStandIn.appUserPolicyID)&filter[collection][_eq]=\(collection)"
            + "&filter[action][_eq]=read&limit=-1"
        return try call("GET", "/permissions?\(query)", token: admin).json?["data"]?.arrayValue ?? []
    }
}

private extension RawHTTPClient.Response {
    var data: JSONValue? { json?["data"] }
    var code: String? { json?["errors"]?.arrayValue?.first?["extensions"]?["code"]?.stringValue }
    var message: String { json?["errors"]?.arrayValue?.first?["message"]?.stringValue ?? "" }
    var ids: [Int64] { data?.arrayValue?.compactMap { $0["id"]?.intValue } ?? [] }
}

/// Relational reads (docs/bootstrap.md, relational reads), `/items/comments`, and `/relations` of the stand-in, through its HTTP.
@Suite struct StandInRelationsTests {
    // MARK: - Dot paths and nested objects

    @Test func aDotPathGivesTheRelatedRowsFieldAsANestedObject() throws {
        let live = try LiveStandIn()
        defer { live.stop() }
        let answer = try live.call("GET", "/items/posts/4?fields=id,title,user_created.first_name", token: live.token())
        #expect(answer.status == 200)
        #expect(answer.data == .object([("id", .int(4)), ("title", .string("A post by someone else")),
                                        ("user_created", .object([("first_name", .string("Grace"))]))]))
    }

    @Test func anyPathBelowARawKeyReplacesItByTheNestedObject() throws {
        let live = try LiveStandIn()
        defer { live.stop() }
        let token = try live.token()
        let owner = try #require(live.standIn.userID(email: "x@y.com"))
        #expect(try live.call("GET", "/items/posts/1?fields=user_created", token: token).data
            == .object([("user_created", .string(owner))]))
        #expect(try live.call("GET", "/items/posts/1?fields=user_created,user_created.first_name", token: token).data
            == .object([("user_created", .object([("first_name", .string("Ada"))]))]))
        #expect(try live.call("GET", "/items/posts/1?fields=user_created.id,user_created.first_name", token: token).data
            == .object([("user_created", .object([("id", .string(owner)), ("first_name", .string("Ada"))]))]))
    }

    @Test func aFieldNoRuleAllowsIs403AndOneOnlyAnotherRowsRuleAllowsIsNull() throws {
        let live = try LiveStandIn()
        defer { live.stop() }
        let token = try live.token()
        let password = try live.call("GET", "/items/posts?fields=id,user_created.password", token: token)
        #expect(password.status == 403)
        #expect(password.code == "FORBIDDEN")
        // `email` is readable on the caller's own user row only: other authors' come back null.
        let emails = try live.call("GET", "/items/posts?fields=id,user_created.email", token: token)
        #expect(emails.status == 200)
        #expect(emails.data?.arrayValue?.map { $0["user_created"]?["email"] ?? .string("missing") }
            == [.string("x@y.com"), .string("x@y.com"), .string("x@y.com"), .null, .null])
    }

    // MARK: - One-to-many alias lists and deep

    @Test func theAliasListsTheCommentsWithTheirOwnPaths() throws {
        let live = try LiveStandIn()
        defer { live.stop() }
        let token = try live.token()
        let post = try live.call("GET", "/items/posts/1?fields=id,comments.id,comments.body,comments.user_created.first_name",
                                 token: token)
        #expect(post.status == 200)
        let comments = try #require(post.data?["comments"]?.arrayValue)
        #expect(comments.map { $0["id"] } == [.int(1), .int(2), .int(3)])
        #expect(comments[1] == .object([("id", .int(2)), ("body", .string("Thanks, glad you like it.")),
                                        ("user_created", .object([("first_name", .string("Ada"))]))]))
        #expect(comments.map { $0["user_created"]?["first_name"]?.stringValue } == ["Grace", "Ada", "Grace"])
        // The alias alone lists the keys; a post without comments has an empty list.
        #expect(try live.call("GET", "/items/posts/1?fields=comments", token: token).data
            == .object([("comments", .array([.int(1), .int(2), .int(3)]))]))
        #expect(try live.call("GET", "/items/posts/3?fields=id,comments.id", token: token).data
            == .object([("id", .int(3)), ("comments", .array([]))]))
        // In a list, each row gets its own comments.
        let list = try live.call("GET", "/items/posts?fields=id,comments.id&sort=id", token: token)
        #expect(list.data?.arrayValue?.map { $0["comments"]?.arrayValue?.count ?? -1 } == [3, 1, 0, 1, 0])
    }

    @Test(arguments: [
        ("deep[comments][_limit]=2&deep[comments][_sort]=-date_created", [Int64(3), 2]),
        ("deep[comments][_sort]=-date_created", [3, 2, 1]),
        ("deep[comments][_limit]=1", [1]),
        ("deep=%7B%22comments%22%3A%7B%22_limit%22%3A2%2C%22_sort%22%3A%22-id%22%7D%7D", [3, 2]),
        ("deep[comments][_sort]=body,-id", [3, 2, 1]),
    ])
    func deepLimitsAndSortsTheList(query: String, expected: [Int64]) throws {
        let live = try LiveStandIn()
        defer { live.stop() }
        let answer = try live.call("GET", "/items/posts/1?fields=comments.id&\(query)", token: live.token())
        #expect(answer.status == 200)
        #expect(answer.data?["comments"]?.arrayValue?.compactMap { $0["id"]?.intValue } == expected)
    }

    @Test func aBadDeepLimitIsInvalidQuery() throws {
        let live = try LiveStandIn()
        defer { live.stop() }
        let answer = try live.call("GET", "/items/posts/1?fields=comments.id&deep[comments][_limit]=many", token: live.token())
        #expect(answer.status == 400)
        #expect(answer.code == "INVALID_QUERY")
    }

    // MARK: - Sort by a dot path

    @Test(arguments: [
        ("/items/posts?fields=id&sort=user_created.first_name", [Int64(1), 2, 3, 4, 5]),
        ("/items/posts?fields=id&sort=-user_created.first_name", [4, 5, 1, 2, 3]),
        ("/items/comments?fields=id&sort=user_created.first_name,-id", [5, 2, 4, 3, 1]),
        ("/items/comments?fields=id&sort=-post.title", [4, 1, 2, 3, 5]),
        ("/items/comments?fields=id&sort=post.user_created.first_name,-date_created", [4, 3, 2, 1, 5]),
    ])
    func sortFollowsManyToOnePaths(target: String, expected: [Int64]) throws {
        let live = try LiveStandIn()
        defer { live.stop() }
        let answer = try live.call("GET", target, token: live.token())
        #expect(answer.status == 200)
        #expect(answer.ids == expected)
    }

    // MARK: - Permissions on the related collection

    @Test func withoutReadOnTheRelatedCollectionTheWholeRequestIs403() throws {
        let live = try LiveStandIn()
        defer { live.stop() }
        let admin = try live.admin
        for rule in try live.appReadRules("directus_users") {
            #expect(try live.call("DELETE", "/permissions/\(rule["id"]?.intValue ?? 0)", token: admin).status == 204)
        }
        let token = try live.token()
        for target in ["/items/posts?fields=id,user_created.first_name", "/items/posts/1?fields=id,user_created.id",
                       "/items/posts?fields=id&sort=user_created.first_name",
                       "/items/posts/1?fields=comments.user_created.first_name"] {
            let answer = try live.call("GET", target, token: token)
            #expect(answer.status == 403, "\(target)")
            #expect(answer.code == "FORBIDDEN", "\(target)")
            #expect(answer.message.contains(#"collection "directus_users""#), "\(target)")
            #expect(answer.data == nil, "\(target)")
        }
        #expect(try live.call("GET", "/items/posts/1?fields=id,user_created.first_name", token: token).message
            == #"You don't have permission to access collection "directus_users" or it does not exist. Queried in "user_created"."#)
        // The raw key needs no permission on directus_users.
        #expect(try live.call("GET", "/items/posts/1?fields=id,user_created", token: token).status == 200)

        for rule in try live.appReadRules("comments") {
            #expect(try live.call("DELETE", "/permissions/\(rule["id"]?.intValue ?? 0)", token: admin).status == 204)
        }
        let comments = try live.call("GET", "/items/posts/1?fields=id,comments.id", token: token)
        #expect(comments.status == 403)
        #expect(comments.message.contains(#"collection "comments" or it does not exist. Queried in "comments""#))
    }

    @Test func aRelatedRowTheCallerMayNotReadIsNull() throws {
        let live = try LiveStandIn()
        defer { live.stop() }
        let admin = try live.admin
        // Narrow the every-row rule on directus_users to the caller's own row.
        let everyRow = try #require(try live.appReadRules("directus_users").first { $0["permissions"]?.isNull ?? true })
        let own = #"{"permissions":{"id":{"_eq":"$CURRENT_USER"}}}"#
        #expect(try live.call("PATCH", "/permissions/\(everyRow["id"]?.intValue ?? 0)", own, token: admin).status == 200)
        let answer = try live.call("GET", "/items/posts?fields=id,user_created.first_name", token: live.token())
        #expect(answer.status == 200)
        #expect(answer.data?.arrayValue?.map { $0["user_created"] ?? .string("missing") } == [
            .object([("first_name", .string("Ada"))]), .object([("first_name", .string("Ada"))]),
            .object([("first_name", .string("Ada"))]), .null, .null,
        ])
        // An alias list leaves out the rows the caller may not read.
        let rule = try #require(try live.appReadRules("comments").first)
        let mine = #"{"permissions":{"user_created":{"_eq":"$CURRENT_USER"}}}"#
        #expect(try live.call("PATCH", "/permissions/\(rule["id"]?.intValue ?? 0)", mine, token: admin).status == 200)
        #expect(try live.call("GET", "/items/posts/1?fields=comments.id", token: live.token()).data
            == .object([("comments", .array([.object([("id", .int(2))])]))]))
    }

    @Test func aWriteOfAPostIsReadBackThroughTheRelations() throws {
        let live = try LiveStandIn()
        defer { live.stop() }
        let token = try live.token()
        let created = try live.call("POST", "/items/posts?fields=id,title,user_created.first_name,comments.id",
                                    #"{"title":"With an author"}"#, token: token)
        #expect(created.status == 200)
        #expect(created.data == .object([("id", .int(6)), ("title", .string("With an author")),
                                         ("user_created", .object([("first_name", .string("Ada"))])),
                                         ("comments", .array([]))]))
        let edited = try live.call("PATCH", "/items/posts/1?fields=title,user_created.first_name", #"{"title":"Hello again"}"#,
                                   token: token)
        #expect(edited.data == .object([("title", .string("Hello again")),
                                        ("user_created", .object([("first_name", .string("Ada"))]))]))
        // Without read on directus_users the row is written and the read-back is swallowed: 204, like the
        // items controller does with the read-back's FORBIDDEN.
        for rule in try live.appReadRules("directus_users") {
            _ = try live.call("DELETE", "/permissions/\(rule["id"]?.intValue ?? 0)", token: live.admin)
        }
        let blind = try live.call("POST", "/items/posts?fields=id,user_created.first_name", #"{"title":"Unseen"}"#, token: token)
        #expect(blind.status == 204)
        #expect(try live.call("GET", "/items/posts?fields=id&filter[title][_eq]=Unseen", token: token).ids == [7])
    }

    // MARK: - The flat read is unchanged

    @Test func theBooksReadKeepsItsExactBytes() throws {
        let live = try LiveStandIn()
        defer { live.stop() }
        let first = try #require(live.standIn.userID(email: "x@y.com"))
        let second = try #require(live.standIn.userID(email: "second@example.com"))
        let answer = try live.call("GET", "/items/posts?fields=id,title,content,user_created&limit=2&offset=2",
                                   token: live.token())
        #expect(answer.text == #"{"data":[{"id":3,"title":"Untitled draft","content":null,"user_created":"\#(first)"},"#
            + #"{"id":4,"title":"A post by someone else","content":"Written by the second user.","user_created":"\#(second)"}]}"#)
    }

    // MARK: - /items/comments

    @Test func commentsAreCreatedByAnySignedInUserAndChangedOnlyByTheirOwner() throws {
        let live = try LiveStandIn()
        defer { live.stop() }
        let ada = try live.token()
        let grace = try live.token("second@example.com", "password2")
        let created = try live.call("POST", "/items/comments", #"{"post":5,"body":"Hi there"}"#, token: ada)
        #expect(created.status == 200)
        #expect(created.data?["id"] == .int(6))
        #expect(created.data?["user_created"]?.stringValue == live.standIn.userID(email: "x@y.com"))
        #expect(created.data?["date_created"]?.stringValue?.hasSuffix("Z") == true)

        #expect(try live.call("PATCH", "/items/comments/6", #"{"body":"Mine now"}"#, token: grace).code == "FORBIDDEN")
        #expect(try live.call("DELETE", "/items/comments/6", token: grace).status == 403)
        let edited = try live.call("PATCH", "/items/comments/6?fields=id,body", #"{"body":"Edited"}"#, token: ada)
        #expect(edited.data == .object([("id", .int(6)), ("body", .string("Edited"))]))
        #expect(try live.call("GET", "/items/comments?fields=id&filter[post][_eq]=5", token: grace).ids == [6])
        #expect(try live.call("DELETE", "/items/comments/6", token: ada).status == 204)
        #expect(try live.call("GET", "/items/comments?fields=id&filter[post][_eq]=5", token: grace).ids == [])
    }

    @Test(arguments: [
        (#"{"post":999,"body":"x"}"#, 400, "INVALID_FOREIGN_KEY"),
        (#"{"post":1}"#, 400, "FAILED_VALIDATION"),
        (#"{"body":"x"}"#, 400, "FAILED_VALIDATION"),
        (#"{"post":1,"body":null}"#, 400, "FAILED_VALIDATION"),
        (#"{"post":1,"body":"x","user_created":"someone"}"#, 403, "FORBIDDEN"),
    ])
    func badCommentsAreRefused(body: String, status: Int, code: String) throws {
        let live = try LiveStandIn()
        defer { live.stop() }
        let answer = try live.call("POST", "/items/comments", body, token: live.token())
        #expect(answer.status == status)
        #expect(answer.code == code)
        #expect(live.standIn.received.filter { $0.method == .post && $0.path == "/items/comments" }.count == 1)
        #expect(try live.call("GET", "/items/comments?fields=id", token: live.token()).ids == [1, 2, 3, 4, 5])
    }

    @Test func theAnonymousMayNotCommentAndDeletingAPostDeletesItsComments() throws {
        let live = try LiveStandIn()
        defer { live.stop() }
        #expect(try live.call("POST", "/items/comments", #"{"post":1,"body":"x"}"#).status == 403)
        #expect(try live.call("GET", "/items/comments").status == 403)
        let admin = try live.admin
        #expect(try live.call("DELETE", "/items/posts/1", token: admin).status == 204)
        #expect(try live.call("GET", "/items/comments?fields=id", token: admin).ids == [4, 5])
    }

    // MARK: - /relations and alias fields

    @Test func relationsAndTheAliasFieldAreStoredLikeDirectus() throws {
        let live = try LiveStandIn()
        defer { live.stop() }
        let admin = try live.admin
        let relation = try live.call("GET", "/relations/comments/post", token: admin)
        #expect(relation.data?["related_collection"] == .string("posts"))
        #expect(relation.data?["meta"]?["one_field"] == .string("comments"))
        #expect(relation.data?["meta"]?["many_collection"] == .string("comments"))
        #expect(relation.data?["schema"]?["on_delete"] == .string("CASCADE"))
        let list = try live.call("GET", "/relations", token: admin).data?.arrayValue ?? []
        #expect(list.contains { $0["collection"] == .string("comments") && $0["field"] == .string("user_created") })
        let alias = try live.call("GET", "/fields/posts/comments", token: admin)
        #expect(alias.data?["type"] == .string("alias"))
        #expect(alias.data?["schema"] == .null)
        #expect(alias.data?["meta"]?["special"] == .array([.string("o2m")]))

        for (body, reason) in [
            (#"{"field":"post"}"#, #""collection" is required"#),
            (#"{"collection":"comments"}"#, #""field" is required"#),
            (#"{"collection":"nope","field":"x"}"#, #"Collection "nope" doesn't exist"#),
            (#"{"collection":"comments","field":"nope"}"#, #"Field "nope" doesn't exist in collection "comments""#),
            (#"{"collection":"comments","field":"id","related_collection":"posts"}"#,
             #"Field "id" in collection "comments" is a primary key"#),
            (#"{"collection":"comments","field":"body","related_collection":"nope"}"#, #"Collection "nope" doesn't exist"#),
            (#"{"collection":"comments","field":"post","related_collection":"posts"}"#,
             #"Field "post" in collection "comments" already has an associated relationship"#),
        ] {
            let answer = try live.call("POST", "/relations", body, token: admin)
            #expect(answer.status == 400, "\(body)")
            #expect(answer.code == "INVALID_PAYLOAD", "\(body)")
            #expect(answer.json?["errors"]?.arrayValue?.first?["extensions"]?["reason"]?.stringValue == reason, "\(body)")
        }
        #expect(try live.call("POST", "/relations", #"{"collection":"comments","field":"body"}"#, token: live.token())
            .status == 403)
        let patched = try live.call("PATCH", "/relations/comments/post", #"{"meta":{"sort_field":"date_created"}}"#,
                                    token: admin)
        #expect(patched.data?["meta"]?["sort_field"] == .string("date_created"))
        #expect(patched.data?["meta"]?["one_field"] == .string("comments"))
        #expect(try live.call("PATCH", "/relations/comments/body", #"{"meta":{}}"#, token: admin).code == "INVALID_PAYLOAD")
    }
}
