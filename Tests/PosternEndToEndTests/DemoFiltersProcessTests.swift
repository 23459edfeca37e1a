import Foundation
import Testing
import PosternTesting

/// Declared filters and the `comments` resource through the `postern` binary (docs/api.md, Declared filters): the
/// README walkthrough's calls against `postern demo`, and `postern check` naming a bad filter by its key path.
@Suite(.serialized) struct DemoFiltersProcessTests {
    @Test func theWalkthroughsFilterAndCommentCallsWorkAgainstTheDemo() throws {
        let demo = try PosternProcess(["demo", "--standin-port", "0"],
                                      environment: ["POSTERN_LISTEN": "127.0.0.1:0", "POSTERN_ADMIN_LISTEN": "127.0.0.1:0"])
        defer { demo.cleanUp() }
        var port: UInt16?
        try eventually("postern demo prints its address", timeout: 30) {
            let prefix = "postern demo: gateway on http://127.0.0.1:"
            guard let line = demo.stdout.split(separator: "\n").first(where: { $0.hasPrefix(prefix) }) else { return false }
            port = UInt16(line.dropFirst(prefix.count).prefix(while: \.isNumber))
            return port != nil
        }
        let client = RawHTTPClient(port: try #require(port))
        let login = try client.json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
        let token = try #require(login.json?["user"]?["token"]?.stringValue)

        let mine = try client.json("GET", "/api/v1/books?mine=true", token: token)
        #expect(mine.status == 200)
        #expect(mine.json?["books"]?.arrayValue?.compactMap { $0["title"]?.stringValue }
                    == ["Hello, world", "Second thoughts", "Untitled draft"])
        #expect(mine.json?["total"] == .int(3))
        let comments = try client.json("GET", "/api/v1/comments?post=1", token: token)
        #expect(comments.status == 200)
        #expect(comments.json?["total"] == .int(3))
        #expect(comments.json?["comments"]?.arrayValue?.first?["text"]?.stringValue == "Welcome to the tutorial!")
        #expect(try client.json("GET", "/api/v1/books?mine=maybe", token: token).status == 400)
        #expect(try client.json("GET", "/api/v1/comments?post=first", token: token).status == 400)

        let created = try client.json("POST", "/api/v1/comments", #"{"post":"1","text":"Nice post!"}"#, token: token)
        #expect(created.status == 201, "\(created.text)")
        #expect(created.json?["comments"]?.arrayValue?.first?["text"]?.stringValue == "Nice post!")
        let refused = try client.json("DELETE", "/api/v1/comments/1", token: token)
        #expect(refused.status == 403)
        #expect(refused.json?["error"]?.stringValue == "only the creator may delete this item")
    }

    @Test func checkNamesABadFilterByItsKeyPath() throws {
        let config = """
            {"resources": [{"name": "notes", "collection": "posts", "fields": {"id": "id", "title": "title"},
              "filters": {"limit": {"field": "title", "op": "eq"}, "x": {"field": "title", "op": "like"}}}]}
            """
        let path = try PosternProcess.scratchFile("filters.json", config)
        let p = try PosternProcess(["check", "--config", path], environment: ["POSTERN_SESSION_STORE": "memory"])
        defer { p.cleanUp() }
        #expect(p.waitForExit(seconds: 10) == 1)
        let output = p.stdout + p.stderr
        #expect(output.contains("resources[0].filters.limit"), "\(output)")
        #expect(output.contains("resources[0].filters.x.op"), "\(output)")
    }
}
