import FoundationEssentials
import PosternHTTP
import PosternIO

/// The whole request pipeline: route → edge stages (metrics and log, headers, CORS, limits, error rendering) →
/// the route's chain (limits → authentication → policy) → handler, built from config as one immutable
/// `GatewayGeneration`; a config reload installs the next one (docs/api.md, Reloading the config), and each
/// request is answered by the generation it was routed with. No sockets: tests call `handle`.
final class Gateway: HTTPRequestHandler {
    /// What every generation shares (sessions, metrics, the log, the cache, the sampler).
    let shared: RouteTable.Shared
    /// Each loop's reference to the current generation.
    private let slots: GenerationSlots
    /// Guards the numbering of new generations.
    private let installing = PlainLock()
    /// The metrics registry (rendered on the admin port's `/metrics`).
    var metrics: Metrics { shared.metrics }
    /// The session manager (for maintenance timers and metrics).
    var sessions: SessionManager { shared.sessions }
    /// What Directus's answers said about its schema (a missing collection makes `/readyz` 503).
    var schema: SchemaWatch { shared.schema }
    /// The process-wide micro-cache (docs/api.md, Micro-cache); a reload drops its answers.
    var cache: MicroCache { shared.cache }
    /// The operator console's sampler of the metrics (docs/api.md, Operator console); `Application` runs it.
    var statsSampler: StatsSampler { shared.sampler }
    /// Whether `handleImmediately` can answer now (some resource of the current generation is cached).
    var answersImmediately: Bool { slots.current.answersImmediately }
    /// The generation serving now (the newest published).
    var generation: GatewayGeneration { slots.newest }

    /// Builds the pipeline. `metrics`, `rateLimits` and the cache are process-wide (shared by every loop);
    /// `invalidations` carries cache invalidations (in-process unless given).
    init(config: PosternConfig, directus: DirectusClient, sessions: SessionManager, log: AccessLog,
                metrics: Metrics = Metrics(), rateLimits: RateLimits? = nil, breaker: CircuitBreaker? = nil,
                invalidations: (any CacheInvalidationBus)? = nil, cacheClock: MicroCache.Clock? = nil,
                clock: GatewayClock = .system) {
        // A stored answer carries the edge's fields alike on every answer under /api/ (every cached answer is a
        // resource's), so that a hit only adds its request id.
        let cache = MicroCache(maxEntries: config.cacheMaxEntries, now: cacheClock ?? MicroCache.monotonicClock(),
                               preparing: { EdgeStages.decorateAlike(&$0, underAPI: true) })
        let invalidations = invalidations ?? LocalInvalidationBus()
        cache.attach(to: invalidations, metrics: metrics)
        shared = RouteTable.Shared(sessions: sessions, log: log, metrics: metrics, schema: SchemaWatch(log: log),
                                   cache: cache, sampler: StatsSampler(metrics: metrics, counted: RouteTable.countedInStats),
                                   invalidations: invalidations, reload: ReloadTrigger(),
                                   adminFailures: AdminAuthFailures(log: log, metrics: metrics, clock: clock.seconds),
                                   clock: clock.seconds)
        slots = GenerationSlots(GatewayGeneration(number: 1, config: config, directus: directus,
                                                  rateLimits: rateLimits ?? RateLimits(config.rateLimits, metrics: metrics),
                                                  breaker: breaker, shared: shared))
    }

    /// Builds the next generation from `config` over the kept parts and makes it the one every request routed from
    /// now on uses; requests in flight finish on theirs. The cached answers are dropped. Call off the loops.
    func install(_ config: PosternConfig, directus: DirectusClient, rateLimits: RateLimits,
                         breaker: CircuitBreaker?) -> GatewayGeneration {
        installing.withLock {
            let next = GatewayGeneration(number: slots.newest.number + 1, config: config, directus: directus,
                                         rateLimits: rateLimits, breaker: breaker, shared: shared)
            slots.publish(next)
            // Keys carry the generation, so an answer an older generation stores later is never served by this one.
            shared.cache.invalidateAll()
            return next
        }
    }

    /// Lets `POST /admin/reload` run `reload`.
    func attachReload(_ reload: @escaping @Sendable () async -> ConfigReloadOutcome) {
        shared.reload.attach(reload)
    }

    /// Drops the loops' references to the generations (after the loops stopped).
    func releaseGenerations() {
        slots.release()
    }

    /// Answers one request on the public listener; never throws, every error is rendered.
    func handle(_ request: HTTPRequest) async -> HTTPResponse {
        await handle(request, prepared: nil, admin: false)
    }

    /// Answers one request on the public listener, going on from what `handleImmediately` prepared for it
    /// (`prepared`, when it is that), else from the start.
    func handle(_ request: HTTPRequest, prepared: AnyObject?) async -> HTTPResponse {
        await handle(request, prepared: prepared, admin: false)
    }

    /// Answers one request on the admin listener (operations, `/metrics`, the operator console), behind the admin
    /// edge (no CORS: `RouteTable.adminEdge`). A path under `/admin/` passes the admin guard first, routed or not
    /// (`AdminGuard`); handlers read the caller's address in `context.clientIP`.
    func handleAdmin(_ request: HTTPRequest) async -> HTTPResponse {
        await handle(request, prepared: nil, admin: true)
    }

