import Foundation
import Testing
@testable import PosternCore
import PosternTesting

/// The relations grammar of `fields` and `detail_fields` as `postern check` reads it (docs/api.md, Relations):
/// each refusal names its key path, and a valid config keeps every shape in order.
@Suite struct RelationsConfigTests {
    /// A `notes` resource over `comments` with `extra` members (after `fields`).
    static func config(fields: String, _ extra: String = "") -> String {
        #"{"resources": [{"name": "notes", "collection": "comments", "fields": {"id": "id", "#
            + fields + "}" + (extra.isEmpty ? "" : ", " + extra) + "}]}"
    }

    static func problems(_ json: String) -> [ConfigProblem] {
        if case .failure(let error) = PosternConfig.load(json: Data(json.utf8), environment: [:]) { return error.problems }
        return []
    }

    @Test(arguments: [
        (config(fields: #""deep": "post.user_created.role.name""#), "resources[0].fields.deep", "more than 3 segments"),
        (config(fields: #""pw": "user_created.password""#), "resources[0].fields.pw", "ends in password"),
        (config(fields: #""who": {"t": "user_created.token"}"#), "resources[0].fields.who.t", "ends in token"),
        (config(fields: #""secret": "user_created.tfa_secret""#), "resources[0].fields.secret", "ends in tfa_secret"),
        (config(fields: #""auth": "user_created.auth_data""#), "resources[0].fields.auth", "ends in auth_data"),
        (config(fields: #""ext": "user_created.external_identifier""#), "resources[0].fields.ext", "ends in external_identifier"),
        (config(fields: #""bad": "user_created..id""#), "resources[0].fields.bad", "dot path"),
        (config(fields: #""by": "user_created.first_name""#, #""search_fields": ["by"]"#), "resources[0].search_fields[0]", "Directus does not search"),
        (config(fields: #""by": {"name": "user_created.first_name"}"#, #""writable": ["by"]"#), "resources[0].writable[0]", "read-only"),
        (config(fields: #""by": "user_created.first_name""#, #""required": ["by"]"#), "resources[0].required[0]", "cannot be required"),
        (config(fields: #""by": "user_created""#, #""owner": "user_created.id""#), "resources[0].owner", "not a path through a relation"),
        (config(fields: #""l": {"from": "replies", "fields": {"t": "body"}, "limit": 101}"#), "resources[0].fields.l.limit", "from 1 to 100"),
        (config(fields: #""l": {"from": "replies", "fields": {"t": "a.b.c"}}"#), "resources[0].fields.l.fields.t", "with the list's alias"),
        (config(fields: #""l": {"from": "replies", "fields": {}}"#), "resources[0].fields.l.fields", "at least one field"),
        (config(fields: #""l": {"from": "replies", "fields": {"t": "body"}, "sort": "-date created"}"#), "resources[0].fields.l.sort", "fields of the list"),
        (config(fields: #""l": {"from": "replies", "fields": {"t": "body"}, "top": 1}"#), "resources[0].fields.l.top", "unknown key"),
        (config(fields: #""l": {"from": "a", "fields": {"m": {"from": "b", "fields": {"x": "y"}}}}"#), "resources[0].fields.l.fields.m", "another list"),
        (config(fields: #""o": {}"#), "resources[0].fields.o", "at least one field"),
        (config(fields: #""n": 3"#), "resources[0].fields.n", "must be a Directus field (a string), a nested object or a list"),
        (config(fields: #""t": "body""#, #""detail_fields": {"t": "post.title"}"#), "resources[0].detail_fields.t", "already a field"),
        (config(fields: #""t": "body""#, #""detail_fields": {"p": "post.user_created.password"}"#), "resources[0].detail_fields.p", "ends in password"),
    ])
    func eachRefusalNamesItsKeyPath(_ json: String, _ path: String, _ message: String) {
        let found = Self.problems(json)
        let hit = found.first { $0.path == path }
        #expect(hit != nil, "expected a problem at \(path), got \(found)")
        #expect(hit?.message.contains(message) == true, "\(String(describing: hit))")
    }

    @Test func aValidConfigKeepsEveryShapeInOrder() throws {
        let json = Self.config(fields: #""post": "post", "by": {"id": "user_created.id", "name": "user_created.first_name"}, "title": "post.title", "user": "user_created""#,
                               #""owner": "user_created", "detail_fields": {"siblings": {"from": "replies", "fields": {"t": "body"}}}"#)
        let config = try PosternConfig.load(json: Data(json.utf8), environment: [:]).get()
        let notes = try #require(config.resources.first)
        #expect(notes.fields.map(\.0) == ["id", "post", "by", "title", "user"])
        #expect(notes.fields[2].1 == .object([("id", "user_created.id"), ("name", "user_created.first_name")]))
        #expect(notes.detailFields.first?.1 == .list(ListSpec(from: "replies", fields: [("t", "body")], sort: nil, limit: 10)))
        #expect(notes.readsRelations)
    }
}
