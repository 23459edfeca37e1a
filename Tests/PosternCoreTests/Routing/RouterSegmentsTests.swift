import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP

/// The router's path splitting and the header list's cheap edits keep their old results.
@Suite struct RouterSegmentsTests {
    @Test(arguments: ["", "/", "/api/v1/books", "/api/v1/books/", "//a//b/", "/api/v1/books/%C3%A9", "/é/ü/x", "no-slash"])
    func segmentsMatchSplit(_ path: String) {
        #expect(Router.segments(of: path) == path.split(separator: "/", omittingEmptySubsequences: false))
    }

    @Test func setReplacesEveryFieldOfTheNameAndLeavesTheRest() {
        var headers: HTTPHeaders = ["A": "1", "x-cache": "MISS", "B": "2"]
        headers.add("X-Cache", "again")
        let shared = headers
        headers.reserve(3)
        headers.set("X-Cache", "HIT")
        headers.set("C", "3")
        #expect(headers.fields.map { "\($0.name)=\($0.value)" } == ["A=1", "B=2", "X-Cache=HIT", "C=3"])
        #expect(shared.values("x-cache") == ["MISS", "again"], "a copy sharing the list is unchanged")
    }

    /// A path spelt as a pattern without `{id}` is found with one lookup; the answer is the walk's, so an
    /// earlier `{id}` route still takes it, and other spellings (a trailing slash) still match.
    @Test func exactPathsAnswerAsTheWalkDoes() {
        let answer = Endpoint(answering: .notFound("x"))
        let idFirst = Router(routes: [Route("/a/{id}", methods: [(.get, answer)]), Route("/a/b", methods: [(.get, answer)])])
        #expect(idFirst.match(path: "/a/b")?.route.pattern == "/a/{id}")
        #expect(idFirst.match(path: "/a/b")?.id == "b")
        let literalFirst = Router(routes: [Route("/a/b", methods: [(.get, answer)]), Route("/a/{id}", methods: [(.get, answer)])])
        #expect(literalFirst.match(path: "/a/b")?.route.pattern == "/a/b")
        #expect(literalFirst.match(path: "/a/b")?.id == nil)
        #expect(literalFirst.match(path: "/a/b/")?.route.pattern == "/a/b")
        #expect(literalFirst.match(path: "/a/c")?.id == "c")
        #expect(literalFirst.match(path: "/a") == nil)
    }

    /// Exact paths are compared by bytes only when that gives `String` equality's answer: among several of one
    /// length, each finds its own route; a path that is not ASCII (here one canonically equivalent to an ASCII
    /// pattern) and a pattern that is not ASCII are still found as `String`s.
    @Test func exactPathsByBytesAgreeWithStringEquality() {
        let answer = Endpoint(answering: .notFound("x"))
        let ascii = Router(routes: [Route("/a/bc", methods: [(.get, answer)]), Route("/a/bd", methods: [(.get, answer)]),
                                    Route("/Kx", methods: [(.get, answer)])])
        #expect(ascii.match(path: "/a/bc")?.route.pattern == "/a/bc")
        #expect(ascii.match(path: "/a/bd")?.route.pattern == "/a/bd")
        #expect(ascii.match(path: "/a/be") == nil)
        #expect(ascii.match(path: "/Kx")?.route.pattern == "/Kx")
        // U+212A KELVIN SIGN is canonically equivalent to `K`.
        #expect(ascii.match(path: "/\u{212A}x")?.route.pattern == "/Kx")
        let unicode = Router(routes: [Route("/\u{212A}x", methods: [(.get, answer)]), Route("/é", methods: [(.get, answer)])])
        #expect(unicode.match(path: "/Kx")?.route.pattern == "/\u{212A}x")
        #expect(unicode.match(path: "/é")?.route.pattern == "/é")
        #expect(unicode.match(path: "/e\u{301}")?.route.pattern == "/é")
    }
}
