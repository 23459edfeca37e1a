/// One method of one route: its stages in their fixed order — body limit → authentication → identity
/// requirement → `{id}` check → policy → handler — run one after another in one frame, rather than as a
/// chain of middlewares each awaiting the next (every level of such nesting is an async frame holding the
/// request and its context, allocated per request). Built once; absent stages are skipped. A class: the
/// stages hold resource mappers, and the routing hands the endpoint on with one retain, not a copy of those.
///
/// A request goes through it in two steps, the same on both of the gateway's paths: `prepare` runs every stage
/// that needs no `await` (and a list or read handler's micro-cache lookup), as far as they go without one, and
/// says where it stopped (`Progress`); `complete` goes on from there. The loop thread's immediate path sends
/// `prepare`'s answer at once, or hands its `Progress` to the asynchronous path, which never runs a stage twice.
import PosternHTTP

final class Endpoint: Sendable {
    /// A route's final stage.
    typealias Handler = @Sendable (HTTPRequest, RequestContext) async throws(GatewayError) -> HTTPResponse
    /// The part of a list or read handler that needs no `await`: the answer when it is ready (a fresh micro-cache
    /// answer, an item the policy stage read), else the upstream read to make (`.fetch`).
    typealias Lookup = @Sendable (HTTPRequest, RequestContext) throws(GatewayError) -> Progress
    /// The rest of a list or read handler: the upstream read its `Lookup` prepared.
    typealias Fetch = @Sendable (HTTPRequest, RequestContext, Read) async throws(GatewayError) -> HTTPResponse

    /// The upstream read a list or read handler's lookup prepared on a miss, with the cache key it looked under.
    struct Read: Sendable {
        /// The list's upstream target (path and query), or the item id of a read.
        let subject: String
        /// The answer's micro-cache key (nil when the resource is not cached).
        let key: CacheKey?
    }

    /// Where a request stands after `prepare`: answered, or the step `complete` goes on from.
    enum Progress: Sendable {
        /// Answered (a micro-cache hit, an item read by the policy stage): nothing left to run.
        case answered(HTTPResponse)
        /// The token's session is not in the session cache (or a per-token limit is to be claimed): the
        /// authentication, then every stage after it.
        case authenticate
        /// Every check passed; the policy must still read the item's owner upstream, then the handler.
        case verifyOwner
        /// Every stage passed: the handler.
        case handle
        /// Every stage passed and the handler's lookup missed: its upstream read.
        case fetch(Read)
    }

    /// The final stage: a plain handler, or a lookup and its upstream read.
    private enum Final: Sendable {
        case handler(Handler)
        case lookup(Lookup, Fetch)
    }

    /// The body-size limit.
    let limit: BodyLimitStage?
    /// Attaches the bearer token's session (required or optional).
    let authentication: AuthenticationStage?
    /// Demands a session unless the rule is public (after an optional authentication).
    let requirement: AuthenticationRequirement?
    /// Refuses `{id}` values that are not keys of the collection.
    let itemID: ItemIDStage?
    /// Evaluates the route's permission rule.
    let policy: PolicyStage?
    /// The handler.
    private let final: Final
    /// `policy`'s decision, called through its closure: the stage is read in place there, where calling it
    /// through the optional property copies it (a retain of each of its parts) on every request.
    private let decide: (@Sendable (RequestContext) throws(GatewayError) -> Bool)?

    /// An endpoint of `handler` behind the given stages.
    convenience init(limit: BodyLimitStage? = nil, authentication: AuthenticationStage? = nil,
                     requirement: AuthenticationRequirement? = nil, itemID: ItemIDStage? = nil,
                     policy: PolicyStage? = nil, handler: @escaping Handler) {
        self.init(limit: limit, authentication: authentication, requirement: requirement, itemID: itemID, policy: policy,
                  final: .handler(handler))
    }

    /// An endpoint whose handler is `lookup` (without suspending) and, when it misses, `fetch`.
    convenience init(limit: BodyLimitStage? = nil, authentication: AuthenticationStage? = nil,
                     requirement: AuthenticationRequirement? = nil, itemID: ItemIDStage? = nil,
                     policy: PolicyStage? = nil, lookup: @escaping Lookup, fetch: @escaping Fetch) {
        self.init(limit: limit, authentication: authentication, requirement: requirement, itemID: itemID, policy: policy,
                  final: .lookup(lookup, fetch))
    }

    private init(limit: BodyLimitStage?, authentication: AuthenticationStage?, requirement: AuthenticationRequirement?,
                 itemID: ItemIDStage?, policy: PolicyStage?, final: Final) {
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
        self.final = final
    }

    /// An endpoint that answers every request with `error`, rendered (not thrown: 404 and 405 are not
    /// logged as errors).
    convenience init(answering error: GatewayError) {
        self.init { _, context in ErrorRenderer.render(error, context: context) }
    }

    /// Runs the stages that need no `await`, in order, filling in `context` (session, authorization), up to the
    /// first that needs one; a lookup handler's lookup too when every stage passed. `trace` is the request's
    /// access-log trace. Not inlined: its work and errors stay off the caller's async frame.
    @inline(never)
    func prepare(_ request: HTTPRequest, _ context: RequestContext, trace: RequestTrace?) throws(GatewayError) -> Progress {
        try limit?.check(request)
        if let authentication, try !authentication.authenticateFromCache(request, context: context, trace: trace) {
            return .authenticate
        }
        return try afterAuthentication(request, context)
    }

    /// Goes on from `progress` (`prepare`'s) to the answer: the steps that need an `await`, and what follows them.
    func complete(_ request: HTTPRequest, _ context: RequestContext, from progress: Progress) async throws(GatewayError) -> HTTPResponse {
        switch progress {
        case .answered(let response):
            return response
        case .fetch(let read):
            if case .lookup(_, let fetch) = final { return try await fetch(request, context, read) }
        case .handle:
            if case .handler(let handler) = final { return try await handler(request, context) }
        case .authenticate:
            if let authentication {
                try await authentication.authenticate(request, context: context)
                return try await complete(request, context, from: afterAuthentication(request, context))
            }
        case .verifyOwner:
            if let policy {
                try await policy.verifyOwner(context)
                return try await complete(request, context, from: handlerStart(request, context))
            }
        }
        // Not reached: `prepare` gives a step only when its stage (or that kind of handler) is there.
        throw .internalError("an endpoint step without its stage")
    }

    /// The whole endpoint, `prepare` then `complete` (a stage that dispatches to another endpoint).
    func respond(to request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        try await complete(request, context, from: prepare(request, context, trace: RequestTrace.current))
    }

    /// The stages after authentication, then the handler's start, as far as they go without an `await`.
    @inline(never)
    func afterAuthentication(_ request: HTTPRequest, _ context: RequestContext) throws(GatewayError) -> Progress {
        if try checkAfterAuthentication(context) { return .verifyOwner }
        return try handlerStart(request, context)
    }

    /// The handler's part that needs no `await`: a lookup's answer or read, else `.handle`.
    private func handlerStart(_ request: HTTPRequest, _ context: RequestContext) throws(GatewayError) -> Progress {
        guard case .lookup(let lookup, _) = final else { return .handle }
        return try lookup(request, context)
    }

    /// The identity requirement, the `{id}` check and the policy's decision; true when the policy must still
    /// read the item's owner.
    private func checkAfterAuthentication(_ context: RequestContext) throws(GatewayError) -> Bool {
        try requirement?.check(context)
        try itemID?.check(context)
        guard let decide else { return false }
        return try decide(context)
    }
}
