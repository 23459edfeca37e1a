/// What one cached answer is filed under: the resource, the translated upstream call, and who may share it
/// (docs/api.md, Micro-cache).
///
/// The parts are kept as they are (the upstream path, its query pairs, the user or role id) and compared part by
/// part: building a key allocates nothing, where joining them into one text would. They are hashed once, when
/// the key is built, with the process's seeded hasher (as a `Dictionary` would: the query is the caller's, so the
/// hash must stay unpredictable); the shard choice and the shard's table both use that value.
struct CacheKey: Hashable, Sendable {
    /// Who shares an answer.
    enum Audience: Hashable, Sendable {
        /// Every anonymous caller.
        case anonymous
        /// One user (by Directus user id).
        case user(String)
        /// Every user of one Directus role (by role id).
        case role(String)
        /// An audience given as text (`init(resource:upstream:audience:)`).
        case text(String)

        /// The audience as text: `u:<user id>`, `r:<role id>` or `anonymous`.
        var description: String {
            switch self {
            case .anonymous: return "anonymous"
            case .user(let id): return "u:" + id
            case .role(let id): return "r:" + id
            case .text(let text): return text
            }
        }

        /// The audience of a caller: anonymous callers share one; `role` scope shares by Directus role unless
        /// `perUser` (an owner-narrowed list) or the session has no known role.
        init(session: Session?, scope: CacheScope, perUser: Bool) {
            // Through the optional's fields: binding the session would copy it (a retain of each of its parts).
            guard let userID = session?.userID else {
                self = .anonymous
                return
            }
            if scope == .role, !perUser, let role = session?.role {
                self = .role(role)
            } else {
                self = .user(userID)
            }
        }

        /// The audience of its text form (`anonymous`, `u:…`, `r:…`), so that both forms name one audience.
        init(text: String) {
            if text == "anonymous" {
                self = .anonymous
            } else if text.utf8.starts(with: "u:".utf8) {
                self = .user(String(text.utf8.dropFirst(2)) ?? "")
            } else if text.utf8.starts(with: "r:".utf8) {
                self = .role(String(text.utf8.dropFirst(2)) ?? "")
            } else {
                self = .text(text)
            }
        }
    }

    /// The resource, upstream path and query (one reference: copying a key retains it and the audience only).
    private let call: Prefix
    /// Who shares the answer.
    let sharedBy: Audience
    /// The seeded hash of every part (`hashUpstream`, then the audience), computed once.
    let digest: Int

    /// The resource name (two resources over one collection never share an answer: their bodies differ).
    var resource: String { call.resource }
    /// The upstream path (or the whole upstream text of `init(resource:upstream:audience:)`).
    private var path: String { call.path }
    /// The upstream query pairs, exactly as translated for Directus.
    private var query: [(String, String)] { call.query }

    /// Builds a key from its parts; `upstream` is the whole upstream call as text.
    init(resource: String, upstream: String, audience: String) {
        self.init(resource: resource, path: upstream, query: [], sharedBy: Audience(text: audience))
    }

    /// The key of an upstream call: `path` and its query items, each compared on its own, so that no two
    /// different queries make the same key.
    init(resource: String, path: String, query: [(String, String)], audience: String) {
        self.init(resource: resource, path: path, query: query, sharedBy: Audience(text: audience))
    }

    /// The key of an upstream call for an audience.
    init(resource: String, path: String, query: [(String, String)], sharedBy: Audience) {
        self.init(Prefix(resource: resource, path: path, query: query), sharedBy: sharedBy)
    }

    /// The key of `prefix`'s upstream call for an audience: the prefix's hash state taken on (the same value as
    /// hashing every part again).
    init(_ prefix: Prefix, sharedBy: Audience) {
        call = prefix
        self.sharedBy = sharedBy
        var hasher = prefix.hasher
        hasher.combine(sharedBy)
        digest = hasher.finalize()
    }

    /// A resource, upstream path and query that many keys share (e.g. a list without parameters), with the hash
    /// state of those parts computed once. A class: every key of it holds the one instance.
    final class Prefix: @unchecked Sendable {  // Immutable; Hasher is a plain value (its seed is per process).
        /// The resource name.
        let resource: String
        /// The upstream path.
        let path: String
        /// The upstream query pairs.
        let query: [(String, String)]
        /// The seeded hasher after the parts above.
        fileprivate let hasher: Hasher

        /// The prefix of `resource`'s call to `path` with `query`.
        init(resource: String, path: String, query: [(String, String)]) {
            self.resource = resource
            self.path = path
            self.query = query
            var hasher = Hasher()
            CacheKey.hashUpstream(resource: resource, path: path, query: query, into: &hasher)
            self.hasher = hasher
        }
    }

    /// The upstream path and query as one text, each query item length-prefixed (for logs and tests).
    var upstream: String {
        var text = path
        for (name, value) in query {
            text += "&\(name.utf8.count):\(name)\(value.utf8.count):\(value)"
        }
        return text
    }

    /// Who shares the answer: `u:<user id>`, `r:<role id>` or `anonymous`.
    var audience: String { sharedBy.description }

    /// The audience of a caller: anonymous callers share one; `role` scope shares by Directus role
    /// unless `perUser` (an owner-narrowed list) or the session has no known role.
    static func audience(session: Session?, scope: CacheScope, perUser: Bool) -> String {
        Audience(session: session, scope: scope, perUser: perUser).description
    }

    /// Hashes the parts before the audience (the query's item count first, so that items cannot shift between keys).
    private static func hashUpstream(resource: String, path: String, query: [(String, String)], into hasher: inout Hasher) {
        hasher.combine(resource)
        hasher.combine(path)
        hasher.combine(query.count)
        for (name, value) in query {
            hasher.combine(name)
            hasher.combine(value)
        }
    }

    /// Feeds the parts' hash, computed when the key was built.
    func hash(into hasher: inout Hasher) {
        hasher.combine(digest)
    }

    /// Keys are equal when every part is (keys of different hashes differ: decided without reading a part).
    static func == (lhs: CacheKey, rhs: CacheKey) -> Bool {
        guard lhs.digest == rhs.digest, lhs.sharedBy == rhs.sharedBy else { return false }
        return lhs.call === rhs.call
            || (lhs.resource == rhs.resource && lhs.path == rhs.path && same(lhs.query, rhs.query))
    }

    /// Whether two queries have the same items in the same order; one array (the usual list's, built once) is
    /// the same without reading an item.
    fileprivate static func same(_ a: [(String, String)], _ b: [(String, String)]) -> Bool {
        guard a.count == b.count else { return false }
        let shared = a.withUnsafeBufferPointer { x in b.withUnsafeBufferPointer { y in x.baseAddress == y.baseAddress } }
        return shared || zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    }
}
