import PosternHTTP

extension RouteTable {
    /// The composite endpoints of `config` (docs/api.md, Composite endpoints), each part resolved once to the GET
    /// endpoint of its route among `routes` (the public routes of the same table): body limit → authentication (the
    /// token checked once, for every part) → the composite's permission and its parts.
    static func compositeRoutes(_ config: PosternConfig, over routes: [Route], _ stages: Stages, log: AccessLog) -> [Route] {
        let router = Router(routes: routes)
        return config.composites.map { composite in
            let parts = composite.parts.map { part -> CompositePart in
                let path = part.methodAndPath.path
                let match = router.match(path: path)
                // A checked config names only GET routes it has; anything else answers 500 for the part.
                let endpoint = match.map { $0.route.responder(for: .get) }
                    ?? Endpoint(answering: .internalError("composite \(composite.name): no GET route \(path)"))
                let segments = path.split(separator: "/")
                let item = match?.id != nil ? segments.last.map(String.init) : nil
                return CompositePart(key: part.key, required: part.required, endpoint: endpoint,
                                     routePattern: match?.route.pattern ?? path, resourceName: match?.route.resource,
                                     pathTemplate: path, itemTemplate: item, queryTemplate: part.query)
            }
            let responder = CompositeResponder(composite, parts: parts, timeoutMs: composite.timeoutMs(under: config.directus),
                                               log: log)
            let authentication = composite.permission == .public ? stages.optionalAuth : stages.requiredAuth
            return Route(composite.path, methods: [(.get, Endpoint(limit: stages.limit, authentication: authentication,
                                                                    handler: responder.respond))])
        }
    }
}
