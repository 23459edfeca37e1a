import FoundationEssentials
import PosternHTTP

/// The whole request pipeline, built once from config: route → edge stages (metrics and log, headers,
/// CORS, limits, error rendering) → the route's chain (limits → authentication → policy) → handler.
/// No sockets: tests call `handle`.
package final class Gateway: HTTPRequestHandler {
    private let routes: RouteTable
    private let clientAddress: ClientAddress
    private let log: AccessLog
    /// The metrics registry (rendered on the admin port's `/metrics`).
    package let metrics: Metrics
    /// The session manager (for maintenance timers and metrics).
    package let sessions: SessionManager
    /// What Directus's answers said about its schema (a missing collection makes `/readyz` 503).
    package let schema: SchemaWatch

    /// The process-wide micro-cache (docs/api.md, Micro-cache).
    let cache: MicroCache
    /// `limits.max_body_bytes` (named in the 413 the server gives for a body above its ceiling).
    private let maxBodyBytes: Int
    /// The operator console's sampler of the metrics (docs/api.md, Operator console); `Application` runs it.
    var statsSampler: StatsSampler { routes.sampler }
    /// Whether `handleImmediately` can ever answer (some resource is cached); when not, the server need not try it.
    package let answersImmediately: Bool

    /// Builds the pipeline. `metrics`, `rateLimits` and the cache are process-wide (shared by every loop);
    /// `invalidations` carries cache invalidations (in-process unless given).
    package init(config: PosternConfig, directus: DirectusClient, sessions: SessionManager, log: AccessLog,
                metrics: Metrics = Metrics(), rateLimits: RateLimits? = nil, breaker: CircuitBreaker? = nil,
                invalidations: (any CacheInvalidationBus)? = nil, cacheClock: MicroCache.Clock? = nil,
                clock: GatewayClock = .system) {
        self.sessions = sessions
        self.metrics = metrics
        maxBodyBytes = config.limits.maxBodyBytes
        answersImmediately = config.resources.contains { $0.cache.ttlMs > 0 }
        self.log = log
        let schema = SchemaWatch(log: log)
        self.schema = schema
        // A stored answer carries the edge's fields alike on every answer under /api/ (every cached answer is a
        // resource's), so that a hit only adds its request id.
        let cache = MicroCache(maxEntries: config.cacheMaxEntries, now: cacheClock ?? MicroCache.monotonicClock(),
                               preparing: { EdgeStages.decorateAlike(&$0, underAPI: true) })
        let invalidations = invalidations ?? LocalInvalidationBus()
        cache.attach(to: invalidations, metrics: metrics)
        self.cache = cache
        clientAddress = ClientAddress(trustedProxies: Set(config.rateLimits.trustedProxies))
        routes = RouteTable(config: config, directus: directus, sessions: sessions, log: log, metrics: metrics,
                            rateLimits: rateLimits ?? RateLimits(config.rateLimits, metrics: metrics), breaker: breaker,
                            schema: schema, cache: cache, invalidations: invalidations, clock: clock.seconds)
    }

    /// Answers one request on the public listener; never throws, every error is rendered.
    package func handle(_ request: HTTPRequest) async -> HTTPResponse {
        await handle(request, router: routes.router, prepared: nil)
    }

    /// Answers one request on the public listener, going on from what `handleImmediately` prepared for it
    /// (`prepared`, when it is that), else from the start.
    package func handle(_ request: HTTPRequest, prepared: AnyObject?) async -> HTTPResponse {
        await handle(request, router: routes.router, prepared: prepared)
    }

    /// Answers one request on the admin listener (operations, `/metrics`, the operator console), behind the admin
    /// edge (no CORS: `RouteTable.adminEdge`). A path under `/admin/` passes the admin guard first, routed or not
    /// (`AdminGuard`); handlers read the caller's address in `context.clientIP`.
    package func handleAdmin(_ request: HTTPRequest) async -> HTTPResponse {
        let start = prepare(request, router: routes.adminRouter, edge: routes.adminEdge, guarded: AdminGuard.covers(request.path))
        return await routes.adminEdge.respond(to: request, context: start.context, endpoint: start.endpoint,
                                         from: start.progress, trace: start.trace)
    }

    /// `handle`'s answer when it is ready without suspending (e.g. a fresh micro-cache answer for a cached
    /// session: docs/api.md, Micro-cache), with the same stages, headers, metrics and access log. Else nil, and
    /// `prepared` holds what was done (route, context, the stages that passed, the micro-cache key looked up),
    /// for `handle(_:prepared:)` to go on from. Tried first on every request of the public listener, on its loop
    /// thread.
    package func handleImmediately(_ request: HTTPRequest, prepared: inout AnyObject?) -> HTTPResponse? {
        let start = prepare(request, router: routes.router, edge: routes.edge)
        guard case .answered(var response) = start.progress else {
            prepared = PreparedRequest(start)
            return nil
        }
        routes.edge.finish(&response, request, start.context, start.trace)
        return response
    }

    @inline(__always)  // one async frame per request, not two
    private func handle(_ request: HTTPRequest, router: Router, prepared: AnyObject?) async -> HTTPResponse {
        let start = (prepared as? PreparedRequest)?.start ?? prepare(request, router: router, edge: routes.edge)
        return await routes.edge.respond(to: request, context: start.context, endpoint: start.endpoint,
                                         from: start.progress, trace: start.trace)
    }

    /// What the first, synchronous step of a request found: its context, its endpoint, its access-log trace and
    /// how far the stages went (`EdgeStages.prepare`).
    struct Start {
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
    private func prepare(_ request: HTTPRequest, router: Router, edge: EdgeStages, guarded: Bool = false) -> Start {
        let context: RequestContext
        var endpoint: Endpoint
        if let match = router.match(path: request.path) {
            context = self.context(request, match)
            endpoint = match.route.responder(for: request.method)
        } else {
            context = self.context(request, nil)
            endpoint = routes.notFound
        }
        if guarded { endpoint = routes.adminGuard.guarding(endpoint) }
        let trace = edge.trace()
        return Start(context: context, endpoint: endpoint, trace: trace,
                     progress: edge.prepare(request, context, endpoint, trace: trace))
    }

    /// A new request's context: its id, the client's address, and what routing found.
    private func context(_ request: HTTPRequest, _ match: RouteMatch?) -> RequestContext {
        let context = RequestContext(headers: request.headers,
                                     clientIP: clientAddress.clientIP(request))
        guard let match else { return context }
        context.routePattern = match.route.pattern
        context.resourceName = match.route.resource
        context.itemID = match.id
        return context
    }

    /// The answer to a request the server refuses before any handler runs (bad framing or an oversized head →
    /// 400, not whole in time → 408, a body above the server's ceiling → 413), in the usual error shape; the
    /// server closes the connection after it.
    package func refuse(_ refusal: EdgeRefusal) -> HTTPResponse {
        switch refusal {
        case .badFraming(let request, let reason):
            return refuse(request, .invalidRequest(reason))
        case .bodyTooLarge(let request):
            return refuse(request, .payloadTooLarge(maxBodyBytes))
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
        let context = RequestContext(headers: request.headers,
                                     clientIP: clientAddress.clientIP(request))
        if let match = routes.router.match(path: request.path) {
            context.routePattern = match.route.pattern
            context.resourceName = match.route.resource
        }
        var response = ErrorRenderer.render(error, context: context)
        EdgeStages.decorate(&response, path: request.path, requestID: context.requestID)
        metrics.request(route: context.routePattern, method: EdgeStages.methodLabel(request.method), status: error.status,
                        seconds: 0)
        log.access(request, response, context: context, trace: RequestTrace())
        return response
    }
}
