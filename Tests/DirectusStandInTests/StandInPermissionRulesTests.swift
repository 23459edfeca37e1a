import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP

/// The stand-in evaluates the stored permission rows the way Directus does for the tutorial — `permissions`
/// filters with `$CURRENT_USER`, `fields` and `presets` — so that a wrong plan fails the tests instead of
/// being recognised and replaced by the right behaviour.
@Suite struct StandInPermissionRulesTests {
    struct Reply {
        let status: Int
        let json: JSONValue?
        var data: JSONValue? { json?["data"] }
        var code: String? { json?["errors"]?.arrayValue?.first?["extensions"]?["code"]?.stringValue }
        var ids: [Int64] { data?.arrayValue?.compactMap { $0["id"]?.intValue } ?? [] }
    }

    static func call(_ standIn: DirectusStandIn, _ method: HTTPMethod, _ target: String, _ body: String? = nil,
                     token: String?) -> Reply {
        var headers = HTTPHeaders()
        if let token { headers.add("Authorization", "Bearer \(token)") }
        if body != nil { headers.add("Content-Type", "application/json") }
        let response = standIn.handle(HTTPRequest(method: method, target: target, headers: headers,
                                                  body: Data((body ?? "").utf8), remoteAddress: "127.0.0.1"))
        return Reply(status: response.status, json: try? JSONValue.parse(response.body))
    }

