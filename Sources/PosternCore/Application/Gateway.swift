import Foundation

/// The whole request pipeline, built once from config (STYLE #6): request id → route → middleware chain
/// (limits → authentication → policy) → handler → one rendered response. No sockets: tests call `handle`.
public final class Gateway: Sendable {
    private let router: Router
    private let adminRouter: Router
    private let cors: CORSPolicy
    /// The metrics registry (rendered on the admin port's `/metrics`).
    public let metrics: Metrics
    private let trustedProxies: Set<String>
    /// Longest accepted request target (path and query), in bytes.
    static let maxTargetBytes = 8192
    private let log: AccessLog
    /// The session manager (for maintenance timers and metrics).
    public let sessions: SessionManager
    private let directus: DirectusClient

    /// Builds the pipeline. `metrics` and `rateLimits` are process-wide (shared by every loop).
    public init(config: PosternConfig, directus: DirectusClient, sessions: SessionManager, log: AccessLog,
                metrics: Metrics = Metrics(), rateLimits: RateLimits? = nil, breaker: CircuitBreaker? = nil) {
        self.sessions = sessions
        self.directus = directus
        self.log = log
        self.metrics = metrics
        let rateLimits = rateLimits ?? RateLimits(config.rateLimits, metrics: metrics)
        trustedProxies = Set(config.rateLimits.trustedProxies)
        cors = CORSPolicy(config.cors)
        let items = DirectusItems(directus: directus, sessions: sessions)
        let limit = BodyLimitMiddleware(maxBytes: config.limits.maxBodyBytes)
        let optionalAuth = AuthenticationMiddleware(sessions: sessions, required: false, rateLimits: rateLimits)
        let requiredAuth = AuthenticationMiddleware(sessions: sessions, required: true, rateLimits: rateLimits)
        let users = UserHandlers(directus: directus, sessions: sessions, rateLimits: rateLimits,
                                 registerEndpoint: config.directus.registration == "register")

        func endpoint(_ stages: [any Middleware], _ body: @escaping @Sendable (HTTPRequest, RequestContext) async throws(GatewayError) -> HTTPResponse) -> any Responder {
            stages.wrapping(ClosureResponder(body))
        }

        let operations = [
            Route("/healthz", methods: [(.get, ClosureResponder { _, _ in .json(200, .object([("status", .string("ok"))])) })]),
            Route("/readyz", methods: [(.get, ClosureResponder { [directus] _, context throws(GatewayError) in
                // Ready when Directus answers its ping and the circuit is closed (the ping is the probe when half-open).
                guard await directus.ping(context: context.call), breaker?.state ?? .closed == .closed else {
                    throw .upstreamUnavailable("/server/ping failed or circuit open")
                }
                return .json(200, .object([("status", .string("ready"))]))
            })]),
        ]
        adminRouter = Router(routes: operations + [
            Route("/metrics", methods: [(.get, ClosureResponder { [metrics] _, _ in
                HTTPResponse(status: 200, headers: ["Content-Type": "text/plain; version=0.0.4; charset=utf-8"],
                             body: Data(metrics.render().utf8))
            })]),
        ])
        var routes: [Route] = operations + [
            Route("/api/v1/user/login", methods: [(.post, endpoint([limit], users.login))]),
            Route("/api/v1/user/refresh", methods: [(.post, endpoint([limit], users.refresh))]),
            Route("/api/v1/user/logout", methods: [(.post, endpoint([limit, requiredAuth], users.logout))]),
            Route("/api/v1/user/me", methods: [(.get, endpoint([requiredAuth], users.me))]),
            Route("/api/v1/user", methods: [(.post, endpoint([limit], users.register))]),
        ]
        for resource in config.resources {
            let mapper = ResourceMapper(resource)
            let handlers = ResourceHandlers(mapper: mapper, items: items)
            func guarded(_ action: ResourceAction, item: Bool) -> [any Middleware] {
                let rule = resource.permissions[action] ?? .nobody
                let auth = rule == .public ? optionalAuth : requiredAuth
                let policy = PolicyMiddleware(action: action, rule: rule, mapper: mapper, items: items)
                return item ? [limit, auth, ItemIDMiddleware(mapper: mapper), policy] : [limit, auth, policy]
            }
            let update = endpoint(guarded(.update, item: true), handlers.update)
            let createRule = resource.permissions[.create] ?? .nobody
            let createPolicy = PolicyMiddleware(action: .create, rule: createRule, mapper: mapper, items: items)
            let updateRule = resource.permissions[.update] ?? .nobody
            let updatePolicy = PolicyMiddleware(action: .update, rule: updateRule, mapper: mapper, items: items)
            // POST: authenticate (demanded up front unless create or update is public), parse the body once,
            // then the chosen action's requirement and policy.
            let postAuth = createRule == .public || updateRule == .public ? optionalAuth : requiredAuth
            let createOrUpdate = CreateOrUpdateResponder(
                mapper: mapper,
                create: [AuthenticationRequirement(rule: createRule), createPolicy].wrapping(ClosureResponder(handlers.create)),
                update: [AuthenticationRequirement(rule: updateRule), ItemIDMiddleware(mapper: mapper), updatePolicy]
                    .wrapping(ClosureResponder(handlers.update)))
            let name = resource.name
            routes.append(Route("/api/v1/\(name)", resource: name, methods: [
                (.get, endpoint(guarded(.list, item: false), handlers.list)),
                (.post, [limit, postAuth].wrapping(createOrUpdate)),
            ]))
            routes.append(Route("/api/v1/\(name)/{id}", resource: name, methods: [
                (.get, endpoint(guarded(.read, item: true), handlers.read)),
                (.patch, update),
                (.put, update),
                (.delete, endpoint(guarded(.delete, item: true), handlers.delete)),
            ]))
        }
        router = Router(routes: routes)
    }

