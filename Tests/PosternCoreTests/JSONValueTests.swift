import Foundation
import Testing
@testable import PosternCore

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
