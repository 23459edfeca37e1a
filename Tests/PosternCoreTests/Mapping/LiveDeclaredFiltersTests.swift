import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

/// Declared filters through real sockets against the stand-in (docs/api.md, Declared filters): every operation and
/// type reaches Directus as one `filter[_and]` item and keeps the rows Directus keeps; every bad value is 400
/// naming the parameter with nothing sent upstream; filters AND with `search` and the owner rule; `?mine=true`
/// answers are never shared between users.
@Suite(.serialized) struct LiveDeclaredFiltersTests {
    /// `probe`: the `posts` collection with one filter of each kind (the seeded posts: 1–3 by x@y.com, 4–5 by the
    /// second user; post 3 has no content).
    static func probeResource() -> ResourceConfig {
        var probe = ResourceConfig(name: "probe", collection: "posts",
                                   fields: [("id", "id"), ("title", "title"), ("content", "content"), ("user", "user_created"),
                                            ("date_created", "date_created")])
        probe.required = ["title"]
        probe.writable = ["title", "content"]
        probe.owner = "user_created"
        probe.filters = [
            FilterConfig(name: "title", field: "title", op: .eq),
            FilterConfig(name: "not_title", field: "title", op: .neq),
            FilterConfig(name: "above", field: "id", op: .gt, type: .integer),
            FilterConfig(name: "from", field: "id", op: .gte, type: .integer),
            FilterConfig(name: "below", field: "id", op: .lt, type: .integer),
            FilterConfig(name: "upto", field: "id", op: .lte, type: .integer),
            FilterConfig(name: "ids", field: "id", op: .in, type: .integer),
            FilterConfig(name: "has", field: "title", op: .contains),
            FilterConfig(name: "no_content", field: "content", op: .null, type: .boolean),
            FilterConfig(name: "after", field: "date_created", op: .gt, type: .datetime),
            FilterConfig(name: "by", field: "user_created", op: .eq, type: .uuid),
            FilterConfig(name: "by_any", field: "user_created", op: .in, type: .uuid),
            FilterConfig(name: "titled", field: "title", op: .eq, type: .boolean),
            FilterConfig(name: "drafts", field: "content", op: .null, type: .boolean, value: .boolean(true)),
            FilterConfig(name: "first", field: "id", op: .eq, type: .integer, value: .integer(1)),
            FilterConfig(name: "pick", field: "title", op: .in,
                         value: .list([.string("Another one"), .string("Second thoughts")])),
            FilterConfig(name: "mine", field: "user_created", op: .eq, value: .string(FilterConfig.currentUser)),
        ]
        return probe
    }

    /// The ids of a list answer under `key`.
    static func ids(_ r: RawHTTPClient.Response, _ key: String = "probe") -> [String] {
        (r.json?[key]?.arrayValue ?? []).compactMap { $0["id"]?.stringValue }
    }

    /// The declared-filter items of the last list call Directus received.
    static func sentFilters(_ gw: TestGateway) -> [String] {
        guard let sent = gw.upstream("/items/posts").last else { return [] }
        return sent.queryItems.filter { $0.name.hasPrefix("filter[_and]") }.map { "\($0.name)=\($0.value)" }
    }

