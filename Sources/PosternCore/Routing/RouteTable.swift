import FoundationEssentials
import PosternHTTP

/// Every route of both listeners, built once from config: one builder per kind of route (operations,
/// users, each resource), every responder behind the edge stages.
final class RouteTable: Sendable {
    /// The public listener's routes.
    let router: Router
    /// The admin listener's routes (operations, `/metrics`, and the operator console: `/` and `/admin/…`).
    let adminRouter: Router
    /// The guard in front of every admin-listener path under `/admin/` (`admin.token`).
    let adminGuard: AdminGuard
    /// The operator console's sampler of `metrics` (started and stopped with the listeners).
    let sampler: StatsSampler
    /// The 404 answer for a path no route matches (behind the edge stages too).
    let notFound: Endpoint
    /// The stages around every answer of the public listener.
    let edge: EdgeStages
    /// The stages around every answer of the admin listener: the same, but no CORS (docs/api.md, Operator console):
    /// no origin is allowed, so no answer carries `Access-Control-*` and every preflight is 403.
    let adminEdge: EdgeStages

    /// The stages shared by the routes of one table.
    struct Stages: Sendable {
        /// The body-size limit.
        let limit: BodyLimitStage
        /// Authentication that lets anonymous callers through (public rules).
        let optionalAuth: AuthenticationStage
        /// Authentication that demands a valid token.
        let requiredAuth: AuthenticationStage
        /// Directus item calls on behalf of the caller.
        let items: DirectusItems<SessionManager>
        /// Learns from list answers whether a collection exists (for `/readyz`).
        let schema: SchemaWatch
        /// The process-wide micro-cache.
        let cache: MicroCache
        /// Where writes announce that a collection changed.
        let invalidations: any CacheInvalidationBus
        /// The config generation these routes belong to (its cached answers are its own).
        let generation: Int
    }

    /// What the route tables of every config generation share: built once, kept across reloads (docs/api.md,
    /// Reloading the config).
    struct Shared: Sendable {
        /// The sessions.
        let sessions: SessionManager
        /// The access and event log.
        let log: AccessLog
        /// The process-wide metrics.
        let metrics: Metrics
        /// What Directus's answers said about its schema.
        let schema: SchemaWatch
        /// The process-wide micro-cache.
        let cache: MicroCache
        /// The operator console's sampler of `metrics`.
        let sampler: StatsSampler
        /// Where writes announce that a collection changed.
        let invalidations: any CacheInvalidationBus
        /// What `POST /admin/reload` runs.
        let reload: ReloadTrigger
        /// The failed admin authentications per client IP (a reload keeps the count).
        let adminFailures: AdminAuthFailures
        /// Monotonic seconds, the gateway's: `/readyz`'s ping reuse, the admin listener's failed-authentication limit.
        let clock: @Sendable () -> TimeInterval
    }

