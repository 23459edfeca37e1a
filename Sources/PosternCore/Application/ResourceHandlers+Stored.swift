/// The upstream call and cache key of the list and read routes, shared by `list`/`read` and by their synchronous
/// micro-cache lookups (`Endpoint.ImmediateHandler`): the fresh stored answer (`X-Cache: HIT`) under the same
/// key `list` and `read` look up, found without an `await`; nil sends the request to `list` or `read`, which look
/// again and call Directus on a miss.
extension ResourceHandlers {
    /// A list's upstream query and its cache key.
    struct ListCall {
        /// The Directus query (list parameters mapped, plus the owner filter when narrowed).
        let query: [(String, String)]
        /// The usual list: no list parameter and not narrowed, so its target is the one built at start-up.
        let usual: Bool
        /// The cache key (nil when the resource is not cached).
        let key: CacheKey?
    }

    /// The upstream query and cache key of `GET /api/v1/R` (400 for a bad list parameter). An owner-narrowed
    /// list is keyed per caller whatever the cache scope.
    func listCall(_ request: HTTPRequest, _ context: RequestContext) throws(GatewayError) -> ListCall {
        let clientQuery = request.queryItems
        var query = try mapper.listQuery(clientQuery)
        let perUser: Bool
        var narrowed = false
        if case .ownItemsOnly = context.authorization {
            perUser = true
            if let owner = mapper.resource.owner {
                query.append(("filter[\(owner)][_eq]", "$CURRENT_USER"))
                narrowed = true
            }
        } else {
            perUser = false
        }
        let key = cache.key(path: mapper.upstreamCollectionPath, query: query, session: context.session, perUser: perUser)
        return ListCall(query: query, usual: !narrowed && mapper.isDefaultListQuery(clientQuery), key: key)
    }

    /// The cache key of `GET /api/v1/R/{id}` (nil when the resource is not cached).
    func readKey(id: String, _ context: RequestContext) -> CacheKey? {
        cache.key(path: mapper.upstreamItemPath(id: id), query: [("fields", mapper.directusFieldList)],
                  session: context.session, perUser: false)
    }

    /// `list`'s answer when the micro-cache holds it fresh, else nil (the same errors as `list` for a bad query).
    func storedList(_ request: HTTPRequest, _ context: RequestContext) throws(GatewayError) -> HTTPResponse? {
        guard cache.cache != nil else { return nil }
        return cache.stored(try listCall(request, context).key)
    }

    /// `read`'s answer when the micro-cache holds it fresh, else nil (an owner-verified read never comes from
    /// the cache).
    func storedRead(_ request: HTTPRequest, _ context: RequestContext) throws(GatewayError) -> HTTPResponse? {
        guard cache.cache != nil, let id = context.itemID else { return nil }
        if case .ownerVerified = context.authorization { return nil }
        return cache.stored(readKey(id: id, context))
    }
}
