import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternIO
import PosternHTTP

/// `postern bootstrap` as an operator runs it, against the Directus stand-in started as a fresh install.
@Suite struct BootstrapCommandTests {
    @Test func cliBootstrapsThenFindsNothingToDo() throws {
        var options = DirectusStandIn.Options()
        options.seedSchema = false
        let standIn = DirectusStandIn(options: options)
        let group = EventLoopGroup(count: 1, name: "bootstrap-standin")
        let server = HTTPServer(group: group) { request in standIn.handle(request) }
        try server.start(host: "127.0.0.1", port: 0)
        defer {
            server.shutdown(grace: 0.5)
            group.shutdown()
        }
        let environment = ["POSTERN_DIRECTUS_URL": "http://127.0.0.1:\(server.port)",
                           "POSTERN_DIRECTUS_ADMIN_EMAIL": "admin@example.com",
                           "POSTERN_DIRECTUS_ADMIN_PASSWORD": "admin-password"]
        let first = try PosternProcess(["bootstrap"], environment: environment)
        defer { first.cleanUp() }
        #expect(first.waitForExit(seconds: 20) == 0, "\(first.stdout)\(first.stderr)")
        #expect(first.stdout.contains("collection posts: created"))
        #expect(!first.stdout.contains("admin-password"))
        let second = try PosternProcess(["bootstrap"], environment: environment)
        defer { second.cleanUp() }
        #expect(second.waitForExit(seconds: 20) == 0, "\(second.stdout)\(second.stderr)")
        #expect(second.stdout.contains("nothing changed"))

        let noCredentials = try PosternProcess(["bootstrap"], environment: ["POSTERN_DIRECTUS_URL": environment["POSTERN_DIRECTUS_URL"] ?? ""])
        defer { noCredentials.cleanUp() }
        #expect(noCredentials.waitForExit(seconds: 20) == 1)
        #expect(noCredentials.stderr.contains("POSTERN_DIRECTUS_ADMIN_EMAIL"))
        #expect(noCredentials.stderr.split(separator: "\n").count == 1)
    }
}
