import PosternHTTP

/// One Directus read as the gateway sends it (`GET <path>?<query>`), built once per request: the micro-cache key
/// is made from its path and query pairs, and the call sends its text, so neither is rebuilt by the other.
struct UpstreamTarget: Sendable {
    /// The upstream path (`/items/<collection>` or `/items/<collection>/<id>`, percent-encoded).
    let path: String
    /// The query pairs, exactly as sent (not yet encoded).
    let query: [(String, String)]
    /// The resource's plain list (no list parameter, not narrowed): its key is built from a prefix hashed once
    /// (`ResourceCache`), and its text was built once at start-up. Recognised once, where the target is built.
    let isPlainList: Bool
    /// `path?query`, when it was built ahead (the plain list).
    private let prebuilt: String?

    /// The target of `path` with `query`.
    init(path: String, query: [(String, String)]) {
        self.path = path
        self.query = query
        isPlainList = false
        prebuilt = nil
    }

    /// The read of item `id` of `mapper`'s resource: `/items/<c>/<id>?fields=…` with its detail fields (and
    /// `deep[…]` for its lists: `ResourceMapper.readQuery`, built once).
    init(item id: String, of mapper: ResourceMapper) {
        self.init(path: mapper.upstreamItemPath(id: id), query: mapper.readQuery)
    }

    /// A resource's plain list, `path` with `query`, its text built now (once, at start-up).
    init(plainListOf path: String, query: [(String, String)]) {
        self.path = path
        self.query = query
        isPlainList = true
        prebuilt = QueryString.target(path: path, query: query)
    }

    /// `path?query`, percent-encoded, as sent.
    var text: String {
        if let prebuilt { return prebuilt }
        return QueryString.target(path: path, query: query)
    }
}