    /// Builds every route of config generation `generation` of `config` over the parts every generation shares.
    init(config: PosternConfig, generation: Int, directus: DirectusClient, shared: Shared, rateLimits: RateLimits,
         breaker: CircuitBreaker?) {
        let sessions = shared.sessions
        let schema = shared.schema
        edge = EdgeStages(metrics: shared.metrics, log: shared.log, cors: CORSPolicy(config.cors))
        adminEdge = EdgeStages(metrics: shared.metrics, log: shared.log, cors: CORSPolicy.noOrigin)
        let stages = Stages(limit: BodyLimitStage(maxBytes: config.limits.maxBodyBytes),
                            optionalAuth: AuthenticationStage(sessions: sessions, required: false, rateLimits: rateLimits),
                            requiredAuth: AuthenticationStage(sessions: sessions, required: true, rateLimits: rateLimits),
                            items: DirectusItems(directus: directus, sessions: sessions), schema: schema,
                            cache: shared.cache, invalidations: shared.invalidations, generation: generation)
        let users = UserHandlers(directus: directus, sessions: sessions, rateLimits: rateLimits,
                                 registerEndpoint: config.directus.registration == "register")
        // The public listener's /readyz shares a ping per worker (anyone may call it); the admin listener's pings on
        // every probe (private: the orchestrator's probe and the operator see Directus's health as of now).
        let coalesced = ReadinessPing(directus: directus, clock: shared.clock)
        let operations = RouteTable.operationsRoutes(ping: { await coalesced.ping(context: $0) }, breaker: breaker,
                                                     schema: schema, sessions: sessions)
        let adminOperations = RouteTable.operationsRoutes(ping: { await directus.ping(context: $0) }, breaker: breaker,
                                                          schema: schema, sessions: sessions)
        let publicRoutes = operations + [RouteTable.openAPIRoute(config)] + RouteTable.userRoutes(users, stages)
            + config.resources.flatMap { RouteTable.resourceRoutes($0, stages) }
        router = Router(routes: publicRoutes + RouteTable.compositeRoutes(config, over: publicRoutes, stages, log: shared.log))
        sampler = shared.sampler
        adminRouter = Router(routes: adminOperations + [RouteTable.metricsRoute(shared.metrics, sessions: sessions)]
            + RouteTable.consoleRoutes(config: config, generation: generation, sampler: shared.sampler, sessions: sessions,
                                       breaker: breaker)
            + RouteTable.sessionRoutes(AdminSessions(sessions: sessions, log: shared.log))
            + [RouteTable.reloadRoute(AdminReload(trigger: shared.reload, log: shared.log))])
        adminGuard = AdminGuard(config.admin, failures: shared.adminFailures)
        notFound = Endpoint(answering: .notFound("no such route"))
    }

    /// `/healthz` and `/readyz` (on both listeners; `/readyz` asks Directus whether it answers through `ping`).
    static func operationsRoutes(ping: @escaping @Sendable (CallFields) async -> Bool, breaker: CircuitBreaker?, schema: SchemaWatch,
                                 sessions: SessionManager) -> [Route] {
        [
            Route("/healthz", methods: [(.get, Endpoint { _, _ in .json(200, .object([("status", .string("ok"))])) })]),
            Route("/readyz", methods: [(.get, Endpoint { _, context throws(GatewayError) in
                // Not ready while a configured collection is known to be missing (Directus not bootstrapped).
                if let problem = schema.problem {
                    var error = GatewayError.upstreamUnavailable(problem)
                    error.message = problem
                    throw error
                }
                // Not ready while the session store cannot answer (a token could be neither accepted nor refused).
                guard await sessions.storeIsAvailable() else {
                    throw .sessionStoreUnavailable("the session store reports itself unavailable")
                }
                // Ready when Directus answers its ping and the circuit is closed (the ping is the probe when half-open).
                guard await ping(context.call), breaker?.state ?? .closed == .closed else {
                    throw .upstreamUnavailable("/server/ping failed or circuit open")
                }
                return .json(200, .object([("status", .string("ready"))]))
            })]),
        ]
    }

    /// `/metrics` (admin listener only).
    static func metricsRoute(_ metrics: Metrics, sessions: SessionManager) -> Route {
        Route("/metrics", methods: [(.get, Endpoint { _, _ in
            _ = await sessions.activeSessions()  // updates the `postern_active_sessions` gauge
            return HTTPResponse(status: 200, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                         body: Data(metrics.render().utf8))
        })])
    }

    /// `GET /api/v1/openapi.json`: the OpenAPI document of this config, generated once (docs/api.md, OpenAPI).
    static func openAPIRoute(_ config: PosternConfig) -> Route {
        let document = OpenAPIDocument(config: config).data()
        return Route(OpenAPIDocument.path, methods: [(.get, Endpoint { _, _ in .json(200, document) })])
    }

