import Foundation
import Testing
@testable import PosternCore
import PosternTesting

/// What one renderer made of one answer: the body, or refused with a 502.
enum RenderOutcome: Equatable, CustomStringConvertible {
    case body(Data)
    case refused

    /// Runs `render`; any error must be a 502.
    init(_ render: () throws(GatewayError) -> Data) {
        do {
            self = .body(try render())
        } catch {
            #expect(error.status == 502, "a refused answer is a 502, got \(error.status)")
            self = .refused
        }
    }

    /// The body as text, or `refused`.
    var description: String {
        switch self {
        case .body(let data): return String(decoding: data, as: UTF8.self)
        case .refused: return "refused"
        }
    }

    /// The body decoded by Foundation (nil when refused or when Foundation cannot decode it).
    var decoded: NSObject? {
        guard case .body(let data) = self else { return nil }
        return try? JSONSerialization.jsonObject(with: data, options: [.fragmentsAllowed]) as? NSObject
    }
}

/// Runs the transcoder and the reference renderer over `body` for every test resource, list and item:
/// both refuse, or both render the same bytes, which Foundation decodes to the same values.
func expectTranscoderAgrees(_ body: Data, sourceLocation: SourceLocation = #_sourceLocation) {
    for resource in transcoderTestResources {
        let transcoder = JSONTranscoder(resource)
        let reference = JSONValueRenderer(resource)
        let pairs = [
            (RenderOutcome { () throws(GatewayError) in try transcoder.renderList(directusBody: body) },
             RenderOutcome { () throws(GatewayError) in try reference.renderList(directusBody: body) }),
            (RenderOutcome { () throws(GatewayError) in try transcoder.renderItem(directusBody: body) },
             RenderOutcome { () throws(GatewayError) in try reference.renderItem(directusBody: body) }),
        ]
        for (fast, slow) in pairs {
            #expect(fast == slow, "\(resource.name): transcoder \(fast) ≠ reference \(slow) for \(String(decoding: body, as: UTF8.self))",
                    sourceLocation: sourceLocation)
            if case .body = slow {
                #expect(fast.decoded != nil && fast.decoded == slow.decoded, "Foundation decodes them differently",
                        sourceLocation: sourceLocation)
            }
        }
    }
}

@Suite struct JSONTranscoderTests {
    private func list(_ body: String, _ resource: String = "books") throws(GatewayError) -> String {
        let r = transcoderTestResources.first { $0.name == resource } ?? transcoderTestResources[0]
        return String(decoding: try JSONTranscoder(r).renderList(directusBody: Data(body.utf8)), as: UTF8.self)
    }

    private func item(_ body: String, _ resource: String = "books") throws(GatewayError) -> String {
        let r = transcoderTestResources.first { $0.name == resource } ?? transcoderTestResources[0]
        return String(decoding: try JSONTranscoder(r).renderItem(directusBody: Data(body.utf8)), as: UTF8.self)
    }

