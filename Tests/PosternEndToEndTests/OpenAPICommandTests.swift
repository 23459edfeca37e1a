import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP

/// `postern openapi` as an operator runs it.
@Suite
struct OpenAPICommandTests {
    @Test func printsTheDocumentOfTheGivenConfig() throws {
        let path = try PosternProcess.scratchFile("notes.json", #"""
            {"resources": [
              {"name": "notes", "collection": "memo", "id_type": "uuid",
               "fields": {"id": "uuid", "heading": "headline", "text": "body", "tag": "label", "author": "user_created"},
               "required": ["heading", "tag"], "writable": ["heading", "text"], "owner": "user_created",
               "max_limit": 7, "default_limit": 3,
               "permissions": {"list": "public", "read": "role:editors", "create": "authenticated",
                               "update": "owner", "delete": "nobody"}}
            ]}
            """#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let config = try PosternConfig.load(json: Data(contentsOf: URL(fileURLWithPath: path)), environment: [:]).get()
        let p = try PosternProcess(["openapi", "--config", path])
        defer { p.cleanUp() }
        #expect(p.waitForExit(seconds: 10) == 0, "\(p.stderr)")
        let printed = try JSONValue.parse(p.stdout)
        #expect(printed == OpenAPIDocument(config: config).value)
        #expect(printed["paths"]?["/api/v1/notes/{id}"] != nil && printed["paths"]?["/api/v1/books"] == nil)
    }

    @Test func refusesAnInvalidConfig() throws {
        let path = try PosternProcess.scratchFile("bad.json", #"{"resources": [{"name": "Bad Name"}]}"#)
        defer { try? FileManager.default.removeItem(atPath: path) }
        let p = try PosternProcess(["openapi", "--config", path])
        defer { p.cleanUp() }
        #expect(p.waitForExit(seconds: 10) == 1)
        #expect(p.stdout.isEmpty)
        #expect(p.stderr.contains("openapi: invalid config"), "\(p.stderr)")
    }
}
