import Foundation
import Testing
@testable import PosternHTTP
import PosternTesting

/// Values whose fields live in a shared box (`HTTPRequest`) keep value semantics: a change to a copy never shows in
/// the original (`Session`: SessionValueSemanticsTests). Header fields rendered once for a stored answer (`HTTPHeaders.render()`) are
/// written as they are, and a change to one of them is what goes on the wire.
@Suite struct HTTPValueSemanticsTests {
    @Test func aChangedRequestCopyLeavesTheOriginalAsItWas() {
        let original = HTTPRequest(method: .get, target: "/a?x=1", headers: ["X-Probe": "p"], body: Data("b".utf8))
        var copy = original
        copy.headers.add("X-Other", "o")
        copy.path = "/b"
        copy.body.append(contentsOf: Array("c".utf8))
        copy.method = .post
        #expect(original.path == "/a" && original.query == "x=1" && original.method == .get)
        #expect(original.headers["X-Other"] == nil && original.headers["X-Probe"] == "p")
        #expect(original.body == Data("b".utf8))
        #expect(copy.path == "/b" && copy.method == .post && copy.headers["X-Other"] == "o" && copy.body == Data("bc".utf8))
    }

    @Test func renderingKeepsTheFieldsAndRefusesTheServersOwn() {
        var headers: HTTPHeaders = ["Content-Type": "application/json", "X-Cache": "HIT"]
        headers.render()
        #expect(headers.fields.map(\.name) == ["Content-Type", "X-Cache"])
        #expect(headers.forWriting.rendered.map { String(decoding: $0.bytes, as: UTF8.self) }
                == "Content-Type: application/json\r\nX-Cache: HIT\r\n")
        var copy = headers
        copy.add("X-Request-Id", "r-1")
        #expect(copy.forWriting.rendered === headers.forWriting.rendered, "a field added later keeps the rendered ones")
        #expect(copy.forWriting.others.map(\.name) == ["X-Request-Id"])
        #expect(copy.fields.map(\.name) == ["Content-Type", "X-Cache", "X-Request-Id"] && headers.fields.count == 2)
        copy.set("X-Cache", "MISS")
        #expect(copy.forWriting.rendered == nil, "a change to a rendered field drops the bytes")
        #expect(copy.fields.map(\.name) == ["Content-Type", "X-Request-Id", "X-Cache"] && copy["X-Cache"] == "MISS")
        #expect(headers["X-Cache"] == "HIT" && headers.values("X-Cache") == ["HIT"])

        for own in ["Content-Length", "connection", "Transfer-Encoding", "Date"] {
            var withOwn: HTTPHeaders = ["X-A": "a"]
            withOwn.add(own, "1")
            withOwn.render()
            #expect(withOwn.forWriting.rendered == nil && withOwn.fields.count == 2, "\(own) is the server's to write")
        }
    }

    /// A rendered answer on the wire: its fields as rendered, the ones added after them, and a changed rendered
    /// field with its new value only.
    @Test func renderedFieldsAreWrittenAndAChangedOneIsWrittenAnew() throws {
        var prepared = HTTPResponse.json(200, Data("{}".utf8))
        prepared.headers.set("X-Cache", "HIT")
        prepared.headers.render()
        let stored = prepared
        try HTTPServerTests.withServer(handler: { request in
            var answer = stored
            answer.headers.set("X-Request-Id", "r-" + request.path.dropFirst())
            if request.path == "/changed" { answer.headers.set("X-Cache", "MISS") }
            return answer
        }) { server in
            let client = RawHTTPClient(port: server.port)
            try client.sendRaw(Array("GET /kept HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            let kept = try client.readResponse()
            #expect(kept.status == 200 && kept.body == Data("{}".utf8))
            #expect(kept.headers["X-Cache"] == "HIT" && kept.headers["X-Request-Id"] == "r-kept")
            #expect(kept.headers["Content-Type"] == "application/json; charset=utf-8" && kept.headers["Content-Length"] == "2")
            try client.sendRaw(Array("GET /changed HTTP/1.1\r\nHost: x\r\n\r\n".utf8))
            let changed = try client.readResponse()
            #expect(changed.headers.values("X-Cache") == ["MISS"])
            #expect(changed.headers["X-Request-Id"] == "r-changed" && changed.body == Data("{}".utf8))
        }
    }
}
