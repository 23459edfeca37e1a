import PosternHTTP

/// The entry point of a composite endpoint's parts (docs/api.md, Composite endpoints).
extension Router {
    /// Runs one part of a composite: routes `request` (a GET the composite synthesized: the part's path, its
    /// `{name}` values put in, and its query) and answers it through that route's endpoint — its stages, mapping
    /// and micro-cache — on behalf of `caller`, whose identity the composite has authenticated already (its
    /// session is the part's; no token is read again and no per-token rate limit is claimed again, but a route
    /// that requires an identity still answers 401 without one). The answer is the part's body as the direct
    /// call would give it: a success, or the error rendered in the usual envelope (its status and code, the empty
    /// collection of a resource route), which the composite turns into its `errors` entry. No path not matched
    /// by a route (404) and no method the route lacks (405) reaches an endpoint.
    ///
    /// Nothing of the edge runs: no access-log line, no request counted in the metrics, no CORS or `X-Request-Id`
    /// header — those belong to the composite's own answer. The part's upstream calls carry the caller's request id
    /// and trace, count in the upstream metrics, and add their time to the caller's access-log line.
    func answerPart(_ request: HTTPRequest, for caller: RequestContext) async -> HTTPResponse {
        let context = RequestContext(partOf: caller)
        guard let match = match(path: request.path) else {
            return ErrorRenderer.render(.notFound("no such route"), context: context)
        }
        context.routePattern = match.route.pattern
        context.resourceName = match.route.resource
        context.itemID = match.id
        do throws(GatewayError) {
            return try await match.route.responder(for: request.method).answerPart(request, context: context)
        } catch {
            return ErrorRenderer.render(error, context: context)
        }
    }
}

extension Endpoint {
    /// The endpoint's answer to a composite's part (`Router.answerPart`): the same steps as any request, with the
    /// identity in `context` taken as authenticated (`prepare(_:_:identified:)`).
    func answerPart(_ request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        try await complete(request, context, from: prepare(request, context, identified: true))
    }
}