    /// A 502 for `body` from both renderers, list and item.
    private func expectRefused(_ body: String, sourceLocation: SourceLocation = #_sourceLocation) {
        let books = JSONTranscoder(ResourceConfig.shipped[0])
        #expect(RenderOutcome { () throws(GatewayError) in try books.renderList(directusBody: Data(body.utf8)) } == .refused,
                sourceLocation: sourceLocation)
        expectTranscoderAgrees(Data(body.utf8), sourceLocation: sourceLocation)
    }

    @Test func rendersInConfigOrderAndKeepsTheTotal() throws {
        let body = #"{"data":[{"content":"B","extra":[1,{"x":"]}"}],"user_created":"u1","title":"A","id":12},{"id":"13","title":null,"content":null},{"id":14}],"meta":{"filter_count":7}}"#
        #expect(try list(body) ==
            #"{"books":[{"id":"12","title":"A","subtitle":"B","user":"u1"},{"id":"13","title":""},{"id":"14","title":""}],"total":7}"#)
        #expect(try item(#"{"data":{"title":"T","id":3}}"#) == #"{"books":[{"id":"3","title":"T"}],"total":1}"#)
        #expect(try list(#"{"data":[]}"#) == #"{"books":[],"total":0}"#)
        expectTranscoderAgrees(Data(body.utf8))
    }

    @Test func reEscapesStringsAsTheReferenceDoes() throws {
        let body = #"{"data":[{"id":1,"title":"say \"hi\"\n\u0001é\/\b\f\t\r\\ \u007f","content":"x\u001Fy"}]}"#
        #expect(try list(body) ==
            #"{"books":[{"id":"1","title":"say \"hi\"\n\u0001é/\u0008\u000c\t\r\\ "# + "\u{7f}" + #"","subtitle":"x\u001fy"}],"total":1}"#)
        expectTranscoderAgrees(Data(body.utf8))
    }

    @Test func decodesUnicodeEscapesAndSurrogatePairs() throws {
        let body = #"{"data":[{"id":"\u0031\u0032","title":"\u00e9\u65E5\uD83D\uDE80\u0041\u0022\u005c\u002F\u0000"}]}"#
        #expect(try list(body) == #"{"books":[{"id":"12","title":"é日🚀A\"\\/\u0000"}],"total":1}"#)
        expectTranscoderAgrees(Data(body.utf8))
    }

    @Test(arguments: [#"\uD800"#, #"\uDC00"#, #"\uD800\u0041"#, #"\uD800x"#, #"\uDBFF\uDBFF"#, #"\uD83D\uDE8z"#,
                      #"\u12G4"#, #"\x"#, #"\u00"#])
    func refusesLoneSurrogatesAndBadEscapes(_ escape: String) {
        expectRefused(#"{"data":[{"id":1,"title":"a"# + escape + #"b"}]}"#)
        // Also where the value is not used at all.
        expectRefused(#"{"data":[],"other":{"k":"a"# + escape + #""}}"#)
    }

    @Test func keepsNonASCIITextAsItIs() throws {
        let body = #"{"data":[{"id":1,"title":"A café in Zürich — review","content":"日本語 🚀"}]}"#
        #expect(try list(body) == #"{"books":[{"id":"1","title":"A café in Zürich — review","subtitle":"日本語 🚀"}],"total":1}"#)
        expectTranscoderAgrees(Data(body.utf8))
    }

    @Test(arguments: [[0xC3, 0x28], [0xED, 0xA0, 0x80], [0xF4, 0x90, 0x80, 0x80], [0xC0, 0xAF], [0xE0, 0x80, 0xAF],
                      [0xF0, 0x8F, 0xBF, 0xBF], [0x80], [0xFF], [0xE6, 0x97], [0xF0, 0x9F, 0x9A], [0x1F], [0x0A]] as [[UInt8]])
    func refusesInvalidUTF8AndControlCharacters(_ bad: [UInt8]) {
        for template in [#"{"data":[{"id":1,"title":"a#"#, #"{"data":[],"x":{"a#"#, #"{"data":[{"id":1,"n#"#] {
            var body = Array(template.utf8)
            body += bad
            body += Array(#"b":1}]}"#.utf8)
            let text = Data(body)
            #expect(RenderOutcome { () throws(GatewayError) in
                try JSONTranscoder(ResourceConfig.shipped[0]).renderList(directusBody: text) } == .refused)
            expectTranscoderAgrees(text)
        }
        // A sequence cut off by the end of the input.
        expectTranscoderAgrees(Data(Array(#"{"data":[{"id":1,"title":"a"#.utf8) + bad))
    }

    @Test func omitsNullOptionalFieldsAndFillsRequiredOnes() throws {
        #expect(try list(#"{"data":[{"id":1,"title":null,"content":null,"user_created":null}]}"#) ==
            #"{"books":[{"id":"1","title":""}],"total":1}"#)
        #expect(try list(#"{"data":[{"id":1}]}"#) == #"{"books":[{"id":"1","title":""}],"total":1}"#)
        for body in [#"{"data":[{"id":null,"title":"t"}]}"#, #"{"data":[{"title":"t"}]}"#, #"{"data":[{"id":"","title":"t"}]}"#,
                     #"{"data":[{"id":true}]}"#, #"{"data":[{"id":[1]}]}"#, #"{"data":[{"id":{"a":1}}]}"#] {
            expectRefused(body)
        }
    }

    @Test(arguments: [("12", "12"), ("-5", "-5"), ("-0", "0"), ("0", "0"), ("1.0", "1"), ("1e2", "100"), ("-0.0", "0"),
                      ("9007199254740993", "9007199254740993"), ("922337203685477580", "922337203685477580"),
                      ("9223372036854775807", "9223372036854775807"), ("8.999e15", "8999000000000000")])
    func rendersNumericIDsAsStrings(_ raw: String, _ expected: String) throws {
        let body = #"{"data":[{"id":"# + raw + #","title":"t"}]}"#
        #expect(try list(body) == #"{"books":[{"id":""# + expected + #"","title":"t"}],"total":1}"#)
        expectTranscoderAgrees(Data(body.utf8))
    }

    @Test(arguments: ["1.5", "12345678901234567890", "9e15", "1e300", "-1e-5"])
    func refusesIDsThatAreNotIntegers(_ raw: String) {
        expectRefused(#"{"data":[{"id":"# + raw + #","title":"t"}]}"#)
    }

    @Test(arguments: [("42", "42"), ("-0", "0"), ("1.5", "1.5"), ("1e20", "1e+20"), ("1E2", "100"), ("2.50", "2.5"),
                      ("1e-7", "1e-07"), ("123456789012345678901", "1.2345678901234568e+20"), ("true", "true"),
                      ("false", "false"), ("0.1", "0.1"), ("-1234567890123456789", "-1234567890123456789")])
    func rendersRequiredNumbersAndBooleansAsTheirText(_ raw: String, _ expected: String) throws {
        let body = #"{"data":[{"id":1,"title":"# + raw + "}]}"
        let out = try list(body)
        expectTranscoderAgrees(Data(body.utf8))
        #expect(out == #"{"books":[{"id":"1","title":""# + expected + #""}],"total":1}"#)
    }

    @Test func keepsOptionalNumbersAsTheReferenceWritesThem() throws {
        let body = #"{"data":[{"id":1,"title":"t","content":[1.0,-0,1e2,1.5e300,123456789012345678901,-9223372036854775808,0.1,1E-400,7]}]}"#
        #expect(try list(body) ==
            #"{"books":[{"id":"1","title":"t","subtitle":[1,0,100,1.5e+300,1.2345678901234568e+20,-9223372036854775808,0.1,0,7]}],"total":1}"#)
        expectTranscoderAgrees(Data(body.utf8))
    }

    @Test(arguments: ["1e999", "-1e400", "0.00001e400", String(repeating: "9", count: 400), "01", "1.", ".5", "-", "1e", "+1",
                      "1e+", "0x10", "NaN", "Infinity"])
    func refusesNumbersTheReferenceRefuses(_ raw: String) {
        expectRefused(#"{"data":[{"id":1,"title":"t","unmapped":"# + raw + "}]}")
        expectRefused(#"{"meta":{"x":["# + raw + #"]},"data":[]}"#)
    }

    @Test func acceptsLongFiniteNumbersAnywhere() throws {
        let long = "1" + String(repeating: "0", count: 300) + ".5e-290"
        let body = #"{"data":[{"id":1,"title":"t","x":"# + long + #","y":1}]}"#
        expectTranscoderAgrees(Data(body.utf8))
        let valid = #"{"data":[{"id":1,"title":"t","x":["# + long + "," + String(repeating: "7", count: 300) + "]}]}"
        #expect(try list(valid) == #"{"books":[{"id":"1","title":"t"}],"total":1}"#)
        expectTranscoderAgrees(Data(valid.utf8))
    }

    @Test func writesNestedValuesCompactAndSkipsUnmappedOnes() throws {
        let body = """
        { "data" : [ { "skip" : { "a" : [ "]}\\"[{" , { "b" : [ ] } , [ [ ] ] ] , "c" : "}" } ,
                       "id" : 1 , "title" : "t" ,
                       "user_created" : { "id" : "u" , "tags" : [ "x]" , null , true , false , 1.50 , { } ] , "q" : "\\"\\u00e9" } ,
                       "content" : [ ] } ] ,
          "meta" : { "nested" : [ [ { } ] ] , "filter_count" : 3 } }
        """
        #expect(try list(body) ==
            #"{"books":[{"id":"1","title":"t","subtitle":[],"user":{"id":"u","tags":["x]",null,true,false,1.5,{}],"q":"\"é"}}],"total":3}"#)
        expectTranscoderAgrees(Data(body.utf8))
    }

    @Test func boundsNestingLikeTheReference() throws {
        // The top-level object, `data`, one item and its field: 64 containers deep is the limit.
        func nested(_ depth: Int) -> String {
            #"{"data":[{"id":1,"title":"t","content":"# + String(repeating: "[", count: depth - 3)
                + String(repeating: "]", count: depth - 3) + "}]}"
        }
        #expect(try list(nested(64)).hasPrefix(#"{"books":[{"id":"1","title":"t","subtitle":[[[["#))
        expectTranscoderAgrees(Data(nested(64).utf8))
        expectRefused(nested(65))
        // Hostile input: far deeper than any stack would take if it recursed.
        expectRefused(#"{"data":[],"x":"# + String(repeating: "[", count: 200_000))
        expectRefused(String(repeating: #"{"a":"#, count: 100_000))
    }

    @Test func takesTheTotalFromMetaLikeTheReference() throws {
        let cases: [(String, Int)] = [
            (#""meta":{"filter_count":7}"#, 7), (#""meta":{"total_count":9}"#, 9),
            (#""meta":{"filter_count":-1,"total_count":9}"#, 9), (#""meta":{"filter_count":"5"}"#, 5),
            (#""meta":{"filter_count":"\u0035"}"#, 5), (#""meta":{"filter_count":" 5"}"#, 1),
            (#""meta":{"filter_count":"+5"}"#, 5), (#""meta":{"filter_count":1e2}"#, 100),
            (#""meta":{"filter_count":2.5}"#, 1), (#""meta":{"filter_count":-0}"#, 0),
            (#""meta":{"filter_count":null,"total_count":"4"}"#, 4), (#""meta":{"filter_count":true}"#, 1),
            (#""meta":{"filter_count":3,"filter_count":8}"#, 3), (#""meta":{"filter_count":-3,"filter_count":8}"#, 1),
            (#""meta":{"filter_\u0063ount":6}"#, 6), (#""meta":[1]"#, 1), (#""meta":null"#, 1),
            (#""meta":null,"meta":{"filter_count":5}"#, 1), (#""meta":{"filter_count":5},"meta":{"filter_count":6}"#, 5),
            (#""meta":{"filter_count":9223372036854775807}"#, 9_223_372_036_854_775_807),
            (#""meta":{"filter_count":92233720368547758070}"#, 1), (#""meta":{}"#, 1), (#""other":1"#, 1),
        ]
        for (meta, total) in cases {
            for body in [#"{"# + meta + #","data":[{"id":1}]}"#, #"{"data":[{"id":1}],"# + meta + "}"] {
                #expect(try list(body) == #"{"books":[{"id":"1","title":""}],"total":\#(total)}"#, "\(meta)")
                expectTranscoderAgrees(Data(body.utf8))
            }
        }
    }

    @Test func refusesWrongShapes() {
        for body in ["", " ", "null", "[]", #"{"data":{}}"#, #"{"data":null}"#, #"{"meta":{}}"#, #"{"data":[1]}"#,
                     #"{"data":[[]]}"#, #"{"data":["x"]}"#, #"{"data":[{"id":1}] "#, #"{"data":[{"id":1}]}x"#,
                     #"{"data":[{"id":1}]}}"#, #"{"data":[{"id":1},]}"#, #"{"data":[{"id":1,}]}"#, #"{"data":[{"id":1}],}"#,
                     #"{"data":[{"id" 1}]}"#, #"{"data":[{"id":1} {"id":2}]}"#, #"{'data':[]}"#, #"{"data":[{"id":tru}]}"#,
                     #"{"data":[{"id":1,"x":nul}]}"#, #"{"data":[{"id":1,"x":falsey}]}"#, "{\"data\":[]}\u{0}"] {
            expectRefused(body)
        }
        // An item answer needs an object, a list answer an array.
        #expect(throws: GatewayError.self) { try item(#"{"data":[{"id":1}]}"#) }
        #expect(throws: GatewayError.self) { try list(#"{"data":{"id":1}}"#) }
        expectTranscoderAgrees(Data(#"{"data":[{"id":1}]}"#.utf8))
        expectTranscoderAgrees(Data(#"{"data":{"id":1}}"#.utf8))
    }

    @Test func growsTheOutputPastTheAnswersSize() throws {
        // Each 8-byte item becomes `{"id":"1","title":""}`, and `\b` (2 bytes) becomes `\u0008` (6 bytes).
        let body = #"{"data":["# + Array(repeating: #"{"id":1}"#, count: 2_000).joined(separator: ",")
            + #",{"id":2,"content":""# + String(repeating: #"\b"#, count: 5_000) + #""}]}"#
        let out = try list(body)
        #expect(out.hasPrefix(#"{"books":[{"id":"1","title":""},{"id":"1","title":""},"#))
        #expect(out.hasSuffix(String(repeating: #"\u0008"#, count: 3) + #""}],"total":2001}"#))
        #expect(out.utf8.count > 2 * body.utf8.count)
        expectTranscoderAgrees(Data(body.utf8))
    }

    @Test func firstOccurrenceOfAKeyWins() throws {
        let body = #"{"data":[{"id":1,"title":null,"title":"late","id":2,"content":"a","content":"b"}],"data":[{"id":9}]}"#
        #expect(try list(body) == #"{"books":[{"id":"1","title":"","subtitle":"a"}],"total":1}"#)
        #expect(try item(#"{"data":{"id":1},"data":[]}"#) == #"{"books":[{"id":"1","title":""}],"total":1}"#)
        expectTranscoderAgrees(Data(body.utf8))
    }

    @Test func matchesKeysByTheirDecodedText() throws {
        // Escaped keys, and keys that are equal as Swift strings (canonical equivalence), as in the reference.
        let body = #"{"d\u0061ta":[{"\u0069d":1,"t\u0069tle":"T","caf\u00e9":"x","K":"kelvin"}]}"#
        #expect(try list(body) == #"{"books":[{"id":"1","title":"T"}],"total":1}"#)
        #expect(try list(body, #"odd "list""#) ==
            #"{"odd \"list\"":[{"naïve":"x","first":"T","again":"T","kelvin":"kelvin","n":""}],"total":1}"#)
        let decomposed = #"{"data":[{"cafe\u0301":1,"cafe"# + "\u{301}" + #"":2,"\u212A":3}]}"#
        #expect(try list(decomposed, #"odd "list""#) == #"{"odd \"list\"":[{"naïve":1,"again":"","kelvin":3,"n":""}],"total":1}"#)
        expectTranscoderAgrees(Data(body.utf8))
        expectTranscoderAgrees(Data(decomposed.utf8))
    }

    @Test func agreesWithTheReferenceOnTheBenchAnswerAndTheFuzzCorpus() throws {
        var inputs: [Data] = []
        let bench = try Data(contentsOf: repositoryRoot.appendingPathComponent("bench/posts-20.json"))
        inputs.append(bench)
        for directory in ["Fuzz/corpus/render", "Fuzz/corpus/transcoder", "Fuzz/corpus/json_roundtrip"] {
            let url = repositoryRoot.appendingPathComponent(directory)
            for name in (try? FileManager.default.contentsOfDirectory(atPath: url.path)) ?? [] {
                inputs.append(try Data(contentsOf: url.appendingPathComponent(name)))
            }
        }
        for name in (try? FileManager.default.contentsOfDirectory(atPath: repositoryRoot.appendingPathComponent("Fuzz/crashes").path)) ?? [] {
            inputs.append(try Data(contentsOf: repositoryRoot.appendingPathComponent("Fuzz/crashes/\(name)")))
        }
        #expect(inputs.count > 5)
        // The bench answer renders, and identically.
        let books = ResourceConfig.shipped[0]
        #expect(try JSONTranscoder(books).renderList(directusBody: bench) == JSONValueRenderer(books).renderList(directusBody: bench))
        for input in inputs { expectTranscoderAgrees(input) }
    }

    /// A small deterministic fuzzer over the corpus (the libFuzzer target goes much further): byte flips,
    /// insertions of JSON tokens from the dictionary, truncations.
    @Test func agreesWithTheReferenceOnMutations() throws {
        var seeds = [try Data(contentsOf: repositoryRoot.appendingPathComponent("bench/posts-20.json"))]
        let corpus = repositoryRoot.appendingPathComponent("Fuzz/corpus/render")
        for name in (try? FileManager.default.contentsOfDirectory(atPath: corpus.path)) ?? [] {
            seeds.append(try Data(contentsOf: corpus.appendingPathComponent(name)))
        }
        let tokens = ["{", "}", "[", "]", ",", ":", "\"", "\\", "\\u", "\\ud83d", "\\ude80", "null", "1e999", "-0", "0.5",
                      "\"data\"", "\"meta\"", "\"id\"", "\"title\"", "\"content\"", "\"filter_count\"", "\u{e9}", " "]
            .map { Array($0.utf8) } + [[0xC3], [0xED, 0xA0, 0x80], [0xFF], [0x00]]
        var rng = SplitMix64(seed: 0x5EED)
        for round in 0..<1_500 {
            var bytes = [UInt8](seeds[round % seeds.count])
            for _ in 0...(rng.next() % 3) {
                let at = bytes.isEmpty ? 0 : Int(rng.next() % UInt64(bytes.count))
                switch rng.next() % 4 {
                case 0 where !bytes.isEmpty: bytes[at] = UInt8(truncatingIfNeeded: rng.next())
                case 1: bytes.insert(contentsOf: tokens[Int(rng.next() % UInt64(tokens.count))], at: at)
                case 2 where !bytes.isEmpty: bytes.remove(at: at)
                default: bytes = Array(bytes.prefix(at))
                }
            }
            expectTranscoderAgrees(Data(bytes))
        }
    }
}

/// A tiny seeded generator, so that the mutation test is the same on every run.
struct SplitMix64 {
    /// The state.
    var state: UInt64

    /// A generator starting at `seed`.
    init(seed: UInt64) { state = seed }

    /// The next pseudo-random value.
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}