    @Test func everyOperationAndTypeKeepsWhatDirectusKeeps() throws {
        let gw = try TestGateway { $0.resources.append(Self.probeResource()) }
        defer { gw.stop() }
        let token = try gw.login()
        let x = try #require(gw.standIn.userID(email: "x@y.com"))
        let second = try #require(gw.standIn.userID(email: "second@example.com"))
        // query → the ids kept, and the `filter[_and]` items sent.
        let cases: [(String, [String], [String])] = [
            ("title=Second%20thoughts", ["2"], ["filter[_and][0][title][_eq]=Second thoughts"]),
            ("not_title=Second%20thoughts", ["1", "3", "4", "5"], ["filter[_and][0][title][_neq]=Second thoughts"]),
            ("above=3", ["4", "5"], ["filter[_and][0][id][_gt]=3"]),
            ("from=3", ["3", "4", "5"], ["filter[_and][0][id][_gte]=3"]),
            ("below=3", ["1", "2"], ["filter[_and][0][id][_lt]=3"]),
            ("upto=3", ["1", "2", "3"], ["filter[_and][0][id][_lte]=3"]),
            ("ids=5,1,007", ["1", "5"], ["filter[_and][0][id][_in]=5,1,7"]),
            ("has=THOUGHT", ["2"], ["filter[_and][0][title][_icontains]=thought"]),
            ("no_content=true", ["3"], ["filter[_and][0][content][_null]=true"]),
            ("no_content=false", ["1", "2", "4", "5"], ["filter[_and][0][content][_nnull]=true"]),
            ("after=2025-05-03T12:30:45.499Z", ["3", "4", "5"],
             ["filter[_and][0][date_created][_gt]=2025-05-03T12:30:45.499Z"]),
            // The same instant as post 3's date, given with an offset: normalised to UTC, so post 3 is not after it.
            ("after=2025-05-03T14:30:45.5%2B02:00", ["4", "5"],
             ["filter[_and][0][date_created][_gt]=2025-05-03T12:30:45.500Z"]),
            ("by=" + second.uppercased(), ["4", "5"], ["filter[_and][0][user_created][_eq]=\(second)"]),
            ("by_any=\(x),\(second)", ["1", "2", "3", "4", "5"], ["filter[_and][0][user_created][_in]=\(x),\(second)"]),
            ("titled=true", [], ["filter[_and][0][title][_eq]=true"]),
            ("drafts=true", ["3"], ["filter[_and][0][content][_null]=true"]),
            ("drafts=false", ["1", "2", "3", "4", "5"], []),
            ("first=true", ["1"], ["filter[_and][0][id][_eq]=1"]),
            ("pick=true", ["2", "5"], ["filter[_and][0][title][_in]=Another one,Second thoughts"]),
            ("mine=true", ["1", "2", "3"], ["filter[_and][0][user_created][_eq]=\(x)"]),
            // Several filters: one `_and` item each, in config order whatever the order of the query.
            ("has=o&below=5&above=1", ["2", "4"],
             ["filter[_and][0][id][_gt]=1", "filter[_and][1][id][_lt]=5", "filter[_and][2][title][_icontains]=o"]),
            // The same value twice is one value; undeclared parameters (and Directus's own) are ignored.
            ("above=3&above=3", ["4", "5"], ["filter[_and][0][id][_gt]=3"]),
            // The longest text value (200 bytes) is taken.
            ("has=" + String(repeating: "o", count: 200), [], ["filter[_and][0][title][_icontains]=" + String(repeating: "o", count: 200)]),
            ("colour=red&filter%5Bid%5D%5B_eq%5D=1", ["1", "2", "3", "4", "5"], []),
        ]
        for (query, expected, sent) in cases {
            let r = try gw.client().json("GET", "/api/v1/probe?" + query, token: token)
            #expect(r.status == 200, "\(query): \(r.text)")
            #expect(Self.ids(r) == expected, "\(query): \(r.text)")
            #expect(r.json?["total"] == .int(Int64(expected.count)), "\(query)")
            #expect(Self.sentFilters(gw) == sent, "\(query)")
        }
    }

    @Test(arguments: [
        ("above=abc", "above"), ("above=1.5", "above"), ("above=9999999999999999999", "above"), ("above=", "above"),
        ("by=not-a-uuid", "by"), ("by_any=\(UUID().uuidString),x", "by_any"),
        ("after=2025-05-03", "after"), ("after=2025-02-29T00:00:00Z", "after"), ("after=2025-05-03T12:30:45", "after"),
        ("after=2025-05-03T24:00:00Z", "after"), ("after=2025-05-03T12:00:00%2B2", "after"),
        ("titled=yes", "titled"), ("drafts=maybe", "drafts"), ("drafts=", "drafts"), ("mine=1", "mine"),
        ("no_content=1", "no_content"), ("ids=1,,2", "ids"),
        ("ids=" + (1...101).map(String.init).joined(separator: ","), "ids"),
        ("title=null", "title"), ("title=true", "title"), ("title=%24NOW", "title"), ("title=%24CURRENT_USER", "title"),
        ("title=", "title"), ("has=", "has"), ("title=" + String(repeating: "a", count: 201), "title"),
        ("has=" + String(repeating: "%C3%A9", count: 101), "has"), ("above=1&above=2", "above"), ("mine=true&mine=false", "mine"),
    ])
    func aBadValueIs400NamingTheParameterWithNothingSent(query: String, parameter: String) throws {
        let gw = try TestGateway { $0.resources.append(Self.probeResource()) }
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        let r = try gw.client().json("GET", "/api/v1/probe?" + query, token: token)
        #expect(r.status == 400, "\(query): \(r.text)")
        #expect(r.json?["code"]?.stringValue == "invalid_request")
        #expect(r.json?["error"]?.stringValue?.contains("\"\(parameter)\"") == true, "\(query): \(r.text)")
        #expect(r.json?["probe"]?.arrayValue == [])
        #expect(gw.upstream("/items/").isEmpty, "nothing reached upstream for \(query)")
    }

