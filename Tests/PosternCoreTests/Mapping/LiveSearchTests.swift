import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

/// `search` through real sockets against the stand-in (docs/api.md, Upstream and edge rules): it looks only
/// in the resource's search fields, never in fields the resource hides, and never reaches Directus as `search`.
@Suite(.serialized) struct LiveSearchTests {
    /// `titles`: the `posts` collection with its `content` hidden (not mapped), searchable by title.
    static func titlesResource() -> ResourceConfig {
        var titles = ResourceConfig(name: "titles", collection: "posts",
                                    fields: [("id", "id"), ("title", "title"), ("user", "user_created")])
        titles.required = ["title"]
        titles.writable = ["title"]
        titles.owner = "user_created"
        return titles
    }

    /// The titles of a list answer under `key`.
    static func titles(_ r: RawHTTPClient.Response, _ key: String) -> [String] {
        (r.json?[key]?.arrayValue ?? []).compactMap { $0["title"]?.stringValue }
    }

    @Test func searchDoesNotMatchHiddenFields() throws {
        var options = DirectusStandIn.Options()
        options.adminStaticToken = "search-test-admin"
        let gw = try TestGateway(standInOptions: options) { $0.resources.append(Self.titlesResource()) }
        defer { gw.stop() }
        let token = try gw.login()

        // "Swift" occurs only in the hidden `content` of "Second thoughts" (Directus's `search` would find it).
        let hidden = try gw.client().json("GET", "/api/v1/titles?search=swift", token: token)
        #expect(hidden.status == 200)
        #expect(Self.titles(hidden, "titles") == [], "a hidden field answered the search: \(hidden.text)")
        #expect(hidden.json?["total"] == .int(0))

        // The same post is found by its title, whatever the case.
        let shown = try gw.client().json("GET", "/api/v1/titles?search=SECOND%20Thou", token: token)
        #expect(shown.status == 200)
        #expect(Self.titles(shown, "titles") == ["Second thoughts"])
        #expect(shown.json?["total"] == .int(1))

        // The stand-in's own `search` does look in `content`, like Directus's: the oracle is real.
        let direct = gw.standIn.handle(HTTPRequest(method: .get, target: "/items/posts?search=swift&fields=title",
                                                   headers: ["Authorization": "Bearer search-test-admin"]))
        #expect(String(decoding: direct.body, as: UTF8.self).contains("Second thoughts"))
    }

    @Test func searchReachesDirectusAsAFilterNotAsSearch() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        let r = try gw.client().json("GET", "/api/v1/books?search=Directus", token: token)
        #expect(r.status == 200)
        #expect(Self.titles(r, "books") == ["Another one"])
        let sent = try #require(gw.upstream("/items/posts").last)
        let names = sent.queryItems.map(\.name)
        #expect(!names.contains("search"), "search reached Directus: \(sent.query)")
        #expect(!sent.query.contains("search="))
        let filters = sent.queryItems.filter { $0.name.hasPrefix("filter") }
        #expect(filters.map(\.name) == ["filter[_or][0][title][_icontains]", "filter[_or][1][content][_icontains]"])
        #expect(filters.allSatisfy { $0.value == "directus" })
    }

    @Test func searchTermsThatDirectusWouldInterpretStayText() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = try gw.login()
        // Directus coerces "null" and "true" inside filters, and `_icontains` then fails with a 500.
        for term in ["null", "true", "NULL"] {
            let r = try gw.client().json("GET", "/api/v1/books?search=" + QueryString.encode(term), token: token)
            #expect(r.status == 200, "\(term): \(r.text)")
            #expect(Self.titles(r, "books") == [], "\(term) matched: \(r.text)")
        }
    }

    @Test func ownerOnlyListsStillFilterToTheCallersItems() throws {
        let gw = try TestGateway { config in
            config.resources[0].permissions[.list] = .owner  // books: each caller lists only their own
        }
        defer { gw.stop() }
        // "post" matches "The first post of the tutorial." (x@y.com's) and "A post by someone else" (the other user's).
        let mine = try gw.client().json("GET", "/api/v1/books?search=POST", token: try gw.login())
        #expect(mine.status == 200)
        #expect(Self.titles(mine, "books") == ["Hello, world"])
        let theirs = try gw.client().json("GET", "/api/v1/books?search=post", token: try gw.login("second@example.com", "password2"))
        #expect(theirs.status == 200)
        #expect(Self.titles(theirs, "books") == ["A post by someone else"])
        let sent = try #require(gw.upstream("/items/posts").last)
        #expect(sent.queryItems.contains { $0.name == "filter[user_created][_eq]" && $0.value == "$CURRENT_USER" })
    }

    @Test func searchOnAResourceWithoutSearchFieldsIs400() throws {
        let gw = try TestGateway { config in
            var titles = Self.titlesResource()
            titles.searchFields = []
            config.resources.append(titles)
        }
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        let r = try gw.client().json("GET", "/api/v1/titles?search=hello", token: token)
        #expect(r.status == 400)
        #expect(r.json?["code"]?.stringValue == "invalid_request")
        #expect(r.json?["titles"]?.arrayValue == [])
        #expect(gw.upstream("/items/").isEmpty, "no upstream call")
    }
}
