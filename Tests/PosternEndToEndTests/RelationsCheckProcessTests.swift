import Foundation
import Testing
import PosternTesting

/// `postern check` on relations (docs/api.md, Relations): the shipped config with its `author` and detail
/// `comments` is valid; each refused path is named by its key path, and the exit status is 1.
@Suite struct RelationsCheckProcessTests {
    @Test func checkNamesEachRefusedRelationByItsKeyPath() throws {
        let shipped = try PosternProcess(["check"], environment: ["POSTERN_SESSION_STORE": "memory"])
        defer { shipped.cleanUp() }
        #expect(shipped.waitForExit(seconds: 10) == 0, "\(shipped.stdout)\(shipped.stderr)")

        let config = #"""
        {"sessions": {"store": "memory"},
         "resources": [{"name": "notes", "collection": "comments", "owner": "user_created",
                        "fields": {"id": "id", "text": "body", "user": "user_created",
                                   "who": {"name": "user_created.first_name", "pw": "user_created.password"},
                                   "far": "post.user_created.role.name"},
                        "detail_fields": {"more": {"from": "replies", "fields": {"t": "body"}, "limit": 0}},
                        "writable": ["text", "who"], "search_fields": ["far"]}]}
        """#
        let path = try PosternProcess.scratchFile("relations.json", config)
        let p = try PosternProcess(["check", "--config", path])
        defer { p.cleanUp() }
        #expect(p.waitForExit(seconds: 10) == 1)
        let lines = (p.stdout + p.stderr).split(separator: "\n").map(String.init)
        for (key, message) in [("resources[0].fields.who.pw", "ends in password"),
                               ("resources[0].fields.far", "more than 3 segments"),
                               ("resources[0].detail_fields.more.limit", "from 1 to 100"),
                               ("resources[0].writable[1]", "read-only"),
                               ("resources[0].search_fields[0]", "Directus does not search")] {
            #expect(lines.contains { $0.hasPrefix(key + ":") && $0.contains(message) }, "\(key): \(lines)")
        }
    }
}
