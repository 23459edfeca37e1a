import Foundation
@testable import PosternCore
@testable import PosternIO
@testable import PosternHTTP
import Testing

/// The edge's decoration (`EdgeStages.decorate`) of answers whose header fields are rendered ahead (stored
/// micro-cache answers) is the decoration of plain ones.
struct RenderedAnswerDecorationTests {
    /// The edge's decoration of an answer whose fields are rendered (a stored micro-cache answer): the result is the
    /// same whether the rendered part already holds the alike fields (then they are not set again) or not.
    @Test(arguments: [
        // Rendered with both alike fields, as the micro-cache prepares them: only the request id is added.
        ([("Content-Type", "application/json"), ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-store")], "/api/v1/books"),
        // A different Cache-Control, a missing nosniff, one alike field twice: the edge's values win, each once.
        ([("Content-Type", "application/json"), ("Cache-Control", "max-age=60")], "/api/v1/books"),
        ([("X-Content-Type-Options", "nosniff"), ("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-store")], "/api/v1/books"),
        // Outside /api/ no Cache-Control is set: a rendered one stays as it is.
        ([("X-Content-Type-Options", "nosniff"), ("Cache-Control", "no-store")], "/healthz"),
    ])
    func decoratingARenderedAnswerGivesTheFieldsOfAPlainOne(_ fields: [(String, String)], _ path: String) {
        var plain = HTTPResponse.json(200, Data("{}".utf8))
        for (name, value) in fields { plain.headers.add(name, value) }
        var rendered = plain
        rendered.headers.render()
        #expect(rendered.headers.forWriting.rendered != nil)
        EdgeStages.decorate(&plain, path: path, requestID: "r-1")
        EdgeStages.decorate(&rendered, path: path, requestID: "r-1")
        let names = ["Content-Type", "X-Content-Type-Options", "Cache-Control", "X-Request-Id"]
        for name in names { #expect(rendered.headers.values(name) == plain.headers.values(name), "\(name)") }
        #expect(rendered.headers.values("X-Content-Type-Options") == ["nosniff"])
        #expect(rendered.headers.values("X-Request-Id") == ["r-1"])
        if path.hasPrefix("/api/") { #expect(rendered.headers.values("Cache-Control") == ["no-store"]) }
    }
}
