import Foundation
import Testing
@testable import PosternCore
import PosternTesting

/// The transcoder's fast paths: strings scanned eight bytes at a time, keys matched as words and
/// predicted from the previous item. Every case is checked against the reference renderer too.
@Suite struct JSONTranscoderWordTests {
    /// The shipped `books` resource.
    private let books = JSONTranscoder(ResourceConfig.shipped[0])

    /// The `title` of the only item `list` renders from `body`, decoded; nil when refused.
    private func renderedTitle(_ body: [UInt8]) -> String? {
        guard let out = try? books.renderList(directusBody: Data(body)),
              let object = try? JSONSerialization.jsonObject(with: out) as? [String: Any],
              let items = object["books"] as? [[String: Any]], items.count == 1 else { return nil }
        return items[0]["title"] as? String
    }

    /// A list answer whose one item's title is the raw string token content `raw`.
    private func answer(title raw: [UInt8]) -> [UInt8] {
        Array(#"{"data":[{"id":1,"title":""#.utf8) + raw + Array(#"","content":"after"}]}"#.utf8)
    }

    /// Both renderers, list and item, agree on `body` for `resources` (bodies or 502s).
    private func expectAgrees(_ body: [UInt8], _ resources: [ResourceConfig],
                              sourceLocation: SourceLocation = #_sourceLocation) {
        let data = Data(body)
        for resource in resources {
            let fast = JSONTranscoder(resource)
            let slow = JSONValueRenderer(resource)
            #expect(RenderOutcome { () throws(GatewayError) in try fast.renderList(directusBody: data) }
                == RenderOutcome { () throws(GatewayError) in try slow.renderList(directusBody: data) },
                "\(String(decoding: body, as: UTF8.self))", sourceLocation: sourceLocation)
            #expect(RenderOutcome { () throws(GatewayError) in try fast.renderItem(directusBody: data) }
                == RenderOutcome { () throws(GatewayError) in try slow.renderItem(directusBody: data) },
                "\(String(decoding: body, as: UTF8.self))", sourceLocation: sourceLocation)
        }
    }

    @Test(arguments: [(#"\""#, "\""), (#"\\"#, "\\"), (#"\/"#, "/"), (#"\n"#, "\n"), (#"\t"#, "\t"),
                      (#"\u00e9"#, "é"), (#"\ud83d\ude80"#, "🚀"), ("\u{7F}", "\u{7F}"), (" ", " ")])
    func findsAnEscapeAtEveryPositionOfAWord(_ escape: String, _ decoded: String) {
        // 0 to 24 plain bytes before it (every position in three words), 0 to 9 after it.
        for before in 0..<25 {
            for after in [0, 1, 7, 8, 9] {
                let raw = Array(String(repeating: "a", count: before).utf8) + Array(escape.utf8)
                    + Array(String(repeating: "b", count: after).utf8)
                #expect(renderedTitle(answer(title: raw))
                        == String(repeating: "a", count: before) + decoded + String(repeating: "b", count: after),
                        "escape \(escape) after \(before) bytes")
                expectTranscoderAgrees(Data(answer(title: raw)))
            }
        }
    }

    @Test(arguments: [0x00, 0x01, 0x09, 0x0A, 0x0D, 0x1F] as [UInt8])
    func refusesAControlByteAtEveryPositionOfAWord(_ control: UInt8) {
        for before in 0..<25 {
            for after in [0, 3, 8] {
                let raw = Array(repeating: UInt8(ascii: "a"), count: before) + [control]
                    + Array(repeating: UInt8(ascii: "b"), count: after)
                let body = answer(title: raw)
                #expect(RenderOutcome { () throws(GatewayError) in try books.renderList(directusBody: Data(body)) }
                        == .refused, "control byte \(control) after \(before) bytes")
                expectTranscoderAgrees(Data(body))
            }
        }
    }

    @Test func handlesStringsThatEndInTheLastBytesOfTheInput() {
        // The closing quote, an escape, a control byte, a UTF-8 sequence or the end of the input
        // among the last eight bytes, where the scanner reads byte by byte.
        for length in 0..<24 {
            let text = String(repeating: "x", count: length)
            let item = Array(#"{"data":{"id":1,"title":""#.utf8)
            let rendered = try? books.renderItem(directusBody: Data(item + Array(text.utf8) + Array(#""}}"#.utf8)))
            #expect(rendered.map { String(decoding: $0, as: UTF8.self) }
                    == #"{"books":[{"id":"1","title":""# + text + #""}],"total":1}"#)
            for tail in [#""}}"#, #"\""}}"#, #"\u0041"}}"#, "é\"}}", "\u{1F680}\"}}", #"""#, "", #"\"#, #"\u00"#]
                         .map({ Array($0.utf8) }) + [[0x01, 0x22, 0x7D, 0x7D], [0xC3], [0xE2, 0x82], [0xF0, 0x9F, 0x9A]] {
                expectTranscoderAgrees(Data(item + Array(text.utf8) + tail))
            }
            // Unterminated at the very end: refused.
            #expect(RenderOutcome { () throws(GatewayError) in
                try books.renderItem(directusBody: Data(item + Array(text.utf8))) } == .refused)
        }
    }

    @Test(arguments: ["é", "€", "🚀", "ß€🚀é"])
    func keepsMultiByteTextAcrossAWordBoundary(_ text: String) {
        for before in 0..<17 {
            let expected = String(repeating: "a", count: before) + text + "z"
            #expect(renderedTitle(answer(title: Array(expected.utf8))) == expected, "\(text) after \(before) bytes")
            expectTranscoderAgrees(Data(answer(title: Array(expected.utf8))))
        }
    }

    @Test(arguments: [[0xC3], [0xE2, 0x82], [0xF0, 0x9F, 0x9A], [0xED, 0xA0, 0x80], [0xC0, 0xAF], [0xF5, 0x80, 0x80, 0x80],
                      [0x80], [0xBF], [0xFE], [0xFF]] as [[UInt8]])
    func refusesInvalidUTF8AtEveryPositionOfAWord(_ bad: [UInt8]) {
        // Cut-off sequences are followed by ASCII, so that they straddle the next word.
        for before in 0..<17 {
            let raw = Array(repeating: UInt8(ascii: "a"), count: before) + bad + Array("zzzzzzzzz".utf8)
            let body = answer(title: raw)
            #expect(RenderOutcome { () throws(GatewayError) in try books.renderList(directusBody: Data(body)) }
                    == .refused, "\(bad) after \(before) bytes")
            expectTranscoderAgrees(Data(body))
        }
    }

    @Test func copiesVeryLongStrings() throws {
        let plain = String(repeating: "0123456789abcdef", count: 65_536)           // 1 MiB of plain ASCII
        #expect(renderedTitle(answer(title: Array(plain.utf8))) == plain)
        var mixed = ""
        for i in 0..<20_000 { mixed += i % 7 == 0 ? #"x\"y\\é"# : "plain text \(i) " }
        let body = answer(title: Array(mixed.utf8))
        let expected = try #require(try JSONSerialization.jsonObject(with: Data(("\"" + mixed + "\"").utf8),
                                                                    options: [.fragmentsAllowed]) as? String)
        #expect(renderedTitle(body) == expected)
        expectTranscoderAgrees(Data(body))
        expectTranscoderAgrees(Data(answer(title: Array(plain.utf8) + [0x01])))
    }

    @Test func keysThatDifferFromThePreviousItemsAreReadAfresh() throws {
        // Same order, then near misses of the remembered `"key":` (longer, shorter, one byte off,
        // escaped, spaced), reordered keys, and more members than are remembered.
        let items = [
            #"{"id":1,"title":"a","content":"c1","user_created":"u1"}"#,
            #"{"id":2,"title":"b","content":"c2","user_created":"u2"}"#,
            #"{"id":3,"titles":"no","title":"c","contents":"no","user_created":"u3"}"#,
            #"{"id":4,"titl":"no","title":"d","conten":"no","user_createe":"no"}"#,
            #"{"id":5,"t\u0069tle":"e","content" :"c5", "user_created":"u5"}"#,
            #"{"user_created":"u6","content":"c6","title":"f","id":6}"#,
            #"{"id":7,"title":"g","content":"c7","user_created":"u7"}"#,
            "{" + (0..<20).map { #""k\#($0)":\#($0),"# }.joined() + #""id":8,"title":"h"}"#,
            "{" + (0..<20).map { #""k\#($0)":\#($0),"# }.joined() + #""title":"i","id":9}"#,
            #"{"id":10,"title":"j"}"#,
        ]
        let body = #"{"data":["# + items.joined(separator: ",") + #"]}"#
        let out = String(decoding: try books.renderList(directusBody: Data(body.utf8)), as: UTF8.self)
        #expect(out == #"{"books":[{"id":"1","title":"a","subtitle":"c1","user":"u1"},"#
            + #"{"id":"2","title":"b","subtitle":"c2","user":"u2"},{"id":"3","title":"c","user":"u3"},"#
            + #"{"id":"4","title":"d"},{"id":"5","title":"e","subtitle":"c5","user":"u5"},"#
            + #"{"id":"6","title":"f","subtitle":"c6","user":"u6"},{"id":"7","title":"g","subtitle":"c7","user":"u7"},"#
            + #"{"id":"8","title":"h"},{"id":"9","title":"i"},{"id":"10","title":"j"}],"total":10}"#)
        expectTranscoderAgrees(Data(body.utf8))
        // Keys in the last sixteen bytes of the input are matched byte by byte.
        expectTranscoderAgrees(Data(#"{"data":{"id":1,"title":"t"}}"#.utf8))
        expectTranscoderAgrees(Data(#"{"data":[{"id":1},{"id":2}]}"#.utf8))
    }

    @Test func matchesLongAndSimilarFieldNames() throws {
        // Directus names longer than the sixteen bytes compared as words, equal in those sixteen bytes.
        let resource = ResourceConfig(name: "things", collection: "things",
                                      fields: [("id", "id"), ("a", "a_rather_long_field_name_one"),
                                               ("b", "a_rather_long_field_name_two"), ("c", "exactly_16_bytes"),
                                               ("d", "exactly_16_bytez"), ("e", "eight_by"), ("f", "nine_byte")])
        let body = #"{"data":[{"id":1,"a_rather_long_field_name_two":2,"a_rather_long_field_name_one":1,"#
            + #""a_rather_long_field_name_on":0,"exactly_16_bytez":4,"exactly_16_bytes":3,"eight_by":5,"nine_byte":6,"#
            + #""nine_bytes":0,"eight_b":0},{"id":2,"a_rather_long_field_name_one":1,"a_rather_long_field_name_two":2}]}"#
        let out = String(decoding: try JSONTranscoder(resource).renderList(directusBody: Data(body.utf8)), as: UTF8.self)
        #expect(out == #"{"things":[{"id":"1","a":1,"b":2,"c":3,"d":4,"e":5,"f":6},{"id":"2","a":1,"b":2}],"total":2}"#)
        expectAgrees(Array(body.utf8), [resource])
    }
}
