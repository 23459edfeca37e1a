import Foundation
import Testing
@testable import PosternHTTP
import PosternTesting

@Suite struct JSONValueTests {
    @Test func roundTripsKeepingOrderAndIntegers() throws {
        let text = #"{"b":1,"a":[true,null,"x\n\"y\"",1.5,-3],"c":{"é":"\u00e9"}}"#
        let v = try JSONValue.parse(text)
        #expect(v["b"] == .int(1))
        #expect(v.text == #"{"b":1,"a":[true,null,"x\n\"y\"",1.5,-3],"c":{"é":"é"}}"#)
    }

    @Test(arguments: ["", "{", "[1,]", "{\"a\" 1}", "01", "\"\\x\"", "nul", "1 2", "\"\\ud800\""])
    func rejectsMalformed(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    @Test func limitsDepth() {
        let deep = String(repeating: "[", count: 100) + String(repeating: "]", count: 100)
        #expect(throws: JSONParseError.self) { try JSONValue.parse(Data(deep.utf8), maxDepth: 64) }
    }
}

@Suite struct HTTPValueTests {
    @Test func headerNamesCompareCaseInsensitively() {
        var h: HTTPHeaders = ["Content-Type": "a", "X-Request-Id": "b"]
        #expect(h["content-type"] == "a")
        #expect(h["X-REQUEST-ID"] == "b")
        #expect(h["X-Request-Ie"] == nil)
        #expect(h["Content-Typ"] == nil)
        #expect(h["X-Request_Id"] == nil)  // '-' and '_' differ by 0x20 but are not letters
        h.remove("CONTENT-TYPE")
        #expect(h["Content-Type"] == nil)
    }

    @Test func queryEncodingRoundTrips() {
        let raw = "a b/c?d=e&f,g%h+ü~._-"
        #expect(QueryString.encode(raw) == "a%20b%2Fc%3Fd%3De%26f%2Cg%25h%2B%C3%BC~._-")
        #expect(QueryString.decode(QueryString.encode(raw)) == raw)
    }
}
