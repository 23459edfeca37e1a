/// The list and read routes' lookups: the part of the handler that needs no `await` (the upstream call, its cache
/// key, the fresh stored answer under it), run by `Endpoint.prepare` on both of the gateway's paths; on a miss
/// the prepared read (`Endpoint.Read`) goes to `list` or `read`, which call Directus.
import PosternHTTP

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
        var query = try mapper.listQuery(clientQuery, userID: context.session?.userID)
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
        cache.key(path: mapper.upstreamItemPath(id: id), query: mapper.readQuery,
                  session: context.session, perUser: false)
    }

    /// `GET /api/v1/R` without an `await`: the fresh stored answer (`X-Cache: HIT`), else the upstream target
    /// and cache key for `list` (400 for a bad list parameter).
    func lookUpList(_ request: HTTPRequest, _ context: RequestContext) throws(GatewayError) -> Endpoint.Progress {
        let call = try listCall(request, context)
        if let hit = cache.stored(call.key) { return .answered(hit) }
        let target = call.usual ? defaultListTarget : QueryString.target(path: mapper.upstreamCollectionPath, query: call.query)
        return .fetch(Endpoint.Read(subject: target, key: call.key))
    }

    /// `GET /api/v1/R/{id}` without an `await`: the item the policy stage read (never from the cache), or the
    /// fresh stored answer, else the item id and cache key for `read`.
    func lookUpRead(_ request: HTTPRequest, _ context: RequestContext) throws(GatewayError) -> Endpoint.Progress {
        if case .ownerVerified(let item) = context.authorization {
            // The policy stage read it upstream with the caller's token: use it.
            return .answered(.apiJSON(200, try mapper.detailRenderer.renderItem(directusBody: item.directusBody)))
        }
        let id = try itemID(context)
        let key = readKey(id: id, context)
        if let hit = cache.stored(key) { return .answered(hit) }
        return .fetch(Endpoint.Read(subject: id, key: key))
    }
}
