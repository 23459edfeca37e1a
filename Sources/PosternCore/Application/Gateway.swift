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
    /// The generation serving now (the newest published).
    var generation: GatewayGeneration { slots.newest }
    /// Reads the newest generation without keeping anything alive, for the metrics' gauges and the reload hook (nil
    /// once the gateway is gone). Weakly the slots, not the gateway: a weak reference gives its object a side table,
    /// and every retain of the gateway on the request path would then take the runtime's slow path.
    var newestGeneration: @Sendable () -> GatewayGeneration? { { [weak slots] in slots?.newest } }

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
        let generation = slots.current
        return await generation.routes.edge.respond(to: request, prepare(request, generation))
    }

    /// Answers one request on the admin listener (operations, `/metrics`, the operator console), behind the admin
    /// edge (no CORS: `RouteTable.adminEdge`). A path under `/admin/` passes the admin guard first, routed or not
    /// (`AdminGuard`); handlers read the caller's address in `context.clientIP`.
    func handleAdmin(_ request: HTTPRequest) async -> HTTPResponse {
        let generation = slots.current
        return await generation.routes.adminEdge.respond(to: request, prepareAdmin(request, generation))
    }

    /// `handle`'s answer when it is ready without suspending (e.g. a fresh micro-cache answer for a cached
    /// session: docs/api.md, Micro-cache), with the same stages, headers, metrics and access log. Else nil, and
    /// `rest` goes on from how far the request got (its `RequestStep`: route, context, the stages that passed, the
    /// micro-cache key looked up and the upstream read), answered by the generation it was routed with, so that
    /// no stage runs twice: for a list or read of a resource that is not cached, without a task (`startFetch`),
    /// else in a runner task. Tried first on every request of the public listener, on its loop thread.
    func handleImmediately(_ request: HTTPRequest, rest: inout PreparedAnswer?) -> HTTPResponse? {
        let generation = slots.current
        let step = prepare(request, generation)
        guard case .answered(var response) = step.next else {
            let edge = generation.routes.edge
            if case .fetch(let read) = step.next, read.key == nil, step.endpoint.startFetch != nil {
                rest = .later(LaterFetch(request, step, edge))
            } else {
                rest = .task { await edge.respond(to: request, step) }
            }
            return nil
        }
        generation.routes.edge.finish(&response, request, step.context)
        return response
    }

    /// The public listener's first step of `request`: its route, context and endpoint (the 404 one when no route
    /// matches), then the edge's and the endpoint's stages as far as they go without an `await`. Synchronous and
    /// not inlined: what routing builds stays off the async frame.
    @inline(never)
    private func prepare(_ request: HTTPRequest, _ generation: GatewayGeneration) -> RequestStep {
        let routes = generation.routes
        let context = RequestContext(headers: request.headers, clientIP: generation.clientAddress.clientIP(request),
                                     trace: routes.edge.trace())
        let endpoint: Endpoint
        if let match = routes.router.match(path: request.path) {
            Gateway.route(context, match)
            endpoint = match.route.responder(for: request.method)
        } else {
            endpoint = routes.notFound
        }
        return routes.edge.prepare(request, context, endpoint)
    }

    /// The admin listener's first step of `request` (`prepare`, with the admin routes, edge and guard).
    @inline(never)
    private func prepareAdmin(_ request: HTTPRequest, _ generation: GatewayGeneration) -> RequestStep {
        let routes = generation.routes
        let context = RequestContext(headers: request.headers, clientIP: generation.clientAddress.clientIP(request),
                                     trace: routes.adminEdge.trace())
        var endpoint: Endpoint
        if let match = routes.adminRouter.match(path: request.path) {
            Gateway.route(context, match)
            endpoint = match.route.responder(for: request.method)
        } else {
            endpoint = routes.notFound
        }
        if AdminGuard.covers(request.path) { endpoint = routes.adminGuard.guarding(endpoint) }
        return routes.adminEdge.prepare(request, context, endpoint)
    }

    /// Fills in what routing found.
    private static func route(_ context: RequestContext, _ match: RouteMatch) {
        context.routePattern = match.route.pattern
        context.resourceName = match.route.resource
        context.itemID = match.id
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
