import Testing
@testable import PosternHTTP

/// `QueryString.parse`, the one pass over a query's bytes: what each query gives, pair by pair.
@Suite struct QueryStringParseTests {
    @Test(arguments: [
        ("a=1&b=x%20y", [("a", "1"), ("b", "x y")]),
        ("a&&b=", [("a", ""), ("b", "")]),
        ("=v", [("", "v")]),
        ("a=b=c", [("a", "b=c")]),
        ("x=%zz%4", [("x", "%zz%4")]),
        ("p=1+2&q=%2B", [("p", "1 2"), ("q", "+")]),
        ("%C3%BC=%FF", [("ü", "\u{FFFD}")]),
        ("&&", []),
        ("k=%41%42&", [("k", "AB")]),
        ("limit=100", [("limit", "100")]),
        ("search=caf%C3%A9%20z%C3%BCrich&fields=a,b", [("search", "café zürich"), ("fields", "a,b")]),
    ] as [(String, [(String, String)])])
    func pairs(query: String, expected: [(String, String)]) {
        let parsed = QueryString.parse(query)
        #expect(parsed.map(\.name) == expected.map(\.0))
        #expect(parsed.map(\.value) == expected.map(\.1))
    }

    @Test func decodeKeepsInvalidEscapesAndReadsPlusAsSpace() {
        #expect(QueryString.decode("a+b%2") == "a b%2")
        #expect(QueryString.decode("%e2%82%ac") == "€")
        #expect(QueryString.decode("") == "")
    }
}