    /// `handle`'s answer when it is ready without suspending (e.g. a fresh micro-cache answer for a cached
    /// session: docs/api.md, Micro-cache), with the same stages, headers, metrics and access log. Else nil, and
    /// `prepared` holds what was done (route, context, the stages that passed, the micro-cache key looked up),
    /// for `handle(_:prepared:)` to go on from. Tried first on every request of the public listener, on its loop
    /// thread.
    func handleImmediately(_ request: HTTPRequest, prepared: inout AnyObject?) -> HTTPResponse? {
        let generation = slots.current
        guard generation.answersImmediately else { return nil }
        let start = prepare(request, generation, admin: false)
        guard case .answered(var response) = start.progress else {
            prepared = PreparedRequest(start)
            return nil
        }
        generation.routes.edge.finish(&response, request, start.context, start.trace)
        return response
    }

    /// A request routed with the current generation (or what the immediate path prepared, with the generation it
    /// was routed with) answered by that generation's stages.
    @inline(__always)  // one async frame per request, not two
    private func handle(_ request: HTTPRequest, prepared: AnyObject?, admin: Bool) async -> HTTPResponse {
        let start = (prepared as? PreparedRequest)?.start ?? prepare(request, slots.current, admin: admin)
        let generation = start.generation
        return await (admin ? generation.routes.adminEdge : generation.routes.edge)
            .respond(to: request, context: start.context, endpoint: start.endpoint, from: start.progress, trace: start.trace)
    }

    /// What the first, synchronous step of a request found: its context, its endpoint, its access-log trace and
    /// how far the stages went (`EdgeStages.prepare`).
    struct Start {
        /// The generation the request was routed with (it is answered by it).
        let generation: GatewayGeneration
        /// The request's context.
        let context: RequestContext
        /// The endpoint that answers it (the 404 one when no route matches).
        let endpoint: Endpoint
        /// The access-log trace (nil when no access line is written).
        let trace: RequestTrace?
        /// The answer, or where the stages stopped.
        let progress: Endpoint.Progress
    }

    /// A `Start` handed from the immediate path to the asynchronous one (the server carries it opaquely).
    final class PreparedRequest {
        /// What the immediate path did.
        let start: Start
        init(_ start: Start) { self.start = start }
    }

    /// The request's route, context and endpoint (the 404 one when no route matches), then the edge's and the
    /// endpoint's stages as far as they go without an `await`. Synchronous and not inlined: what routing builds
    /// stays off the async frame.
    @inline(never)
    private func prepare(_ request: HTTPRequest, _ generation: GatewayGeneration, admin: Bool) -> Start {
        // Each router and edge is used where it is: `(admin ? a : b).match` copied a whole `Router` (7 retains and
        // releases per request).
        let context: RequestContext
        var endpoint: Endpoint
        let match = admin ? generation.routes.adminRouter.match(path: request.path)
                          : generation.routes.router.match(path: request.path)
        if let match {
            context = self.context(request, match, generation)
            endpoint = match.route.responder(for: request.method)
        } else {
            context = self.context(request, nil, generation)
            endpoint = generation.routes.notFound
        }
        if admin && AdminGuard.covers(request.path) { endpoint = generation.routes.adminGuard.guarding(endpoint) }
        let trace = admin ? generation.routes.adminEdge.trace() : generation.routes.edge.trace()
        let progress = admin ? generation.routes.adminEdge.prepare(request, context, endpoint, trace: trace)
                             : generation.routes.edge.prepare(request, context, endpoint, trace: trace)
        return Start(generation: generation, context: context, endpoint: endpoint, trace: trace, progress: progress)
    }

    /// A new request's context: its id, the client's address, and what routing found.
    private func context(_ request: HTTPRequest, _ match: RouteMatch?, _ generation: GatewayGeneration) -> RequestContext {
        let context = RequestContext(headers: request.headers,
                                     clientIP: generation.clientAddress.clientIP(request))
        guard let match else { return context }
        context.routePattern = match.route.pattern
        context.resourceName = match.route.resource
        context.itemID = match.id
        return context
    }

    /// The answer to a request the server refuses before any handler runs (bad framing or an oversized head →
    /// 400, not whole in time → 408, a body above the server's ceiling → 413), in the usual error shape; the
    /// server closes the connection after it.
    func refuse(_ refusal: EdgeRefusal) -> HTTPResponse {
        switch refusal {
        case .badFraming(let request, let reason):
            return refuse(request, .invalidRequest(reason))
        case .bodyTooLarge(let request):
            return refuse(request, .payloadTooLarge(slots.current.maxBodyBytes))
        case .requestTimeout:
            let context = RequestContext(headers: HTTPHeaders(), clientIP: "")
            var response = ErrorRenderer.render(GatewayError(status: 408, code: .requestTimeout, message: "request not received in time"),
                                                context: context)
            EdgeStages.decorate(&response, path: "", requestID: context.requestID)
            return response
        }
    }

    /// The answer to a refused request that arrived far enough to be logged.
    private func refuse(_ request: HTTPRequest, _ error: GatewayError) -> HTTPResponse {
        let generation = slots.current
        let context = RequestContext(headers: request.headers,
                                     clientIP: generation.clientAddress.clientIP(request))
        if let match = generation.routes.router.match(path: request.path) {
            context.routePattern = match.route.pattern
            context.resourceName = match.route.resource
        }
        var response = ErrorRenderer.render(error, context: context)
        EdgeStages.decorate(&response, path: request.path, requestID: context.requestID)
        metrics.request(route: context.routePattern, method: EdgeStages.methodLabel(request.method), status: error.status,
                        seconds: 0)
        shared.log.access(request, response, context: context, trace: RequestTrace())
        return response
    }
}
