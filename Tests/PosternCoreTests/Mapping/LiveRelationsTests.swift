import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

/// Relations through real sockets against the stand-in (docs/api.md, Relations): the shipped `posts` with its
/// `author` and, on `GET /{id}`, its latest comments; what reaches Directus (`fields=`, `deep`, `sort`); related
/// fields read-only; sorts through relations; the micro-cache across resources.
@Suite(.serialized) struct LiveRelationsTests {
    /// `notes`: the `comments` collection as a resource (writable `post` and `text`).
    static func notesResource() -> ResourceConfig {
        var notes = ResourceConfig(name: "notes", collection: "comments",
                                   fields: [("id", "id"), ("post", "post"), ("text", "body"), ("user", "user_created")])
        notes.required = ["text"]
        notes.writable = ["post", "text"]
        notes.owner = "user_created"
        return notes
    }

    /// `feed`: posts with a list of comments in `fields` (so that lists and sorts through lists are reachable).
    static func feedResource() -> ResourceConfig {
        var feed = ResourceConfig(name: "feed", collection: "posts",
                                  fields: [("id", "id"), ("title", "title"),
                                           ("by", "user_created.first_name"),
                                           ("replies", .list(ListSpec(from: "comments", fields: [("text", "body")],
                                                                      sort: "date_created", limit: 2)))])
        feed.required = ["title"]
        feed.permissions[.update] = .nobody
        feed.permissions[.delete] = .nobody
        return feed
    }

    /// The `fields=` values sent on the last upstream call to `prefix`, split at commas.
    static func sentFields(_ gw: TestGateway, _ prefix: String) throws -> [String] {
        let sent = try #require(gw.upstream(prefix).last)
        let value = try #require(sent.queryItems.first { $0.name == "fields" }?.value)
        return value.split(separator: ",").map(String.init)
    }

