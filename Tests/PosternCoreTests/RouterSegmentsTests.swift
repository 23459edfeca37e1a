import Foundation
import Testing
@testable import PosternCore

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
}
