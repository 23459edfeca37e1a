/// One composite endpoint (`composites[i]`, docs/api.md, Composite endpoints): a GET path whose answer gathers the
/// answers of several GET routes of the same gateway, run at once for the caller.
package struct CompositeConfig: Sendable, Equatable {
    /// The name (for people: logs, OpenAPI); `[a-z][a-z0-9_-]*`, unique.
    package var name: String
    /// The path served, under `/api/`, with `{name}` placeholders (`/api/v1/screens/posts/{id}`).
    package var path: String
    /// Who may call it (before any part runs): `public`, `authenticated`, `role:<id>` or `nobody`.
    var permission: PermissionRule = .authenticated
    /// How long the parts may take, in milliseconds; nil: `directus.timeout_ms`.
    var timeoutMs: Int?
    /// The parts, in answer order.
    package var parts: [CompositePartConfig]

    /// The most parts a composite may have.
    static let maxParts = 8

    /// Builds a composite.
    init(name: String, path: String, parts: [CompositePartConfig]) {
        self.name = name
        self.path = path
        self.parts = parts
    }

    /// The timeout in effect under `directus` (its `timeout_ms` when the composite sets none).
    func timeoutMs(under directus: DirectusConfig) -> Int { timeoutMs ?? directus.timeoutMs }

    /// The placeholder names of `path`, in order (`{id}` → `id`).
    var placeholders: [String] {
        path.split(separator: "/").compactMap { CompositeConfig.placeholder(in: $0) }
    }

    /// The name of a `{name}` path segment, else nil.
    static func placeholder(in segment: Substring) -> String? {
        guard segment.count > 2, segment.first == "{", segment.last == "}" else { return nil }
        return String(segment.dropFirst().dropLast())
    }

    /// The composites the shipped config serves over the shipped resources (docs/api.md, Composite endpoints).
    static var shipped: [CompositeConfig] {
        var me = CompositePartConfig(key: "me", route: "GET /api/v1/user/me")
        me.required = true
        var mine = CompositePartConfig(key: "mine", route: "GET /api/v1/books")
        mine.query = [("mine", "true"), ("limit", "5")]
        var latest = CompositePartConfig(key: "latest", route: "GET /api/v1/posts")
        latest.query = [("sort", "-date_created"), ("limit", "3")]
        var home = CompositeConfig(name: "home", path: "/api/v1/home", parts: [me, mine, latest])
        home.timeoutMs = 3000
        var post = CompositePartConfig(key: "post", route: "GET /api/v1/posts/{id}")
        post.required = true
        var comments = CompositePartConfig(key: "comments", route: "GET /api/v1/comments")
        comments.query = [("post", "{id}"), ("limit", "20")]
        return [home, CompositeConfig(name: "post_page", path: "/api/v1/screens/posts/{id}", parts: [post, comments])]
    }
}

/// One part of a composite (`composites[i].parts[j]`): a GET route of this gateway, with a fixed query.
package struct CompositePartConfig: Sendable, Equatable {
    /// The part's key in the answer (`[A-Za-z_][A-Za-z0-9_]*`, unique in its composite, not `errors`).
    package var key: String
    /// `GET <path>`: a resource's list or read, or `/api/v1/user/me`; the path may use the composite's placeholders.
    var route: String
    /// A failed required part fails the composite; an optional one leaves its key null.
    var required = false
    /// The query the part is called with, in order; values may use the composite's placeholders.
    var query: [(String, String)] = []

    /// Builds a part.
    init(key: String, route: String) {
        self.key = key
        self.route = route
    }

    /// The method and path of `route` (`GET /api/v1/books` → `GET`, `/api/v1/books`), split at its first space.
    var methodAndPath: (method: String, path: String) {
        guard let space = route.firstIndex(of: " ") else { return ("", route) }
        return (String(route[..<space]), String(route[route.index(after: space)...]).trimmingASCIISpaces())
    }

    /// Equal when every setting is equal (the query compared in order).
    package static func == (lhs: CompositePartConfig, rhs: CompositePartConfig) -> Bool {
        lhs.key == rhs.key && lhs.route == rhs.route && lhs.required == rhs.required
            && lhs.query.map { "\($0.0)=\($0.1)" } == rhs.query.map { "\($0.0)=\($0.1)" }
    }
}

private extension String {
    /// Without leading and trailing spaces.
    func trimmingASCIISpaces() -> String {
        var text = Substring(self)
        while text.first == " " { text = text.dropFirst() }
        while text.last == " " { text = text.dropLast() }
        return String(text)
    }
}
