/// One method of one route: its stages in their fixed order — body limit → authentication → identity
/// requirement → `{id}` check → policy → handler — run one after another in one frame, rather than as a
/// chain of middlewares each awaiting the next (every level of such nesting is an async frame holding the
/// request and its context, allocated per request). Built once; absent stages are skipped. A class: the
/// stages hold resource mappers, and the routing hands the endpoint on with one retain, not a copy of those.
final class Endpoint: Responder {
    /// A route's final stage.
    typealias Handler = @Sendable (HTTPRequest, RequestContext) async throws(GatewayError) -> HTTPResponse
    /// A route's final stage when it can answer without suspending (e.g. a fresh micro-cache answer); nil when
    /// `Handler` must run.
    typealias ImmediateHandler = @Sendable (HTTPRequest, RequestContext) throws(GatewayError) -> HTTPResponse?

    /// The body-size limit.
    let limit: BodyLimitMiddleware?
    /// Attaches the bearer token's session (required or optional).
    let authentication: AuthenticationMiddleware?
    /// Demands a session unless the rule is public (after an optional authentication).
    let requirement: AuthenticationRequirement?
    /// Refuses `{id}` values that are not keys of the collection.
    let itemID: ItemIDMiddleware?
    /// Evaluates the route's permission rule.
    let policy: PolicyMiddleware?
    /// The handler.
    let handler: Handler
    /// The handler's answer when it is ready without suspending (tried by `respondImmediately`).
    let immediate: ImmediateHandler?
    /// `policy`'s decision, called through its closure: the stage is read in place there, where calling it
    /// through the optional property copies it (a retain of each of its parts) on every request.
    private let decide: (@Sendable (RequestContext) throws(GatewayError) -> Bool)?

    /// An endpoint of `handler` behind the given stages; `immediate`, when given, answers what it can without
    /// suspending, exactly as `handler` would.
    init(limit: BodyLimitMiddleware? = nil, authentication: AuthenticationMiddleware? = nil,
         requirement: AuthenticationRequirement? = nil, itemID: ItemIDMiddleware? = nil, policy: PolicyMiddleware? = nil,
         immediate: ImmediateHandler? = nil, handler: @escaping Handler) {
        self.immediate = immediate
        self.limit = limit
        self.authentication = authentication
        self.requirement = requirement
        self.itemID = itemID
        self.policy = policy
        if let policy {
            decide = { (context: RequestContext) throws(GatewayError) -> Bool in try policy.decide(context) }
        } else {
            decide = nil
        }
        self.handler = handler
    }

    /// An endpoint that answers every request with `error`, rendered (not thrown: 404 and 405 are not
    /// logged as errors).
    convenience init(answering error: GatewayError) {
        self.init { _, context in ErrorRenderer.render(error, context: context) }
    }

    /// Runs the stages, which enrich `context` (session, authorization) in place, then the handler.
    func respond(to request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        try limit?.check(request)
        if let authentication, try !authentication.authenticateFromCache(request, context: context, trace: RequestTrace.current) {
            try await authentication.authenticate(request, context: context)
        }
        if try checkAfterAuthentication(context), let policy { try await policy.verifyOwner(context) }
        return try await handler(request, context)
    }

    /// The same stages and answer as `respond`, when every stage and the handler can run without suspending
    /// (the session cached, no owner to read upstream, `immediate` answering); nil when `respond` must run
    /// instead (from the start: a stage run here changes nothing that running it again would not). `trace` is
    /// the request's access-log trace.
    func respondImmediately(to request: HTTPRequest, context: RequestContext,
                            trace: RequestTrace?) throws(GatewayError) -> HTTPResponse? {
        guard let immediate else { return nil }
        try limit?.check(request)
        if let authentication, try !authentication.authenticateFromCache(request, context: context, trace: trace) {
            return nil
        }
        if try checkAfterAuthentication(context) { return nil }
        return try immediate(request, context)
    }

    /// The identity requirement, the `{id}` check and the policy's decision; true when the policy must still
    /// read the item's owner. Synchronous and not inlined: its errors stay off the async frame.
    @inline(never)
    private func checkAfterAuthentication(_ context: RequestContext) throws(GatewayError) -> Bool {
        try requirement?.check(context)
        try itemID?.check(context)
        guard let decide else { return false }
        return try decide(context)
    }
}
