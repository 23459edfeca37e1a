/// One method of one route: its stages in their fixed order — body limit → authentication → identity
/// requirement → `{id}` check → policy → handler — run one after another in one frame, rather than as a
/// chain of middlewares each awaiting the next (every level of such nesting is an async frame holding the
/// request and its context, allocated per request). Built once; absent stages are skipped.
struct Endpoint: Responder {
    /// A route's final stage.
    typealias Handler = @Sendable (HTTPRequest, RequestContext) async throws(GatewayError) -> HTTPResponse

    /// The body-size limit.
    var limit: BodyLimitMiddleware?
    /// Attaches the bearer token's session (required or optional).
    var authentication: AuthenticationMiddleware?
    /// Demands a session unless the rule is public (after an optional authentication).
    var requirement: AuthenticationRequirement?
    /// Refuses `{id}` values that are not keys of the collection.
    var itemID: ItemIDMiddleware?
    /// Evaluates the route's permission rule.
    var policy: PolicyMiddleware?
    /// The handler.
    let handler: Handler

    /// An endpoint of `handler` behind the given stages.
    init(limit: BodyLimitMiddleware? = nil, authentication: AuthenticationMiddleware? = nil,
         requirement: AuthenticationRequirement? = nil, itemID: ItemIDMiddleware? = nil, policy: PolicyMiddleware? = nil,
         handler: @escaping Handler) {
        self.limit = limit
        self.authentication = authentication
        self.requirement = requirement
        self.itemID = itemID
        self.policy = policy
        self.handler = handler
    }

    /// An endpoint that answers every request with `error`, rendered (not thrown: 404 and 405 are not
    /// logged as errors).
    init(answering error: GatewayError) {
        self.init { _, context in ErrorRenderer.render(error, context: context) }
    }

    /// Runs the stages, then the handler.
    func respond(to request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        var context = context
        return try await respond(to: request, context: &context)
    }

    /// Runs the stages, which enrich `context` (session, authorization) in place, then the handler.
    func respond(to request: HTTPRequest, context: inout RequestContext) async throws(GatewayError) -> HTTPResponse {
        try limit?.check(request)
        if let authentication { try await authentication.authenticate(request, context: &context) }
        try requirement?.check(context)
        try itemID?.check(context)
        if let policy, try policy.decide(&context) { try await policy.verifyOwner(&context) }
        return try await handler(request, context)
    }
}