    /// Answers one request on the public listener; never throws, every error is rendered here.
    public func handle(_ request: HTTPRequest) async -> HTTPResponse {
        await handle(request, router: router)
    }

    /// Answers one request on the admin listener (operations routes only).
    public func handleAdmin(_ request: HTTPRequest) async -> HTTPResponse {
        await handle(request, router: adminRouter)
    }

    private func handle(_ request: HTTPRequest, router: Router) async -> HTTPResponse {
        var context = RequestContext(requestID: Gateway.requestID(request.headers["X-Request-Id"]), clientIP: clientIP(request))
        var response: HTTPResponse
        let trace = RequestTrace()
        let match = router.match(path: request.path)
        if let match {
            context.routePattern = match.route.pattern
            context.resourceName = match.route.resource
            context.itemID = match.id
        }
        if request.path.utf8.count + request.query.utf8.count > Gateway.maxTargetBytes {
            response = ErrorRenderer.render(GatewayError(status: 414, code: "uri_too_long", message: "request target too long"),
                                            context: context)
        } else if cors.isPreflight(request) {
            response = cors.preflight(request)
        } else if let match {
            if let responder = match.route.responder(for: request.method) {
                let ctx = context
                let outcome = await RequestTrace.$current.withValue(trace) { () async -> Result<HTTPResponse, GatewayError> in
                    do throws(GatewayError) {
                        return .success(try await responder.respond(to: request, context: ctx))
                    } catch {
                        return .failure(error)
                    }
                }
                switch outcome {
                case .success(let answer):
                    response = answer
                case .failure(let error):
                    response = ErrorRenderer.render(error, context: context)
                    log.error(error, context: context)
                }
            } else {
                response = ErrorRenderer.render(.methodNotAllowed(match.route.allowedMethods), context: context)
            }
        } else {
            response = ErrorRenderer.render(.notFound("no such route"), context: context)
        }
        cors.decorate(&response, origin: request.headers["Origin"])
        response.headers.set("X-Request-Id", context.requestID)
        response.headers.set("X-Content-Type-Options", "nosniff")
        if request.path.hasPrefix("/api/") { response.headers.set("Cache-Control", "no-store") }
        let elapsed = ContinuousClock.now - context.startedAt
        metrics.request(route: context.routePattern, method: Gateway.methodLabel(request.method), status: response.status,
                        seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        log.access(request, response, context: context, trace: trace)
        return response
    }

    /// The client's address: the socket peer, or — only when the peer is a trusted proxy — the last
    /// `X-Forwarded-For` entry that is not itself a trusted proxy. Several header lines are one list,
    /// joined in order (RFC 9110): a proxy that adds its own line leaves the client's forged line first.
    func clientIP(_ request: HTTPRequest) -> String {
        let peer = request.remoteAddress
        guard trustedProxies.contains(peer) else { return peer }
        let lines = request.headers.values("X-Forwarded-For")
        guard !lines.isEmpty else { return peer }
        let hops = lines.joined(separator: ",").split(separator: ",")
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        for hop in hops.reversed() where !trustedProxies.contains(hop) {
            return PosternConfig.isIPAddress(hop) ? hop : peer
        }
        return hops.first ?? peer
    }

    /// The answer to a request the server refuses before any handler runs (bad framing → 400, not whole in
    /// time → 408), in the usual error shape; the server closes the connection after it.
    public func refuse(_ refusal: EdgeRefusal) -> HTTPResponse {
        switch refusal {
        case .badFraming(let request, let reason):
            var context = RequestContext(requestID: Gateway.requestID(request.headers["X-Request-Id"]), clientIP: clientIP(request))
            if let match = router.match(path: request.path) {
                context.routePattern = match.route.pattern
                context.resourceName = match.route.resource
            }
            var response = ErrorRenderer.render(.invalidRequest(reason), context: context)
            response.headers.set("X-Request-Id", context.requestID)
            response.headers.set("X-Content-Type-Options", "nosniff")
            if request.path.hasPrefix("/api/") { response.headers.set("Cache-Control", "no-store") }
            metrics.request(route: context.routePattern, method: Gateway.methodLabel(request.method), status: 400, seconds: 0)
            log.access(request, response, context: context, trace: RequestTrace())
            return response
        case .requestTimeout:
            let context = RequestContext(requestID: Gateway.requestID(nil), clientIP: "")
            var response = ErrorRenderer.render(GatewayError(status: 408, code: "request_timeout",
                                                             message: "request not received in time"), context: context)
            response.headers.set("X-Request-Id", context.requestID)
            response.headers.set("X-Content-Type-Options", "nosniff")
            return response
        }
    }

    /// A bounded method label for metrics.
    static func methodLabel(_ method: HTTPMethod) -> String {
        if case .other = method { return "OTHER" }
        return method.description
    }

    /// The client's request id when it is safe (`[A-Za-z0-9._-]{1,128}`), else a new one.
    static func requestID(_ given: String?) -> String {
        if let given, !given.isEmpty, given.utf8.count <= 128, given.utf8.allSatisfy({ b in
            (b >= 48 && b <= 57) || (b >= 65 && b <= 90) || (b >= 97 && b <= 122) || b == 46 || b == 95 || b == 45
        }) {
            return given
        }
        return Crypto.hex(Crypto.randomBytes(12))
    }
}
