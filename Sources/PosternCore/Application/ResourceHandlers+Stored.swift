/// The synchronous micro-cache lookups of the list and read routes (`Endpoint.ImmediateHandler`): the fresh
/// stored answer (`X-Cache: HIT`) under the same key `list` and `read` would look up, found without an `await`;
/// nil sends the request to `list` or `read`, which look again and call Directus on a miss.
extension ResourceHandlers {
    /// `list`'s answer when the micro-cache holds it fresh, else nil (the same errors as `list` for a bad query).
    func storedList(_ request: HTTPRequest, _ context: RequestContext) throws(GatewayError) -> HTTPResponse? {
        guard cache.cache != nil else { return nil }
        var query = try mapper.listQuery(request.queryItems)
        let perUser: Bool
        if case .ownItemsOnly = context.authorization, let owner = mapper.resource.owner {
            query.append(("filter[\(owner)][_eq]", "$CURRENT_USER"))
            perUser = true
        } else if case .ownItemsOnly = context.authorization {
            perUser = true
        } else {
            perUser = false
        }
        return cache.stored(cache.key(path: mapper.upstreamCollectionPath, query: query, session: context.session, perUser: perUser))
    }

    /// `read`'s answer when the micro-cache holds it fresh, else nil (an owner-verified read never comes from
    /// the cache).
    func storedRead(_ request: HTTPRequest, _ context: RequestContext) throws(GatewayError) -> HTTPResponse? {
        guard cache.cache != nil, let id = context.itemID else { return nil }
        if case .ownerVerified = context.authorization { return nil }
        return cache.stored(cache.key(path: mapper.upstreamItemPath(id: id), query: [("fields", mapper.directusFieldList)],
                                      session: context.session, perUser: false))
    }
}
