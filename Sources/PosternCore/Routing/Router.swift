import FoundationEssentials
import Glibc
import PosternHTTP
import PosternIO

/// One route: a path pattern and a responder per method, built once at start-up.
final class Route: Sendable {
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
    /// Method → endpoint, in `Allow` order.
    let methods: [(HTTPMethod, Endpoint)]
    /// Answers the methods the route does not have: 405 with `Allow`.
    let otherMethods: Endpoint

    init(_ pattern: String, resource: String? = nil, methods: [(HTTPMethod, Endpoint)]) {
        self.pattern = pattern
        self.resource = resource
        self.methods = methods
        otherMethods = Endpoint(answering: .methodNotAllowed(Route.allowedMethods(methods.map(\.0))))
        // `{id}`, or a composite's `{name}`: a parameter segment.
        segments = pattern.split(separator: "/").map {
            $0.count > 2 && $0.first == "{" && $0.last == "}" ? .id : .literal(String($0))
        }
    }

    /// The endpoint for `method`; `HEAD` is answered by the `GET` endpoint (the server sends no body), and
    /// any other method the route does not have by the 405 answer.
    func responder(for method: HTTPMethod) -> Endpoint {
        if let responder = methods.first(where: { $0.0 == method })?.1 { return responder }
        if method == .head, let get = methods.first(where: { $0.0 == .get })?.1 { return get }
        return otherMethods
    }

    /// The methods for `Allow`, in order, with `HEAD` after `GET`.
    static func allowedMethods(_ methods: [HTTPMethod]) -> [HTTPMethod] {
        methods.flatMap { $0 == .get && !methods.contains(.head) ? [.get, .head] : [$0] }
    }
}

/// What the router found for a path.
struct RouteMatch: Sendable {
    let route: Route
    /// The percent-decoded `{id}` segment.
    let id: String?
}

/// ASCII paths in one buffer, each with the route index it stands for (`Router.exactBytes`).
private struct ExactPaths: Sendable {
    /// The paths' bytes, one after another.
    private let bytes: [UInt8]
    /// Each path's place in `bytes` and its route index.
    private let entries: [(start: Int, count: Int, index: Int)]

    init(_ paths: [(key: String, value: Int)]) {
        var bytes: [UInt8] = []
        var entries: [(start: Int, count: Int, index: Int)] = []
        for (path, index) in paths {
            entries.append((bytes.count, path.utf8.count, index))
            bytes += path.utf8
        }
        self.bytes = bytes
        self.entries = entries
    }

    /// `.some(index)` of the path `path` spells, `.some(nil)` for an ASCII path that is none of them, nil for a
    /// path that is not ASCII (the caller asks the dictionary).
    func index(of path: UnsafeBufferPointer<UInt8>) -> Int?? {
        guard let base = path.baseAddress else { return .some(nil) }
        for byte in path where byte >= 0x80 { return nil }
        return bytes.withUnsafeBufferPointer { all in
            for entry in entries where entry.count == path.count {
                if memcmp(all.baseAddress! + entry.start, base, path.count) == 0 { return .some(entry.index) }  // not empty: count > 0
            }
            return .some(nil)
        }
    }
}

/// The route table (immutable after start-up). A class: a generation's routers are read where they are held, not
/// copied out of the route table per request (a copy of a struct retained and released each of its parts).
final class Router: Sendable {
    private let routes: [Route]
    /// Each route's segments, by route index (read without copying a whole `Route` per candidate).
    private let patterns: [[Route.Segment]]
    /// The same segments as byte ranges, for matching an ASCII path without a `String` operation.
    private let table: SegmentTable
    /// What `match` answers for each pattern without `{id}` given as the path itself (the usual paths), found
    /// by `exactBytes` or with one hash lookup.
    private let exact: [String: Int]
    /// The keys of `exact` as bytes, when every one is ASCII (nil otherwise): an ASCII path equals an ASCII
    /// pattern only byte for byte, so a few length compares and one `memcmp` find it, where the dictionary
    /// hashes the path (a path that is not ASCII still goes to the dictionary: `String` equality is canonical
    /// equivalence there).
    private let exactBytes: ExactPaths?

    init(routes: [Route]) {
        let walk = Router(walking: routes)
        var exact: [String: Int] = [:]
        for (index, route) in routes.enumerated() where !route.segments.contains(.id) {
            // Only where the walk answers this route for that path (an earlier `{id}` route may take it).
            if let found = walk.walkedMatch(path: route.pattern), found.route === route, found.id == nil {
                exact[route.pattern] = index
            }
        }
        self.routes = routes
        patterns = walk.patterns
        table = walk.table
        self.exact = exact
        exactBytes = exact.keys.allSatisfy({ $0.utf8.allSatisfy { $0 < 0x80 } })
            ? ExactPaths(exact.sorted { $0.value < $1.value }) : nil
    }

    /// A router that only walks (no exact paths): what `init(routes:)` asks which route a pattern's own path finds.
    private init(walking routes: [Route]) {
        self.routes = routes
        patterns = routes.map(\.segments)
        table = SegmentTable(patterns)
        exact = [:]
        exactBytes = nil
    }

    /// The route for a raw (percent-encoded) path; one trailing slash is ignored. The path's segments are
    /// the pieces after its first `/` (as `segments(of:).dropFirst()`), walked in place: no array per request.
    func match(path: String) -> RouteMatch? {
        if let index = exactIndex(path) { return RouteMatch(route: routes[index], id: nil) }
        return walkedMatch(path: path)
    }