    /// `/api/v1/user…`: login, refresh, logout, me, register.
    static func userRoutes(_ users: UserHandlers, _ stages: Stages) -> [Route] {
        [
            Route("/api/v1/user/login", methods: [(.post, Endpoint(limit: stages.limit, handler: users.login))]),
            Route("/api/v1/user/refresh", methods: [(.post, Endpoint(limit: stages.limit, handler: users.refresh))]),
            Route("/api/v1/user/logout", methods: [(.post, Endpoint(limit: stages.limit, authentication: stages.requiredAuth,
                                                                    handler: users.logout))]),
            Route("/api/v1/user/me", methods: [(.get, Endpoint(authentication: stages.requiredAuth, handler: users.me))]),
            Route("/api/v1/user", methods: [(.post, Endpoint(limit: stages.limit, handler: users.register))]),
        ]
    }

    /// `/api/v1/R` and `/api/v1/R/{id}` for one configured resource: limit → authentication → (id check) → policy → handler.
    static func resourceRoutes(_ resource: ResourceConfig, _ stages: Stages) -> [Route] {
        let mapper = ResourceMapper(resource)
        let handlers = ResourceHandlers(mapper: mapper, items: stages.items, schema: stages.schema,
                                        cache: ResourceCache(resource, cache: stages.cache, invalidations: stages.invalidations,
                                                             plainList: UpstreamTarget(plainListOf: mapper.upstreamCollectionPath,
                                                                                       query: mapper.defaultListQuery),
                                                             generation: stages.generation))
        func rule(_ action: ResourceAction) -> PermissionRule { resource.permissions[action] ?? .nobody }
        func policy(_ action: ResourceAction) -> PolicyStage {
            PolicyStage(action: action, rule: rule(action), mapper: mapper, items: stages.items)
        }
        func guarded(_ action: ResourceAction, item: Bool, _ handler: @escaping Endpoint.Handler) -> Endpoint {
            Endpoint(limit: stages.limit, authentication: rule(action) == .public ? stages.optionalAuth : stages.requiredAuth,
                     itemID: item ? ItemIDStage(mapper: mapper) : nil, policy: policy(action), handler: handler)
        }
        // List and read look up the micro-cache without an `await`: a cached resource's hits are answered on the
        // loop thread, without a task (docs/api.md, Micro-cache).
        func lookedUp(_ action: ResourceAction, item: Bool, _ read: Endpoint.Read) -> Endpoint {
            Endpoint(limit: stages.limit, authentication: rule(action) == .public ? stages.optionalAuth : stages.requiredAuth,
                     itemID: item ? ItemIDStage(mapper: mapper) : nil, policy: policy(action), operation: .read(read))
        }
        let update = guarded(.update, item: true, handlers.update)
        // POST: authenticate (demanded up front unless create or update is public), parse the body once,
        // then the chosen action's requirement and policy.
        let postAuth = rule(.create) == .public || rule(.update) == .public ? stages.optionalAuth : stages.requiredAuth
        let createOrUpdate = CreateOrUpdateResponder(
            mapper: mapper,
            create: Endpoint(requirement: AuthenticationRequirement(rule: rule(.create)), policy: policy(.create),
                             handler: handlers.create),
            update: Endpoint(requirement: AuthenticationRequirement(rule: rule(.update)), itemID: ItemIDStage(mapper: mapper),
                             policy: policy(.update), handler: handlers.update))
        let name = resource.name
        return [
            Route("/api/v1/\(name)", resource: name, methods: [
                (.get, lookedUp(.list, item: false, handlers.listOperation)),
                (.post, Endpoint(limit: stages.limit, authentication: postAuth, handler: createOrUpdate.respond)),
            ]),
            Route("/api/v1/\(name)/{id}", resource: name, methods: [
                (.get, lookedUp(.read, item: true, handlers.readOperation)),
                (.patch, update),
                (.put, update),
                (.delete, guarded(.delete, item: true, handlers.delete)),
            ]),
        ]
    }
}
