import Foundation
import Testing
import PosternTesting

/// `postern check` on composites, as an operator runs it (docs/api.md, Composite endpoints).
@Suite struct CompositeCheckProcessTests {
    @Test func checkNamesEachBadCompositeByItsKeyPath() throws {
        let path = try PosternProcess.scratchFile("composites.json", #"""
            {"sessions": {"store": "memory"},
             "composites": [{"name": "home", "path": "/api/v1/books",
                             "parts": [{"key": "me", "route": "GET /api/v1/user/me"},
                                       {"key": "me", "route": "DELETE /api/v1/books/{id}"},
                                       {"key": "mine", "route": "GET /api/v1/books", "query": {"filter": "x"}}]}]}
            """#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let p = try PosternProcess(["check", "--config", path])
        defer { p.cleanUp() }
        #expect(p.waitForExit(seconds: 10) == 1)
        let output = p.stdout + p.stderr
        for fragment in ["composites[0].path: \"/api/v1/books\" collides with resource books",
                         "composites[0].parts[1].key: duplicate key \"me\" (also parts[0])",
                         "composites[0].parts[1].route: must be a GET route",
                         "composites[0].parts[2].query.filter: /api/v1/books does not accept \"filter\""] {
            #expect(output.contains(fragment), "\(fragment) in \(output)")
        }
    }
}
