import Foundation
import Testing
@testable import PosternCore
import PosternTesting

/// The console's style sheet and script are written in files of their own (Console/Resources) and compiled in
/// by the EmbedText build plugin: the page serves exactly those files, under the policy that names them.
@Suite struct DashboardResourcesTests {
    static let folder = repositoryRoot.appendingPathComponent("Sources/PosternCore/Console/Resources")

    /// The text of a resource file as the page carries it: without its final line break.
    static func resource(_ name: String) throws -> String {
        var text = try String(contentsOf: folder.appendingPathComponent(name), encoding: .utf8)
        if text.hasSuffix("\n") { text.removeLast() }
        return text
    }

    @Test(arguments: [("dashboard.css", "style", "style-src"), ("dashboard.js", "script", "script-src")])
    func thePageServesTheFileUnderItsHash(file: String, tag: String, directive: String) throws {
        let text = try Self.resource(file)
        #expect(text.count > 1000, "\(file) is read")
        #expect(DashboardPage.html.contains("<\(tag)>\(text)</\(tag)>"))
        let digest = Data(Crypto.sha256(text)).base64EncodedString()
        #expect(DashboardPage.contentSecurityPolicy.contains("\(directive) 'sha256-\(digest)'"))
    }

    /// A file of its own can be checked as what it is: node parses the script.
    @Test(.enabled(if: NodeUpstream.available)) func theScriptParses() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/node")
        process.arguments = ["--check", Self.folder.appendingPathComponent("dashboard.js").path]
        process.standardError = FileHandle.nullDevice
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }
}