    static func token(_ standIn: DirectusStandIn, _ email: String, _ password: String) -> String {
        let r = call(standIn, .post, "/auth/login", #"{"email":"\#(email)","password":"\#(password)"}"#, token: nil)
        return r.data?["access_token"]?.stringValue ?? ""
    }

    /// Rewrites the App User policy's stored `posts` rule for `action` (as an operator could in the Data Studio).
    static func setRule(_ standIn: DirectusStandIn, _ action: String, _ changes: String) throws {
        let admin = token(standIn, "admin@example.com", "admin-password")
        let list = call(standIn, .get, "/permissions?filter%5Bpolicy%5D%5B_eq%5D=\(DirectusStandIn.appUserPolicyID)"
            + "&filter%5Bcollection%5D%5B_eq%5D=posts&filter%5Baction%5D%5B_eq%5D=\(action)&limit=-1", token: admin)
        let id = try #require(list.data?.arrayValue?.first?["id"]?.intValue)
        let patched = call(standIn, .patch, "/permissions/\(id)", changes, token: admin)
        try #require(patched.status == 200)
    }

    /// The detector: may the second user change a post the first user created?
    static func foreignUserCanUpdate(_ standIn: DirectusStandIn) -> Bool {
        let second = token(standIn, "second@example.com", "password2")
        return call(standIn, .patch, "/items/posts/1", #"{"title":"taken over"}"#, token: second).status == 200
    }

    @Test func theBootstrapPlanKeepsUpdatesToTheOwner() {
        let standIn = DirectusStandIn()
        #expect(!Self.foreignUserCanUpdate(standIn))
        let owner = Self.token(standIn, "x@y.com", "123456")
        #expect(Self.call(standIn, .patch, "/items/posts/1", #"{"title":"mine"}"#, token: owner).status == 200)
    }

    @Test func aWrongPlanWithoutTheOwnerFilterIsCaught() throws {
        let standIn = DirectusStandIn()
        // A deliberately wrong plan: update on every post.
        try Self.setRule(standIn, "update", #"{"permissions":null}"#)
        #expect(Self.foreignUserCanUpdate(standIn), "the stand-in must apply the stored rule, wrong as it is")
        // And a wrong delete rule lets a foreign user delete.
        try Self.setRule(standIn, "delete", #"{"permissions":{"user_created":{"_neq":"$CURRENT_USER"}}}"#)
        let second = Self.token(standIn, "second@example.com", "password2")
        #expect(Self.call(standIn, .delete, "/items/posts/2", token: second).status == 204)
        #expect(Self.call(standIn, .delete, "/items/posts/4", token: second).status == 403, "its own post is now the forbidden one")
    }

    @Test(arguments: [
        (#"{"user_created":{"_eq":"$CURRENT_USER"}}"#, [Int64(1), 2, 3]),
        (#"{"user_created":{"_neq":"$CURRENT_USER"}}"#, [4, 5]),
        (#"{"user_created":{"_in":["$CURRENT_USER"]}}"#, [1, 2, 3]),
        (#"{"user_created":{"_nin":["$CURRENT_USER"]}}"#, [4, 5]),
        (#"{"content":{"_null":true}}"#, [3]),
        (#"{"content":{"_nnull":true}}"#, [1, 2, 4, 5]),
        (#"{"_and":[{"user_created":{"_eq":"$CURRENT_USER"}},{"content":{"_nnull":true}}]}"#, [1, 2]),
        (#"{"_or":[{"user_created":{"_neq":"$CURRENT_USER"}},{"content":{"_null":true}}]}"#, [3, 4, 5]),
    ])
    func readFiltersDecideTheRows(filter: String, expected: [Int64]) throws {
        let standIn = DirectusStandIn()
        try Self.setRule(standIn, "read", #"{"permissions":\#(filter)}"#)
        let user = Self.token(standIn, "x@y.com", "123456")
        let list = Self.call(standIn, .get, "/items/posts?limit=-1&meta=total_count", token: user)
        #expect(list.status == 200)
        #expect(list.ids == expected)
        #expect(list.json?["meta"]?["total_count"]?.intValue == Int64(expected.count), "counts respect the rule too")
        for id in Int64(1)...5 where !expected.contains(id) {
            #expect(Self.call(standIn, .get, "/items/posts/\(id)", token: user).status == 403, "item \(id)")
        }
    }

    @Test func anOperatorDirectusDoesNotKnowIsInvalidQuery() throws {
        let standIn = DirectusStandIn()
        let user = Self.token(standIn, "x@y.com", "123456")
        let client = Self.call(standIn, .get, "/items/posts?filter%5Buser_created%5D%5B_owns%5D=1", token: user)
        #expect(client.status == 400 && client.code == "INVALID_QUERY")
        try Self.setRule(standIn, "update", #"{"permissions":{"user_created":{"_owns":"$CURRENT_USER"}}}"#)
        let stored = Self.call(standIn, .patch, "/items/posts/1", #"{"title":"x"}"#, token: user)
        #expect(stored.status == 400 && stored.code == "INVALID_QUERY")
    }

    @Test func fieldsLimitWhatIsReadAndWritten() throws {
        let standIn = DirectusStandIn()
        try Self.setRule(standIn, "read", #"{"fields":["id","title"]}"#)
        try Self.setRule(standIn, "create", #"{"fields":["title"]}"#)
        let user = Self.token(standIn, "x@y.com", "123456")
        let list = Self.call(standIn, .get, "/items/posts?limit=1", token: user)
        #expect(list.data?.arrayValue?.first?.objectValue?.map(\.0) == ["id", "title"])
        #expect(Self.call(standIn, .get, "/items/posts?fields=content", token: user).status == 403)
        let denied = Self.call(standIn, .post, "/items/posts", #"{"title":"t","content":"c"}"#, token: user)
        #expect(denied.status == 403 && denied.code == "FORBIDDEN")
        #expect(Self.call(standIn, .post, "/items/posts", #"{"title":"t"}"#, token: user).status == 200)
        // Update fields: the plan's title and content only.
        let owner = Self.call(standIn, .patch, "/items/posts/1", #"{"user_created":"someone-else"}"#, token: user)
        #expect(owner.status == 403)
    }

    @Test func presetsSitUnderThePayload() throws {
        let standIn = DirectusStandIn()
        try Self.setRule(standIn, "create", #"{"presets":{"content":"from the preset"}}"#)
        let user = Self.token(standIn, "x@y.com", "123456")
        let preset = Self.call(standIn, .post, "/items/posts", #"{"title":"p"}"#, token: user)
        #expect(preset.data?["content"] == .string("from the preset"))
        let given = Self.call(standIn, .post, "/items/posts", #"{"title":"p","content":"mine"}"#, token: user)
        #expect(given.data?["content"] == .string("mine"))
    }
}
