import Foundation
import Testing
@testable import PosternCore

/// Inputs that made a libFuzzer target (`Fuzz/Targets/`, run by `make fuzz`) fail, replayed through the
/// invariant that target checks. Each case names the crash file kept in `Fuzz/crashes/`.
@Suite struct FuzzRegressionTests {
    /// json_roundtrip: parse → serialize → parse gives an equal value and the same text.
    private func roundTrips(_ bytes: [UInt8]) throws -> Bool {
        let first = try JSONValue.parse(Data(bytes))
        let text = first.serialized()
        let second = try JSONValue.parse(text)
        return first == second && second.serialized() == text
    }

    /// `Fuzz/crashes/json_roundtrip-duplicate-keys`: `==` was not reflexive on an object with a repeated key
    /// (each key was looked up by its first occurrence only).
    @Test func equalityIsReflexiveWithDuplicateKeys() throws {
        #expect(try roundTrips(Array(#"{"a":1,"a":2}"#.utf8)))
        let v = try JSONValue.parse(#"{"a":1,"a":2}"#)
        #expect(v == v)
        // Key order still does not matter, but the values of a repeated key keep their order.
        #expect(try JSONValue.parse(#"{"a":1,"b":0,"a":2}"#) == JSONValue.parse(#"{"b":0,"a":1,"a":2}"#))
        #expect(try JSONValue.parse(#"{"a":1,"a":2}"#) != JSONValue.parse(#"{"a":2,"a":1}"#))
        #expect(try JSONValue.parse(#"{"a":1,"a":1}"#) != JSONValue.parse(#"{"a":1,"b":1}"#))
        #expect(try JSONValue.parse(#"{"b":1,"a":1}"#) == JSONValue.parse(#"{"a":1.0,"b":1}"#))
    }

    /// `Fuzz/crashes/json_roundtrip-infinity`: `1e3901` parsed as a Double infinity, which serializes as `null`.
    @Test(arguments: ["[1e3901,-9223744073709551616,9224775807]", "1e999", "-1e999", "[0.5E+400]"])
    func refusesNumbersOutOfRange(_ text: String) {
        #expect(throws: JSONParseError.self) { try JSONValue.parse(text) }
    }

    /// Neighbours of the infinity crash that must keep working: huge integers become doubles, tiny ones zero.
    @Test(arguments: ["-9223744073709551616", "9223372036854775808", "1e308", "1e-400", "-0.0"])
    func keepsLargeFiniteNumbers(_ text: String) throws {
        #expect(try roundTrips(Array(text.utf8)))
    }

    /// A Directus answer carrying an out-of-range number is a 502, not an item with `null` in it.
    @Test func outOfRangeNumberInDirectusAnswerIs502() throws {
        let mapper = ResourceMapper(ResourceConfig.shipped[0])
        let body = Data(#"{"data":[{"id":1,"title":"t","content":1e999}]}"#.utf8)
        #expect(throws: GatewayError.self) { try mapper.renderer.renderList(directusBody: body) }
        do {
            _ = try mapper.renderer.renderList(directusBody: body)
        } catch {
            #expect(error.status == 502)
        }
    }
}