    @Test func filtersAndWithSearchAndTheOwnerRule() throws {
        let gw = try TestGateway { config in
            config.resources[0].permissions[.list] = .owner  // books: each caller lists only their own
            config.resources[0].filters.append(FilterConfig(name: "before", field: "date_created", op: .lt, type: .datetime))
        }
        defer { gw.stop() }
        // "o" is in every title but "Untitled draft"; 2025-05-04T12:00Z is after posts 1–4 and before post 5.
        let ada = try gw.login()
        let r = try gw.client().json("GET", "/api/v1/books?search=o&before=2025-05-04T12:00:00Z", token: ada)
        #expect(r.status == 200)
        #expect(Self.ids(r, "books") == ["1", "2"], "the owner rule left out post 4, the search post 3: \(r.text)")
        let sent = try #require(gw.upstream("/items/posts").last).queryItems
        #expect(sent.contains { $0.name == "filter[user_created][_eq]" && $0.value == "$CURRENT_USER" })
        #expect(sent.contains { $0.name == "filter[_or][0][title][_icontains]" && $0.value == "o" })
        #expect(sent.contains { $0.name == "filter[_and][0][date_created][_lt]" && $0.value == "2025-05-04T12:00:00.000Z" })
        // The filter cuts too: before post 2's date only post 1 is left.
        let earlier = try gw.client().json("GET", "/api/v1/books?search=o&before=2025-05-02T00:00:00Z", token: ada)
        #expect(Self.ids(earlier, "books") == ["1"])
        // The second user: post 5 is after the date, posts 1–3 are not theirs.
        let grace = try gw.login("second@example.com", "password2")
        let theirs = try gw.client().json("GET", "/api/v1/books?search=o&before=2025-05-04T12:00:00Z", token: grace)
        #expect(Self.ids(theirs, "books") == ["4"])
        // `mine` on an owner-narrowed list: both filters on `user_created`, without colliding.
        let mine = try gw.client().json("GET", "/api/v1/books?mine=true", token: grace)
        #expect(mine.status == 200)
        #expect(Self.ids(mine, "books") == ["4", "5"])
    }

    @Test func aMineAnswerIsNeverServedToAnotherUser() throws {
        // Role scope: both seeded users share the App User role, so only the filter keeps their answers apart.
        let gw = try LiveCacheTests.gateway(scope: .role)
        defer { gw.stop() }
        let ada = try gw.login()
        let grace = try gw.login("second@example.com", "password2")
        let first = try gw.client().json("GET", "/api/v1/books?mine=true", token: ada)
        #expect(first.headers["X-Cache"] == "MISS")
        #expect(Self.ids(first, "books") == ["1", "2", "3"])
        let other = try gw.client().json("GET", "/api/v1/books?mine=true", token: grace)
        #expect(other.headers["X-Cache"] == "MISS", "Ada's answer was served to Grace: \(other.text)")
        #expect(Self.ids(other, "books") == ["4", "5"])
        let again = try gw.client().json("GET", "/api/v1/books?mine=true", token: ada)
        #expect(again.headers["X-Cache"] == "HIT")
        #expect(Self.ids(again, "books") == ["1", "2", "3"])
        // Without the flag the role shares one answer, distinct from either `mine` answer.
        let all = try gw.client().json("GET", "/api/v1/books?mine=false", token: ada)
        #expect(Self.ids(all, "books") == ["1", "2", "3", "4", "5"])
        let allAgain = try gw.client().json("GET", "/api/v1/books?mine=false", token: grace)
        #expect(allAgain.headers["X-Cache"] == "HIT")
    }

    @Test func mineWithoutACallerIs401WithNothingSent() throws {
        let gw = try TestGateway { config in config.resources[0].permissions[.list] = .public }
        defer { gw.stop() }
        gw.standIn.clearReceived()
        let r = try gw.client().json("GET", "/api/v1/books?mine=true")
        #expect(r.status == 401)
        #expect(r.json?["code"]?.stringValue == "unauthorized")
        #expect(r.json?["error"]?.stringValue?.contains("\"mine\"") == true)
        #expect(gw.upstream("/items/").isEmpty)
    }
}