    /// The index `exact` gives `path`, found by bytes when it can (`exactBytes`).
    private func exactIndex(_ path: String) -> Int? {
        if let exactBytes, let found = path.utf8.withContiguousStorageIfAvailable({ exactBytes.index(of: $0) }), let found {
            return found
        }
        return exact[path]
    }

    /// `match` by walking the path's segments against every route's.
    private func walkedMatch(path: String) -> RouteMatch? {
        var text = path
        let fast: (index: Int, id: String?)?? = text.withUTF8 { utf8 in
            // An ASCII path is only ever equivalent to the same bytes: compare bytes (else as `String`s, below).
            guard !utf8.contains(where: { $0 >= 0x80 }) else { return nil }
            return .some(table.match(utf8, patterns: patterns))
        }
        if let fast {
            guard let found = fast else { return nil }
            return RouteMatch(route: routes[found.index], id: found.id)
        }
        let slash = UInt8(ascii: "/")
        var slashes = 0
        for byte in path.utf8 where byte == slash { slashes += 1 }
        let count = slashes > 0 && path.utf8.last == slash ? slashes - 1 : slashes
        for index in patterns.indices where patterns[index].count == count {
            var id: String?
            var matched = true
            var pieces = PathPieces(path)
            for segment in patterns[index] {
                // `count` pieces follow the first `/`, and the route has that many segments.
                guard let piece = pieces.next() else {
                    matched = false
                    break
                }
                switch segment {
                case .literal(let literal):
                    if !Router.same(literal, piece) { matched = false }
                case .id:
                    let decoded = QueryString.decodePath(String(piece))
                    if decoded.isEmpty { matched = false }
                    id = decoded
                }
                if !matched { break }
            }
            if matched { return RouteMatch(route: routes[index], id: id) }
        }
        return nil
    }

    /// `literal == piece` as `String` compares them (canonical equivalence), by bytes unless they differ and
    /// one is not ASCII: equal bytes are equal text, and an ASCII string is only ever equivalent to itself.
    static func same(_ literal: String, _ piece: Substring) -> Bool {
        if literal.utf8.elementsEqual(piece.utf8) { return true }
        guard literal.utf8.contains(where: { $0 >= 0x80 }) || piece.utf8.contains(where: { $0 >= 0x80 }) else { return false }
        return literal == piece
    }
}

/// Every route's segments as ranges of one byte buffer, route after route: matching an ASCII path reads
/// three flat arrays and the path's bytes, with no retain and no `String` comparison.
private struct SegmentTable: Sendable {
    /// One segment: a literal's bytes in `bytes` (and whether they are ASCII), or the `{id}` parameter.
    struct Entry: Sendable {
        var start: Int
        var count: Int
        var isID: Bool
        var isASCII: Bool
    }

    /// The literal segments' bytes, back to back.
    private let bytes: [UInt8]
    /// Every route's segments, in route order.
    private let entries: [Entry]
    /// Per route: its first entry and its number of segments.
    private let spans: [(first: Int, count: Int)]

    init(_ patterns: [[Route.Segment]]) {
        var bytes: [UInt8] = []
        var entries: [Entry] = []
        var spans: [(first: Int, count: Int)] = []
        for segments in patterns {
            spans.append((entries.count, segments.count))
            for segment in segments {
                switch segment {
                case .id:
                    entries.append(Entry(start: 0, count: 0, isID: true, isASCII: true))
                case .literal(let literal):
                    entries.append(Entry(start: bytes.count, count: literal.utf8.count, isID: false,
                                         isASCII: literal.utf8.allSatisfy { $0 < 0x80 }))
                    bytes.append(contentsOf: literal.utf8)
                }
            }
        }
        self.bytes = bytes
        self.entries = entries
        self.spans = spans
    }

    /// The first route whose segments match the pieces of `path` (ASCII bytes), with its decoded `{id}`.
    /// `patterns` answers for a literal that is not ASCII (compared as text).
    func match(_ path: UnsafeBufferPointer<UInt8>, patterns: [[Route.Segment]]) -> (index: Int, id: String?)? {
        let slash = UInt8(ascii: "/")
        var slashes = 0
        for byte in path where byte == slash { slashes += 1 }
        guard slashes > 0, let first = path.firstIndex(of: slash) else { return spans.firstIndex { $0.count == 0 }.map { ($0, nil) } }
        let count = path.last == slash ? slashes - 1 : slashes
        return bytes.withUnsafeBufferPointer { literals in
            for (index, span) in spans.enumerated() where span.count == count {
                var id: String?
                var matched = true
                var start = first + 1
                for k in 0..<span.count {
                    var end = start
                    while end < path.count && path[end] != slash { end += 1 }
                    let piece = UnsafeBufferPointer(rebasing: path[start..<end])
                    let entry = entries[span.first + k]
                    if entry.isID {
                        let decoded = QueryString.decodePath(String(decoding: piece, as: UTF8.self))
                        if decoded.isEmpty { matched = false }
                        id = decoded
                    } else if entry.count != piece.count
                                || !UnsafeBufferPointer(rebasing: literals[entry.start..<entry.start + entry.count]).elementsEqual(piece) {
                        // Different bytes; a literal that is not ASCII may still be equivalent text.
                        if entry.isASCII {
                            matched = false
                        } else if case .literal(let literal) = patterns[index][k],
                                  literal == String(decoding: piece, as: UTF8.self) {
                            matched = true
                        } else {
                            matched = false
                        }
                    }
                    if !matched { break }
                    start = end + 1
                }
                if matched { return (index, id) }
            }
            return nil
        }
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
        decode(s.replacingBytes(of: "+", with: "%2B"))
    }
}
