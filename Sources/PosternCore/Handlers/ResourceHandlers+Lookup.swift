/// The list and read operations' lookups: the part that needs no `await` (the upstream target, built once, its
/// cache key, the fresh stored answer under it), run by `Endpoint.prepare` on every path; on a miss the upstream
/// read (`UpstreamRead`) goes to `list` or `read`, which call Directus with that same target.
import PosternHTTP

extension ResourceHandlers {
    /// The upstream read of `GET /api/v1/R` (400 for a bad list parameter): its target and cache key. The plain
    /// list (no list parameter, not narrowed) is recognised here, once, and takes the target built at start-up. An
    /// owner-narrowed list is keyed per caller whatever the cache scope.
    func listRead(_ request: HTTPRequest, _ context: RequestContext) throws(GatewayError) -> UpstreamRead {
        let clientQuery = request.queryItems
        let plain = mapper.isDefaultListQuery(clientQuery)
        var owner: String?
        let perUser: Bool
        if case .ownItemsOnly = context.authorization {
            perUser = true
            owner = mapper.resource.owner
        } else {
            perUser = false
        }
        let target: UpstreamTarget
        if plain && owner == nil {
            target = plainList
        } else {
            var query = plain ? mapper.defaultListQuery : try mapper.listQuery(clientQuery, userID: context.session?.userID)
            if let owner { query.append(("filter[\(owner)][_eq]", "$CURRENT_USER")) }
            target = UpstreamTarget(path: mapper.upstreamCollectionPath, query: query)
        }
        return UpstreamRead(target: target, key: cache.key(for: target, session: context.session, perUser: perUser))
    }

    /// The upstream read of `GET /api/v1/R/{id}`: its target and cache key (nil when the resource is not cached).
    func itemRead(id: String, _ context: RequestContext) -> UpstreamRead {
        let target = UpstreamTarget(item: id, of: mapper)
        return UpstreamRead(target: target, key: cache.key(for: target, session: context.session, perUser: false))
    }

    /// `GET /api/v1/R` without an `await`: the fresh stored answer (`X-Cache: HIT`), else the upstream read for
    /// `list` (400 for a bad list parameter).
    func lookUpList(_ request: HTTPRequest, _ context: RequestContext) throws(GatewayError) -> RequestStep.Next {
        let read = try listRead(request, context)
        if let hit = cache.stored(read.key) { return .answered(hit) }
        return .fetch(read)
    }

    /// `GET /api/v1/R/{id}` without an `await`: the item the policy stage read (never from the cache), or the
    /// fresh stored answer, else the upstream read for `read`.
    func lookUpRead(_ request: HTTPRequest, _ context: RequestContext) throws(GatewayError) -> RequestStep.Next {
        if case .ownerVerified(let item) = context.authorization {
            // The policy stage read it upstream with the caller's token: use it.
            return .answered(.apiJSON(200, content: try mapper.detailRenderer.renderItem(directusBody: item.directusBody)))
        }
        let read = itemRead(id: try itemID(context), context)
        if let hit = cache.stored(read.key) { return .answered(hit) }
        return .fetch(read)
    }

    /// The list operation of `GET /api/v1/R`.
    var listOperation: Endpoint.Read {
        Endpoint.Read(lookUp: lookUpList, fetch: list, start: startList)
    }

    /// The read operation of `GET /api/v1/R/{id}`.
    var readOperation: Endpoint.Read {
        Endpoint.Read(lookUp: lookUpRead, fetch: read, start: startRead)
    }
}
