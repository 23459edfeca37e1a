import Foundation
import Testing
@testable import PosternHTTP

/// `HTTPBody`: a body in a `Data` or in `HeapBytes` reads the same, and a response's `body` and `content` agree.
@Suite struct HTTPBodyTests {
    /// `bytes` in memory of their own.
    static func heap(_ bytes: [UInt8]) -> HTTPBody {
        let base = malloc(max(bytes.count, 1))!
        bytes.withUnsafeBytes { base.copyMemory(from: $0.baseAddress!, byteCount: bytes.count) }
        return .heap(HeapBytes(taking: base, count: bytes.count))
    }

    @Test(arguments: [[], Array("x".utf8), Array(#"{"data":[{"id":1,"title":"Zürich 🚀"}]}"#.utf8)])
    func bothKindsReadTheSameBytes(bytes: [UInt8]) {
        for body in [HTTPBody.data(Data(bytes)), Self.heap(bytes)] {
            #expect(body.count == bytes.count)
            #expect(body.isEmpty == bytes.isEmpty)
            #expect(body.withUnsafeBytes { Array($0) } == bytes)
            #expect(body.data == Data(bytes))
        }
    }

    @Test func aResponseBodyIsItsContentAndSettingItReplacesTheContent() {
        var response = HTTPResponse(status: 200, content: Self.heap(Array("{}".utf8)))
        #expect(response.body == Data("{}".utf8))
        response.body = Data("[1]".utf8)
        #expect(response.content.withUnsafeBytes { Array($0) } == Array("[1]".utf8))
        #expect(HTTPResponse(status: 204).content.isEmpty)
    }

    /// An upstream answer's body is handed over in memory of its own, with its bytes as sent.
    @Test func anUpstreamAnswersBodyIsHeapBytes() {
        let parser = UpstreamResponseParser(keptHeaders: nil)
        let answer = Array("HTTP/1.1 200 OK\r\nContent-Length: 11\r\n\r\n{\"data\":[]}".utf8)
        #expect(answer.withUnsafeBytes { parser.feed($0) } == .complete(leftover: 0))
        let (_, body) = parser.takeHeadersAndBody()
        guard case .heap(let bytes) = body else {
            Issue.record("expected HeapBytes, got \(body)")
            return
        }
        #expect(Array(UnsafeRawBufferPointer(start: bytes.base, count: bytes.count)) == Array(#"{"data":[]}"#.utf8))
    }
}