    @Test func aPostsListShowsTheAuthorAndAsksForExactlyTheMappedPaths() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        let r = try gw.client().json("GET", "/api/v1/posts?sort=id", token: token)
        #expect(r.status == 200, "\(r.text)")
        let posts = r.json?["posts"]?.arrayValue ?? []
        #expect(posts.count == 5)
        #expect(posts.map { $0["author"]?["name"]?.stringValue } == ["Ada", "Ada", "Ada", "Grace", "Grace"])
        for post in posts {
            // The raw key is rendered from `user_created.id`, and equals the nested author's id.
            #expect(post["user_created"]?.stringValue != nil)
            #expect(post["user_created"] == post["author"]?["id"], "\(post)")
            #expect(post["comments"] == nil, "a list asked for a detail field")
            #expect(post["author"]?.objectValue?.map(\.0) == ["id", "name"])
        }
        #expect(try Self.sentFields(gw, "/items/posts") ==
                ["id", "title", "content", "user_created.id", "date_created", "user_created.first_name"])
        let sent = try #require(gw.upstream("/items/posts").last)
        #expect(!sent.queryItems.contains { $0.name.hasPrefix("deep") }, "\(sent.query)")
        #expect(!sent.query.contains("*"))
    }

    @Test func aPostReadShowsItsLatestFiveCommentsThroughDeep() throws {
        var options = DirectusStandIn.Options()
        options.adminStaticToken = "relations-test-admin"
        let gw = try TestGateway(standInOptions: options)
        defer { gw.stop() }
        let token = try gw.login()
        // Three more on post 1 (five in all before these, three on post 1): the read shows the latest five.
        for text in ["Fourth.", "Fifth.", "Sixth."] {
            let created = gw.standIn.handle(HTTPRequest(method: .post, target: "/items/comments",
                                                        headers: ["Authorization": "Bearer relations-test-admin",
                                                                  "Content-Type": "application/json"],
                                                        body: Data(#"{"post":1,"body":"\#(text)"}"#.utf8)))
            #expect(created.status == 200)
        }
        gw.standIn.clearReceived()
        let r = try gw.client().json("GET", "/api/v1/posts/1", token: token)
        #expect(r.status == 200, "\(r.text)")
        let post = try #require(r.json?["posts"]?.arrayValue?.first)
        let comments = post["comments"]?.arrayValue ?? []
        #expect(comments.count == 5)
        // The three new ones (written in the same second, in either order) and the two latest seeded ones.
        let texts = Set(comments.compactMap { $0["text"]?.stringValue })
        #expect(texts == ["Fourth.", "Fifth.", "Sixth.", "Looking forward to more.", "Thanks, glad you like it."])
        #expect(comments.last?["text"] == .string("Thanks, glad you like it."))
        #expect(comments.allSatisfy { $0.objectValue?.map(\.0) == ["id", "text", "author"] })
        #expect(comments.allSatisfy { $0["id"]?.stringValue != nil }, "ids are strings: \(r.text)")
        #expect(post["author"]?["name"] == .string("Ada"))

        let sent = try #require(gw.upstream("/items/posts/1").last)
        let fields = try Self.sentFields(gw, "/items/posts/1")
        #expect(fields == ["id", "title", "content", "user_created.id", "date_created", "user_created.first_name",
                           "comments.id", "comments.body", "comments.user_created.first_name"])
        #expect(sent.queryItems.first { $0.name == "deep[comments][_limit]" }?.value == "5")
        #expect(sent.queryItems.first { $0.name == "deep[comments][_sort]" }?.value == "-date_created")

        // A post without comments: the list is [].
        let bare = try gw.client().json("GET", "/api/v1/posts/3", token: token)
        #expect(bare.status == 200)
        #expect(bare.json?["posts"]?.arrayValue?.first?["comments"] == .array([]))
    }

    @Test func relatedFieldsAreReadOnlyAndNothingIsSent() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        let cases: [(String, String, String, String)] = [
            ("POST", "/api/v1/posts", #"{"title":"x","author":{"name":"Eve"}}"#, "author"),
            ("PATCH", "/api/v1/posts/1", #"{"comments":[]}"#, "comments"),
            ("PUT", "/api/v1/posts/1", #"{"title":"y","author":null}"#, "author"),
            ("POST", "/api/v1/posts", #"{"id":1,"comments":[{"text":"hi"}]}"#, "comments"),
        ]
        for (method, path, body, field) in cases {
            let r = try gw.client().json(method, path, body, token: token)
            #expect(r.status == 400, "\(method) \(path): \(r.text)")
            #expect(r.json?["code"] == .string("invalid_request"))
            #expect(r.json?["error"]?.stringValue?.contains("\"\(field)\"") == true, "\(r.text)")
        }
        #expect(gw.standIn.received.allSatisfy { $0.method == .get }, "a write reached Directus")
        #expect(gw.upstream("/items/posts/1").isEmpty || gw.upstream("/items/posts/1").allSatisfy { $0.method == .get })
    }

    @Test func sortFollowsManyToOneOutputsAndRefusesLists() throws {
        let gw = try TestGateway { $0.resources.append(Self.feedResource()) }
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        let byAuthor = try gw.client().json("GET", "/api/v1/posts?sort=-author.name,id", token: token)
        #expect(byAuthor.status == 200, "\(byAuthor.text)")
        #expect((byAuthor.json?["posts"]?.arrayValue ?? []).map { $0["author"]?["name"]?.stringValue }
                == ["Grace", "Grace", "Ada", "Ada", "Ada"])
        #expect(gw.upstream("/items/posts").last?.queryItems.first { $0.name == "sort" }?.value == "-user_created.first_name,id")

        let byDotPath = try gw.client().json("GET", "/api/v1/feed?sort=by", token: token)
        #expect(byDotPath.status == 200, "\(byDotPath.text)")
        #expect(gw.upstream("/items/posts").last?.queryItems.first { $0.name == "sort" }?.value == "user_created.first_name")
        // The list in `fields`: two oldest comments per post, through deep.
        let first = byDotPath.json?["feed"]?.arrayValue?.first { $0["id"] == .string("1") }
        #expect(first?["replies"] == .array([.object([("text", .string("Welcome to the tutorial!"))]),
                                             .object([("text", .string("Thanks, glad you like it."))])]))
        let sent = try #require(gw.upstream("/items/posts").last)
        #expect(sent.queryItems.first { $0.name == "deep[comments][_limit]" }?.value == "2")
        #expect(sent.queryItems.first { $0.name == "deep[comments][_sort]" }?.value == "date_created")

        let before = gw.upstream("/items/").count
        for (path, name) in [("/api/v1/feed?sort=replies", "replies"), ("/api/v1/feed?sort=-replies.text", "replies.text"),
                             ("/api/v1/posts?sort=author", "author"), ("/api/v1/posts?sort=author.email", "author.email")] {
            let r = try gw.client().json("GET", path, token: token)
            #expect(r.status == 400, "\(path): \(r.text)")
            #expect(r.json?["code"] == .string("invalid_request"))
            #expect(r.json?["error"]?.stringValue?.contains("\"\(name)\"") == true, "\(r.text)")
        }
        #expect(gw.upstream("/items/").count == before, "a refused sort reached Directus")
    }

    @Test func aWriteThroughAnyResourceDropsTheCachedAnswersThatReadTheCollection() throws {
        let gw = try TestGateway {
            $0.resources[1].cache.ttlMs = 60_000
            $0.resources[0].cache.ttlMs = 60_000
            $0.resources.append(Self.notesResource())
        }
        defer { gw.stop() }
        let token = try gw.login()
        let miss = try gw.client().json("GET", "/api/v1/posts/2", token: token)
        #expect(miss.headers["X-Cache"] == "MISS")
        #expect(miss.json?["posts"]?.arrayValue?.first?["comments"]?.arrayValue?.count == 1)
        #expect(try gw.client().json("GET", "/api/v1/posts/2", token: token).headers["X-Cache"] == "HIT")
        #expect(try gw.client().json("GET", "/api/v1/books", token: token).headers["X-Cache"] == "MISS")
        #expect(try gw.client().json("GET", "/api/v1/books", token: token).headers["X-Cache"] == "HIT")

        // A comment written through `notes` (collection comments): `posts` reads it through a relation.
        let created = try gw.client().json("POST", "/api/v1/notes", #"{"post":"2","text":"A new comment."}"#, token: token)
        #expect(created.status == 201, "\(created.text)")
        let after = try gw.client().json("GET", "/api/v1/posts/2", token: token)
        #expect(after.headers["X-Cache"] == "MISS")
        #expect(after.json?["posts"]?.arrayValue?.first?["comments"]?.arrayValue?.first?["text"] == .string("A new comment."))
        // `books` reads only `posts`, which did not change: still cached.
        #expect(try gw.client().json("GET", "/api/v1/books", token: token).headers["X-Cache"] == "HIT")

        // A write to posts through `books` drops `posts` too (same collection, and read through relations).
        #expect(try gw.client().json("GET", "/api/v1/posts/2", token: token).headers["X-Cache"] == "HIT")
        let edited = try gw.client().json("PATCH", "/api/v1/books/2", #"{"title":"Edited"}"#, token: token)
        #expect(edited.status == 200, "\(edited.text)")
        let reread = try gw.client().json("GET", "/api/v1/posts/2", token: token)
        #expect(reread.headers["X-Cache"] == "MISS")
        #expect(reread.json?["posts"]?.arrayValue?.first?["title"] == .string("Edited"))
    }

    @Test func aRelatedRowTheCallerMayNotReadIsLeftOutAndAMissingListIsEmpty() throws {
        // The answer as Directus gives it when the related user may not be read (null), and without the alias.
        let posts = ResourceMapper(ResourceConfig.shipped[1])
        let body = Data((#"{"data":[{"id":1,"title":"T","user_created":null,"date_created":"d"},"#
                         + #"{"id":2,"title":"U","user_created":{"id":"u2","first_name":null}}]}"#).utf8)
        let rendered = try JSONValue.parse(try posts.renderer.renderList(directusBody: body))
        #expect(rendered == .object([("posts", .array([
            .object([("id", .string("1")), ("title", .string("T")), ("date_created", .string("d"))]),
            .object([("id", .string("2")), ("title", .string("U")), ("user_created", .string("u2")),
                     ("author", .object([("id", .string("u2"))]))]),
        ])), ("total", .int(2))]))
        let item = Data(#"{"data":{"id":3,"title":"V","comments":null}}"#.utf8)
        let detail = try JSONValue.parse(try posts.detailRenderer.renderItem(directusBody: item))
        #expect(detail["posts"]?.arrayValue?.first?["comments"] == .array([]))
        let missing = try JSONValue.parse(try posts.detailRenderer.renderItem(directusBody: Data(#"{"data":{"id":3,"title":"V"}}"#.utf8)))
        #expect(missing["posts"]?.arrayValue?.first?["comments"] == .array([]))
        // Not JSON inside a relation is still a 502.
        #expect(throws: GatewayError.self) {
            try posts.detailRenderer.renderItem(directusBody: Data(#"{"data":{"id":3,"title":"V","comments":[{"id":1,}]}}"#.utf8))
        }
    }

    @Test func aRelatedValueTheCallerMayNotReadIsLeftOut() throws {
        // A user may read their own e-mail but not another user's: Directus answers null for it.
        var emails = ResourceConfig(name: "emails", collection: "posts",
                                    fields: [("id", "id"), ("title", "title"), ("by", "user_created.email")])
        emails.required = ["title"]
        emails.permissions[.update] = .nobody
        emails.permissions[.delete] = .nobody
        let gw = try TestGateway { $0.resources.append(emails) }
        defer { gw.stop() }
        let token = try gw.login()
        let list = try gw.client().json("GET", "/api/v1/emails?sort=id", token: token)
        #expect(list.status == 200, "\(list.text)")
        let rows = list.json?["emails"]?.arrayValue ?? []
        #expect(rows.map { $0["by"]?.stringValue } == ["x@y.com", "x@y.com", "x@y.com", nil, nil])
        #expect(rows.map { $0.objectValue?.map(\.0) ?? [] }.last == ["id", "title"])
        #expect(!list.text.contains("second@example.com"))
    }

    @Test func withoutReadPermissionOnARelatedCollectionTheWholeRequestIsRefused() throws {
        // The app role may not read roles: Directus refuses a request that reaches them as a whole.
        var roles = ResourceConfig(name: "roles", collection: "posts",
                                   fields: [("id", "id"), ("title", "title"), ("role", "user_created.role.name")])
        roles.required = ["title"]
        roles.permissions[.update] = .nobody
        roles.permissions[.delete] = .nobody
        let gw = try TestGateway { $0.resources.append(roles) }
        defer { gw.stop() }
        let token = try gw.login()
        let list = try gw.client().json("GET", "/api/v1/roles", token: token)
        #expect(list.status == 403, "\(list.text)")
        #expect(list.json?["code"] == .string("forbidden"))
        #expect(list.json?["roles"] == .array([]))
        let read = try gw.client().json("GET", "/api/v1/roles/1", token: token)
        #expect(read.status == 404, "\(read.text)")
    }
}
