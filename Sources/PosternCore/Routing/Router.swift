import Foundation

/// One route: a path pattern and a responder per method, built once at start-up.
struct Route: Sendable {
    /// One path segment of a pattern.
    enum Segment: Sendable, Equatable {
        case literal(String)
        case id
    }

    /// The pattern, e.g. `/api/v1/books/{id}` (for logs and metrics).
    let pattern: String
    let segments: [Segment]
    /// The resource name on resource routes.
    let resource: String?
    /// Method → responder, in `Allow` order.
    var methods: [(HTTPMethod, any Responder)]
    /// Answers the methods the route does not have: 405 with `Allow`.
    var otherMethods: any Responder

    init(_ pattern: String, resource: String? = nil, methods: [(HTTPMethod, any Responder)]) {
        self.pattern = pattern
        self.resource = resource
        self.methods = methods
        otherMethods = RenderedErrorResponder(error: .methodNotAllowed(Route.allowedMethods(methods.map(\.0))))
        segments = pattern.split(separator: "/").map { $0 == "{id}" ? .id : .literal(String($0)) }
    }

    /// The responder for `method`; `HEAD` is answered by the `GET` responder (the server sends no body), and
    /// any other method the route does not have by the 405 answer.
    func responder(for method: HTTPMethod) -> any Responder {
        if let responder = methods.first(where: { $0.0 == method })?.1 { return responder }
        if method == .head, let get = methods.first(where: { $0.0 == .get })?.1 { return get }
        return otherMethods
    }

    /// The methods for `Allow`, in order, with `HEAD` after `GET`.
    static func allowedMethods(_ methods: [HTTPMethod]) -> [HTTPMethod] {
        methods.flatMap { $0 == .get && !methods.contains(.head) ? [.get, .head] : [$0] }
    }

    /// The same route with every responder, the 405 answer included, behind `stages`.
    func wrapped(in stages: EdgeStages) -> Route {
        var route = self
        route.methods = methods.map { ($0.0, stages.wrapping($0.1)) }
        route.otherMethods = stages.wrapping(otherMethods)
        return route
    }
}

/// What the router found for a path.
struct RouteMatch: Sendable {
    let route: Route
    /// The percent-decoded `{id}` segment.
    let id: String?
}

/// The route table (immutable after start-up).
struct Router: Sendable {
    private let routes: [Route]

    init(routes: [Route]) {
        self.routes = routes
    }

    /// The route for a raw (percent-encoded) path; one trailing slash is ignored. The path's segments are
    /// the pieces after its first `/` (as `segments(of:).dropFirst()`), walked in place: no array per request.
    func match(path: String) -> RouteMatch? {
        let slash = UInt8(ascii: "/")
        var slashes = 0
        for byte in path.utf8 where byte == slash { slashes += 1 }
        let count = slashes > 0 && path.utf8.last == slash ? slashes - 1 : slashes
        for route in routes where route.segments.count == count {
            var id: String?
            var matched = true
            var pieces = PathPieces(path)
            for segment in route.segments {
                // `count` pieces follow the first `/`, and the route has that many segments.
                guard let piece = pieces.next() else {
                    matched = false
                    break
                }
                switch segment {
                case .literal(let literal):
                    if literal != piece { matched = false }
                case .id:
                    let decoded = QueryString.decodePath(String(piece))
                    if decoded.isEmpty { matched = false }
                    id = decoded
                }
                if !matched { break }
            }
            if matched { return RouteMatch(route: route, id: id) }
        }
        return nil
    }
}

/// The pieces of a path after its first `/`, one per `/`-separated piece (empty ones included), in order.
private struct PathPieces {
    private let path: String
    /// Where the next piece starts; nil once the last piece was returned (or the path has no `/`).
    private var start: String.Index?

    init(_ path: String) {
        self.path = path
        if let first = path.utf8.firstIndex(of: UInt8(ascii: "/")) {
            start = path.utf8.index(after: first)
        }
    }

    /// The next piece, or nil when there is none.
    mutating func next() -> Substring? {
        guard let from = start else { return nil }
        if let end = path.utf8[from...].firstIndex(of: UInt8(ascii: "/")) {
            start = path.utf8.index(after: end)
            return path[from..<end]
        }
        start = nil
        return path[from...]
    }
}

extension Router {
    /// `path` split at every `/` (empty pieces kept, as `split(separator:omittingEmptySubsequences: false)`),
    /// into an array sized once instead of grown piece by piece.
    static func segments(of path: String) -> [Substring] {
        let slash = UInt8(ascii: "/")
        var slashes = 0
        for byte in path.utf8 where byte == slash { slashes += 1 }
        var pieces: [Substring] = []
        pieces.reserveCapacity(slashes + 1)
        var start = path.startIndex
        var index = path.utf8.startIndex
        while index != path.utf8.endIndex {
            if path.utf8[index] == slash {
                pieces.append(path[start..<index])
                start = path.utf8.index(after: index)
            }
            index = path.utf8.index(after: index)
        }
        pieces.append(path[start...])
        return pieces
    }
}

extension QueryString {
    /// Decodes `%XX` escapes in a path segment (`+` stays a plus).
    static func decodePath(_ s: String) -> String {
        decode(s.replacingOccurrences(of: "+", with: "%2B"))
    }
}
