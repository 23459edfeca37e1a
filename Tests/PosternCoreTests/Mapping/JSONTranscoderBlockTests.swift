import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP

/// The transcoder's sixteen-byte paths: strings scanned by blocks, values and keys copied by blocks,
/// `"key":` tokens predicted with their colon, the common fields written inline. Every case is also
/// checked against the reference renderer.
@Suite struct JSONTranscoderBlockTests {
    /// The shipped `books` resource: id, title (required) ← title, subtitle ← content, user ← user_created.
    private let books = JSONTranscoder(ResourceConfig.shipped[0])
    /// Its reference renderer.
    private let reference = JSONValueRenderer(ResourceConfig.shipped[0])

    /// The transcoder and the reference agree on `body`, list and item; returns the transcoder's list.
    @discardableResult
    private func agree(_ body: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) -> RenderOutcome {
        let data = Data(body)
        let fast = RenderOutcome { () throws(GatewayError) in try books.renderList(directusBody: data) }
        let slow = RenderOutcome { () throws(GatewayError) in try reference.renderList(directusBody: data) }
        #expect(fast == slow, "\(String(decoding: body, as: UTF8.self))", sourceLocation: sourceLocation)
        #expect(RenderOutcome { () throws(GatewayError) in try books.renderItem(directusBody: data) }
                == RenderOutcome { () throws(GatewayError) in try reference.renderItem(directusBody: data) },
                "\(String(decoding: body, as: UTF8.self))", sourceLocation: sourceLocation)
        return fast
    }

    @Test func vectorScanFlagsExactlyTheBytesThatEndAPlainRunInEveryLane() {
        // `JSONWord.specials16` (SSE2 or NEON in CJSONScan): the bytes `JSONWord.special` flags in a word.
        for lane in 0..<16 {
            for byte in 0...255 {
                var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: 16)
                bytes[lane] = UInt8(byte)
                // A non-empty array always has a base address.
                let mask = bytes.withUnsafeBufferPointer { JSONWord.specials16($0.baseAddress!) }
                let special = byte == 0x22 || byte == 0x5C || byte < 0x20 || byte > 0x7F
                #expect((mask == 0) == !special, "byte \(byte) in lane \(lane)")
                if special {
                    #expect(JSONWord.firstFlagged16(mask) == lane, "byte \(byte) in lane \(lane)")
                }
            }
        }
        // Two flagged bytes: the first one is found, in either half; unaligned loads too.
        for first in 0..<15 {
            var bytes = [UInt8](repeating: UInt8(ascii: "a"), count: 17)
            bytes[first + 1] = 0x22
            bytes[16] = 0x5C
            // A non-empty array always has a base address.
            let mask = bytes.withUnsafeBufferPointer { JSONWord.specials16($0.baseAddress! + 1) }
            #expect(JSONWord.firstFlagged16(mask) == first)
        }
    }

    @Test(arguments: [#"\""#, #"\\"#, #"\n"#, #"\r"#, #"\t"#, #"\/"#, #"\b"#, #"\f"#, #"\u0009"#, #"\u00e9"#,
                      #"\uD83D\uDE80"#, #"\x"#, #"\u12"#, "\\"])
    func copiesTheEscapesTheReferenceWritesAlikeAndReencodesTheOthers(_ escape: String) {
        // `\"`, `\\`, `\n`, `\r`, `\t` are written by the reference as they are, so the string is
        // copied; the others are decoded and re-encoded; bad ones, and a backslash that ends the
        // input, are refused. At every position of strings of 0 to 40 bytes, in every field.
        for length in 0...40 {
            for position in 0...length {
                var raw = String(repeating: "a", count: length)
                raw.insert(contentsOf: escape, at: raw.index(raw.startIndex, offsetBy: position))
                let body = #"{"data":[{"id":""# + raw + #"","title":""# + raw + #"","content":""# + raw
                    + #"","user_created":""# + raw + #""},{"id":2,"title":""# + raw + #""}]}"#
                agree(Array(body.utf8))
            }
            // The escape's backslash as the last byte of the input, and its letter as well.
            let cut = #"{"data":[{"id":1,"title":""# + String(repeating: "a", count: length) + escape
            agree(Array(cut.utf8))
            agree(Array(cut.utf8).dropLast())
        }
    }

    @Test func validatesRunsOfNonASCIICharactersOneAfterTheOther() {
        // Runs of 1 to 6 characters of every UTF-8 length back to back (validated without going back
        // to the block test between them), then a bad or cut sequence, ASCII, a quote or the end of
        // the input right after the run, at several offsets across the sixteen-byte blocks.
        let characters = ["é", "日", "🚀", "ß"]
        let tails: [[UInt8]] = [[], [0x80], [0xC3], [0xE6, 0x97], [0xF0, 0x9F, 0x9A], [0xED, 0xA0, 0x80],
                                [0xC0, 0xAF], Array("a".utf8), Array(#"\n"#.utf8)]
        for count in 1...6 {
            for first in 0..<characters.count {
                let run = (0..<count).map { characters[($0 + first) % characters.count] }.joined()
                for tail in tails {
                    for offset in [0, 5, 13, 15, 16, 17] {
                        let text = Array(String(repeating: "a", count: offset).utf8) + Array(run.utf8) + tail
                        agree(Array(#"{"data":[{"id":1,"title":""#.utf8) + text + Array(#"","content":"x"}]}"#.utf8))
                        agree(Array(#"{"data":[{"id":1,"title":""#.utf8) + text)
                    }
                }
            }
        }
    }

    @Test func copiesStringsThatMixCharactersAndEscapesAcrossBlocks() {
        // The streamed copy steps over each well-formed character and each escape the reference writes alike and
        // goes back to the sixteen-byte blocks after it: several of them, `gap` ASCII bytes apart, starting at
        // every offset of the first blocks, so that characters and escapes straddle block boundaries. Then what
        // ends the run: the closing quote, ASCII, a bad or cut sequence or a control byte right after a valid
        // character, an escape the reference writes otherwise, or the end of the input. Each in the item's
        // fields and as a title that ends in the input's last sixteen bytes.
        let specials: [[UInt8]] = [Array("é".utf8), Array(#"\""#.utf8), Array("日".utf8), Array(#"\\"#.utf8),
                                   Array("🚀".utf8), Array(#"\t"#.utf8), Array("ß".utf8), Array("—".utf8)]
        let accepted: [[UInt8]] = [[], Array("abc".utf8), Array(#"\u00e9"#.utf8), Array(#"\/"#.utf8)]
        let refused: [[UInt8]] = [[0x80], [0xC3], [0xE6, 0x97], [0xF0, 0x9F, 0x9A], [0xED, 0xA0, 0x80],
                                  [0xF4, 0x90, 0x80, 0x80], [0xF5, 0x80], [0xC0, 0xAF], [0x01], Array(#"\x"#.utf8)]
        for offset in 0...33 {
            for gap in [0, 1, 3, 14, 15, 16, 17] {
                var text = [UInt8](repeating: UInt8(ascii: "a"), count: offset)
                for special in specials {
                    text += special + [UInt8](repeating: UInt8(ascii: "b"), count: gap)
                }
                for tail in accepted + refused {
                    let raw = text + tail
                    let body = Array(#"{"data":[{"id":1,"title":""#.utf8) + raw + Array(#"","content":""#.utf8)
                        + raw + Array(#"","user_created":""#.utf8) + raw + Array(#""},{"id":2,"title":""#.utf8)
                        + raw + Array(#""}],"meta":{"filter_count":2}}"#.utf8)
                    let outcome = agree(body)
                    #expect((outcome == .refused) == refused.contains(tail),
                            "offset \(offset), gap \(gap), tail \(tail)")
                    agree(Array(#"{"data":[{"id":1,"title":""#.utf8) + raw + Array(#""}]}"#.utf8))
                    agree(Array(#"{"data":[{"id":1,"title":""#.utf8) + raw)
                }
            }
        }
    }

    @Test func readsIntegersOfEveryLengthWhereverTheInputEnds() {
        // Ids and required values of 1 to 20 digits, then what may follow a number (`.`, `e`, `E`, a separator,
        // whitespace, a letter) or the end of the input, with 0 to 9 bytes of input after them: the word-wise end of
        // a short integer and the byte-wise one agree with the reference wherever the input's last eight bytes fall.
        for length in 1...20 {
            let digits = String(String(repeating: "9876543210", count: 2).prefix(length))
            for next in [",", "}", " ", ".5", "e3", "E3", "x", ""] {
                for padding in 0...9 {
                    let tail = String(repeating: " ", count: padding)
                    agree(Array((#"{"data":[{"id":"# + digits + next + tail).utf8))
                    agree(Array((#"{"data":[{"id":"# + digits + next + #","title":"# + digits + next + "}]}" + tail).utf8))
                    agree(Array((#"{"data":[{"id":1,"title":"# + digits + next + tail).utf8))
                }
            }
        }
    }

    @Test(arguments: [",", " , ", "\n,\t", ",]", ",,", ", 1", #","x""#, ",[]", "", " ", "}", ",{}", ", {\"id\":true}",
                      " ]", "] ", "]x"])
    func readsWhatStandsBetweenStreamedItemsAsTheReference(_ between: String) {
        // The list's items are streamed in one loop, which reads the separators itself: what may stand between two
        // items (or after the last one, at the end of the input) is accepted or refused as the reference does.
        let item = #"{"id":1,"title":"t","content":"c","user_created":"u"}"#
        for count in 1...3 {
            let items = Array(repeating: item, count: count).joined(separator: between)
            agree(Array((#"{"data":["# + items + between + #"{"id":9,"title":"last"}]}"#).utf8))
            agree(Array((#"{"data":["# + items + between).utf8))
            agree(Array((#"{"data":["# + items + between + "]}").utf8))
        }
    }

    @Test func writesCommonFieldsAfterRareOnesWhileTheOutputGrows() {
        // The item's room is reserved once; a rare field (written through the general path, which
        // may grow the buffer) comes first, long common ones after it, in items far larger than the
        // first reserve, so that the buffer moves between fields.
        let long = String(repeating: "L", count: 300)
        for id in [#""\u0041""#, "1.0", "-3", #""\/x""#] {
            for title in [#""\b""#, "true", "2e1", #""t\u00e9""#] {
                let item = #"{"id":"# + id + #","title":"# + title + #","content":""# + long
                    + #"","user_created":""# + long + #""}"#
                agree(Array((#"{"data":["# + Array(repeating: item, count: 8).joined(separator: ",") + "]}").utf8))
            }
        }
    }

    @Test(arguments: [Array(#"\""#.utf8), Array(#"\b"#.utf8), Array(#"\u00e9"#.utf8), Array("é".utf8),
                      Array("日".utf8), Array("🚀".utf8), [0x7F], [0x01], [0xE2, 0x82]] as [[UInt8]])
    func scansStringsOfEveryLengthWithASpecialByteAtEveryPosition(_ special: [UInt8]) {
        // Lengths 0 to 70 cover one to five blocks and every tail; the same string in the required
        // title, the optional subtitle, the user and the id (each written by its own path).
        for length in 0...70 {
            for position in 0...length {
                var raw = [UInt8](repeating: UInt8(ascii: "a"), count: length)
                raw.insert(contentsOf: special, at: position)
                let body = Array(#"{"data":[{"id":""#.utf8) + raw + Array(#"","title":""#.utf8) + raw
                    + Array(#"","content":""#.utf8) + raw + Array(#"","user_created":""#.utf8) + raw
                    + Array(#""},{"id":2,"title":""#.utf8) + raw + Array(#""}]}"#.utf8)
                let outcome = agree(body)
                if special == [0x01] || special == [0xE2, 0x82] {
                    #expect(outcome == .refused, "length \(length), position \(position)")
                } else {
                    #expect(outcome != .refused, "length \(length), position \(position)")
                }
            }
            // The plain string alone, and unterminated at every length.
            let plain = String(repeating: "p", count: length)
            #expect(agree(Array(#"{"data":[{"id":1,"title":""#.utf8) + Array(plain.utf8) + Array(#""}]}"#.utf8))
                    == .body(Data((#"{"books":[{"id":"1","title":""# + plain + #""}],"total":1}"#).utf8)))
            #expect(agree(Array(#"{"data":[{"id":1,"title":""#.utf8) + Array(plain.utf8)) == .refused)
        }
    }

    @Test func copiesValuesThatEndInTheLastSixteenBytesOfTheInput() {
        // Trailing whitespace from 0 to 20 bytes moves every value's end across the point where the
        // block copy would read past the input, so that both copies are used.
        for padding in 0...20 {
            for length in [0, 1, 7, 8, 15, 16, 17, 31, 33] {
                let text = String(repeating: "v", count: length)
                let body = #"{"data":{"id":7,"title":""# + text + #"","content":""# + text + #"","user_created":null}}"#
                    + String(repeating: " ", count: padding)
                let out = try? books.renderItem(directusBody: Data(body.utf8))
                #expect(out.map { String(decoding: $0, as: UTF8.self) }
                        == #"{"books":[{"id":"7","title":""# + text + #"","subtitle":""# + text + #""}],"total":1}"#,
                        "padding \(padding), length \(length)")
                agree(Array(body.utf8))
                // A number and a literal last, too.
                agree(Array((#"{"data":{"title":""# + text + #"","user_created":true,"id":123456789}}"#
                             + String(repeating: "\n", count: padding)).utf8))
            }
        }
    }

    @Test func predictsKeysWithTheirColonOnlyWhenTheColonFollows() throws {
        // Keys whose `"key":` is 14, 16 and 17 bytes (the last one is never predicted), spaced and
        // unspaced colons alternating between items, and a key that is a prefix of the remembered one.
        let resource = ResourceConfig(name: "things", collection: "things",
                                      fields: [("id", "id"), ("a", "key_of_ten_"), ("b", "key_of_eleven"),
                                               ("c", "key_of_twelve_")])
        let items = [
            #"{"id":1,"key_of_ten_":1,"key_of_eleven":2,"key_of_twelve_":3}"#,
            #"{"id":2,"key_of_ten_" :1,"key_of_eleven":2,"key_of_twelve_":3}"#,
            #"{"id":3,"key_of_ten_":1,"key_of_eleven" : 2,"key_of_twelve_":3}"#,
            #"{"id" :4,"key_of_ten":9,"key_of_ten_":1,"key_of_eleven":2,"key_of_twelve_":3}"#,
            #"{"id":5,"key_of_ten_":1,"key_of_eleven":2,"key_of_twelve_":3}"#,
            #"{"id":6,"key_of_ten_":"x","key_of_eleven":null,"key_of_twelve_":[1, 2]}"#,
        ]
        let body = #"{"data":["# + items.joined(separator: ",") + #"]}"#
        let out = String(decoding: try JSONTranscoder(resource).renderList(directusBody: Data(body.utf8)), as: UTF8.self)
        #expect(out == #"{"things":[{"id":"1","a":1,"b":2,"c":3},{"id":"2","a":1,"b":2,"c":3},"#
            + #"{"id":"3","a":1,"b":2,"c":3},{"id":"4","a":1,"b":2,"c":3},{"id":"5","a":1,"b":2,"c":3},"#
            + #"{"id":"6","a":"x","c":[1,2]}],"total":6}"#)
        let slow = try JSONValueRenderer(resource).renderList(directusBody: Data(body.utf8))
        #expect(out == String(decoding: slow, as: UTF8.self))
    }

    @Test func writesIntegerIDsAndRequiredFieldsAsTheReferenceDoes() throws {
        // Non-negative plain integers take the inline path; negative ones, -0, long ones, fractions,
        // exponents and booleans the general one.
        let values = ["0", "7", "123456789012345678", "1234567890123456789", "-0", "-5", "1.0", "1e2", "-1.5e1",
                      "true", "false", "null", #""""#, #""s""#, #""\u0041""#]
        for id in values {
            for title in values {
                agree(Array((#"{"data":[{"id":"# + id + #","title":"# + title + #","content":"# + title + "}]}").utf8))
            }
        }
        let out = try books.renderList(directusBody: Data(#"{"data":[{"id":12,"title":-0},{"id":3,"title":40}]}"#.utf8))
        #expect(String(decoding: out, as: UTF8.self)
                == #"{"books":[{"id":"12","title":"0"},{"id":"3","title":"40"}],"total":2}"#)
    }

    @Test func guessesTheFirstItemsKeysFromTheConfigOrderAndRecoversFromWrongGuesses() throws {
        // Each render starts by guessing that the first item's members are the Directus names in
        // config order. Names whose token is exactly 16 bytes (guessed), 17 bytes, with an escaped
        // quote or non-ASCII text (not guessed); first items in config order, reversed, with one
        // member missing, with an extra member first, and with spaces before the colon.
        let names = ["id", "thirteen_char", "fourteen_chars", #"q"x"#, "é"]
        let resource = ResourceConfig(name: "guess", collection: "guess",
                                      fields: names.enumerated().map { ("f\($0.offset)", .path($0.element)) })
        let tokens = names.enumerated().map { index, name -> String in
            var key: [UInt8] = []
            JSONValue.writeString(name, into: &key)
            return String(decoding: key, as: UTF8.self) + ":" + String(index)
        }
        let firsts = [tokens, tokens.reversed(), Array(tokens.dropFirst(2)), [#""other":0"#] + tokens,
                      tokens.map { $0.replacingOccurrences(of: #"":"#, with: #"" :"#) }]
        for first in firsts {
            let body = #"{"data":[{"# + first.joined(separator: ",") + "},{" + tokens.joined(separator: ",") + "}]}"
            let fast = try JSONTranscoder(resource).renderList(directusBody: Data(body.utf8))
            let slow = try JSONValueRenderer(resource).renderList(directusBody: Data(body.utf8))
            #expect(String(decoding: fast, as: UTF8.self) == String(decoding: slow, as: UTF8.self), "\(body)")
        }
        // The guesses for `"id":` and `"thirteen_char":` (a 16-byte token) are taken in the only
        // item, and give the right fields.
        let out = try JSONTranscoder(resource).renderItem(directusBody: Data(#"{"data":{"id":5,"thirteen_char":"t"}}"#.utf8))
        #expect(String(decoding: out, as: UTF8.self) == #"{"guess":[{"f0":5,"f1":"t"}],"total":1}"#)
    }

    @Test func feedsOneDirectusFieldToSeveralFields() throws {
        // A Directus name mapped twice goes through the name's field list, not the one-field shortcut.
        let resource = ResourceConfig(name: "twice", collection: "twice",
                                      fields: [("id", "id"), ("a", "x"), ("b", "y"), ("c", "x")])
        let body = #"{"data":[{"id":1,"x":"one","y":2,"x":"dup"},{"id":2,"y":3},{"x":null,"id":3,"x":4}]}"#
        let out = String(decoding: try JSONTranscoder(resource).renderList(directusBody: Data(body.utf8)), as: UTF8.self)
        #expect(out == #"{"twice":[{"id":"1","a":"one","b":2,"c":"one"},{"id":"2","b":3},{"id":"3"}],"total":3}"#)
        let slow = try JSONValueRenderer(resource).renderList(directusBody: Data(body.utf8))
        #expect(out == String(decoding: slow, as: UTF8.self))
    }
}

/// Items written while they are scanned (`TranscodePass.streamItem`): members in config order, and every way an
/// item leaves that path (a key ahead of its turn, a value of a rare shape, a missing id) at every item of an
/// answer, each checked against the reference.
@Suite struct JSONTranscoderStreamTests {
    /// Members in config order (id, title, content, user_created) with an unmapped one last, as Directus sends them.
    private static let inOrder = #"{"id":1,"title":"T","content":"C","user_created":"u","date_created":"d"}"#

    @Test(arguments: [
        #"{"title":"T","id":2,"content":"C"}"#,                      // a key ahead of its turn
        #"{"id":3,"content":"C","title":"T"}"#,                      // a required field after a later one
        #"{"id":4,"title":"T","user_created":"u"}"#,                 // an optional field missing between two
        #"{"id":5,"title":null,"content":null,"user_created":null}"#, // nulls: "" and left out
        #"{"id":6}"#,                                                // all but the id missing
        #"{"title":"T"}"#,                                           // no id
        #"{"id":null,"title":"T"}"#,                                 // a null id
        #"{"id":"","title":"T"}"#,                                   // an empty id
        #"{"id":-7,"title":0,"content":-0,"user_created":1.5}"#,     // numbers the inline path leaves
        #"{"id":123456789012345678,"title":9,"content":10,"user_created":99}"#, // plain integers: 18 digits
        #"{"id":1234567890123456789,"title":"T"}"#,                   // 19 digits: the number scanner's
        #"{"id":12.5,"title":"T"}"#,                                 // a fraction after the digits
        #"{"id":12e3,"title":"T"}"#,                                 // an exponent after the digits
        #"{"id":12E3,"title":"T"}"#,
        #"{"id":1,"title":2,"content":3.0}"#,                        // a plain integer, then a fraction
        #"{"id":1 ,"title":22 ,"content":333 }"#,                    // spaces after plain integers
        #"{"id":1,"title":1x}"#,                                     // a plain integer, then junk
        #"{"id":01,"title":"T"}"#,                                   // a leading zero
        #"{"id":8,"title":"a\/b","content":"\u00e9\n","user_created":"é"}"#, // escapes and UTF-8
        #"{"id":9,"title":"T","title":"again","id":10,"content":"C","content":"D"}"#, // first occurrence wins
        #"{"x":[1,{"y":"}"}],"id":11,"z":null,"title":"T","content":true}"#, // unmapped members between
        #"{}"#,
    ])
    func agreesWithTheReferenceWhereverAnItemLeavesTheStream(_ odd: String) throws {
        let books = ResourceConfig.shipped[0]
        for at in 0..<3 {
            var items = Array(repeating: Self.inOrder, count: 3)
            items[at] = odd
            for body in [#"{"data":["# + items.joined(separator: ",") + #"]}"#, #"{"data":"# + odd + "}"] {
                expectTranscoderAgrees(Data(body.utf8))
                let fast = RenderOutcome { () throws(GatewayError) in
                    try JSONTranscoder(books).renderList(directusBody: Data(body.utf8))
                }
                let slow = RenderOutcome { () throws(GatewayError) in
                    try JSONValueRenderer(books).renderList(directusBody: Data(body.utf8))
                }
                #expect(fast == slow, "\(body)")
            }
        }
    }

    /// Two items that leave the stream, at every pair of positions of an answer: the first leaves it for itself
    /// only, the second for the rest of the answer.
    @Test(arguments: [
        (#"{"title":"T","id":2}"#, #"{"id":3,"title":true}"#),
        (#"{"id":4,"title":"\u0041"}"#, #"{"id":"","title":"T"}"#),
        (#"{"id":5,"content":"C","title":"T"}"#, #"{"id":5,"content":"C","title":"T"}"#),
    ])
    func agreesWithTheReferenceAroundTwoItemsThatLeaveTheStream(_ odd: (String, String)) throws {
        for first in 0..<5 {
            for second in (first + 1)..<5 {
                var items = Array(repeating: Self.inOrder, count: 5)
                items[first] = odd.0
                items[second] = odd.1
                Self.expectAgrees(items, cutAt: second, through: 2)
            }
        }
    }

    /// Each member is guessed from how the same member of the earlier items began: its `{` or `,` and `"key":`, or
    /// the item's `}`. Items that begin a member otherwise, after items that set the guesses, at each position of
    /// the answer and cut at every byte.
    @Test(arguments: [
        #"{"id":1, "title":"T","content":"C","user_created":"u","date_created":"d"}"#,  // space after a comma
        #"{"id":1 ,"title":"T","content":"C","user_created":"u","date_created":"d"}"#,  // space before a comma
        #"{ "id":1,"title":"T","content":"C","user_created":"u","date_created":"d"}"#,  // space after the brace
        #"{"id":1,"title":"T","content":"C","user_created":"u","date_created":"d" }"#,  // space before the end
        #"{"id":1,"title":"T","content":"C","user_created":"u"}"#,                      // ends a member early
        #"{"id":1,"title":"T","content":"C","user_created":"u","date_created":"d","x":0}"#, // one member more
        #"{"id":1,"title":"T","content":"C","user_created":"u","date_created":"d"{"id":2}"#, // a brace for a comma
        #"{"id":1,"title":"T","content":"C","user_created":"u","date_created":"d","id":2"#, // no end
        #"{"id":1,"title":"T","content":"C","user_created":"u","date_created":"d"]"#,   // a bracket for the brace
        "{\"id\":1,\"title\":\"T\"\u{0},\"content\":\"C\"}",                          // a NUL byte for a comma
        "{\"id\":1,\u{0}\"title\":\"T\"}",                                                // a NUL byte for a key
        #"{"id":1,"ti\u0074le":"T","content":"C","user_created":"u","date_created":"d"}"#, // an escaped key
        #"{"id":1,"title" :"T","content":"C","user_created":"u","date_created":"d"}"#,  // a space before a colon
        #"{"id":1,"title": "T","content":"C","user_created":"u","date_created":"d"}"#,  // a space after a colon
        #"{"id":1,"title":"T","content":"C","user_created":"u","date_creatdraw":"d"}"#, // a key of the same length
        #"{"id":1,"title":"T","content":"C","user_created":"u","date_created":"d","a":1,"b":2,"c":3,"d":4,"e":5,"# +
            #""f":6,"g":7,"h":8,"i":9,"j":10,"k":11,"l":12,"m":13}"#,                   // more members than guesses
        #"{}"#,
    ])
    func agreesWithTheReferenceWhereverAMemberBeginsOtherwise(_ odd: String) throws {
        for at in 1..<4 {
            var items = Array(repeating: Self.inOrder, count: 4)
            items[at] = odd
            // The same item twice: the second is read with the guesses the first left.
            items.insert(odd, at: at)
            Self.expectAgrees(items, cutAt: at, through: 3)
        }
    }

    /// The list answer of `items` (with a `meta`) against the reference: whole, and cut at every byte of the
    /// `count` items from item `at` on.
    private static func expectAgrees(_ items: [String], cutAt at: Int, through count: Int,
                                     sourceLocation: SourceLocation = #_sourceLocation) {
        let body = #"{"data":["# + items.joined(separator: ",") + #"],"meta":{"filter_count":9}}"#
        expectTranscoderAgrees(Data(body.utf8), sourceLocation: sourceLocation)
        let prefix = #"{"data":["# + items.prefix(at).joined(separator: ",") + ","
        let tail = items[at...].prefix(count).joined(separator: ",")
        for n in 0...tail.utf8.count {
            expectTranscoderAgrees(Data((prefix + String(decoding: tail.utf8.prefix(n), as: UTF8.self)).utf8),
                                   sourceLocation: sourceLocation)
        }
    }

    @Test func writesInOrderItemsAsTheReference() throws {
        let books = ResourceConfig.shipped[0]
        let body = #"{"data":["# + Array(repeating: Self.inOrder, count: 2).joined(separator: " , ") + #"]}"#
        let out = try JSONTranscoder(books).renderList(directusBody: Data(body.utf8))
        #expect(String(decoding: out, as: UTF8.self) == #"{"books":[{"id":"1","title":"T","subtitle":"C","user":"u"},"#
                + #"{"id":"1","title":"T","subtitle":"C","user":"u"}],"total":2}"#)
        // Cut at every byte: refused exactly where the reference refuses.
        for n in 0...body.utf8.count { expectTranscoderAgrees(Data(body.utf8.prefix(n))) }
    }
}
