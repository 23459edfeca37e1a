/// One method of one route: its stages in their fixed order — body limit → authentication → identity
/// requirement → `{id}` check → policy → operation — run one after another in one frame, rather than as a
/// chain of middlewares each awaiting the next (every level of such nesting is an async frame holding the
/// request and its context, allocated per request). Built once, from one description per route method (the
/// stages it has, and its `Operation`); absent stages are skipped. A class: the stages hold resource mappers,
/// and the routing hands the endpoint on with one retain, not a copy of those.
///
/// A request goes through it in two steps, the same on every path (the immediate one, the asynchronous one, a
/// composite's part): `prepare` runs every stage that needs no `await` (and a read's micro-cache lookup), as far
/// as they go without one, and says what comes next (`RequestStep.Next`); `complete` goes on from there, one
/// step after another, to the answer. No stage runs twice.
import PosternHTTP

final class Endpoint: Sendable {
    /// A route's final stage, when it is a plain handler.
    typealias Handler = @Sendable (HTTPRequest, RequestContext) async throws(GatewayError) -> HTTPResponse

    /// A list or read of a resource: the operation the immediate path can answer, and a composite's part runs.
    struct Read: Sendable {
        /// The part that needs no `await`: the answer when it is ready (a fresh micro-cache answer, an item the
        /// policy stage read), else the upstream read to make (`.fetch`).
        let lookUp: @Sendable (HTTPRequest, RequestContext) throws(GatewayError) -> RequestStep.Next
        /// The rest: the upstream read `lookUp` prepared.
        let fetch: @Sendable (RequestContext, UpstreamRead) async throws(GatewayError) -> HTTPResponse
        /// `fetch` without a task, on an event loop's thread: false, with nothing done, when it cannot start there
        /// (`fetch` then); else true, and the `LaterFetch` gets `fetch`'s answer or error (`finished`), once, on the
        /// loop thread.
        let start: Start

        /// See `start`.
        typealias Start = @Sendable (RequestContext, UpstreamRead, LaterFetch) -> Bool
    }

    /// What the endpoint does once every stage passed.
    enum Operation: Sendable {
        /// A plain handler (writes, the user routes, operations).
        case handler(Handler)
        /// A list or read, looked up without an `await` first.
        case read(Read)
    }

    /// A list or read's `Read.start`, for the gateway's path without a task (nil for any other operation). Kept
    /// apart from `operation`: reading it there copied the whole operation (a retain of each of its closures).
    let startFetch: Read.Start?

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
    /// What it does once every stage passed.
    private let operation: Operation
    /// `policy`'s decision, called through its closure: the stage is read in place there, where calling it
    /// through the optional property copies it (a retain of each of its parts) on every request.
    private let decide: (@Sendable (RequestContext) throws(GatewayError) -> Bool)?

    /// An endpoint of `handler` behind the given stages.
    convenience init(limit: BodyLimitStage? = nil, authentication: AuthenticationStage? = nil,
                     requirement: AuthenticationRequirement? = nil, itemID: ItemIDStage? = nil,
                     policy: PolicyStage? = nil, handler: @escaping Handler) {
        self.init(limit: limit, authentication: authentication, requirement: requirement, itemID: itemID, policy: policy,
                  operation: .handler(handler))
    }

    /// An endpoint of `operation` behind the given stages.
    init(limit: BodyLimitStage? = nil, authentication: AuthenticationStage? = nil, requirement: AuthenticationRequirement? = nil,
         itemID: ItemIDStage? = nil, policy: PolicyStage? = nil, operation: Operation) {
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
        self.operation = operation
        if case .read(let read) = operation { startFetch = read.start } else { startFetch = nil }
    }

    /// An endpoint that answers every request with `error`, rendered (not thrown: 404 and 405 are not
    /// logged as errors).
    convenience init(answering error: GatewayError) {
        self.init { _, context in ErrorRenderer.render(error, context: context) }
    }

    /// Runs the stages that need no `await`, in order, filling in `context` (session, authorization), up to the
    /// first that needs one; a read's lookup too when every stage passed. `identified`: the caller's identity was
    /// established already (a composite's part, `context` holding the composite's session), so the authentication
    /// stage only demands one where it is required. Not inlined: its work and errors stay off the caller's async frame.
    @inline(never)
    func prepare(_ request: HTTPRequest, _ context: RequestContext, identified: Bool = false) throws(GatewayError) -> RequestStep.Next {
        try limit?.check(request)
        if let authentication {
            if identified {
                if authentication.required && context.session == nil { throw .unauthorized("missing bearer token") }
            } else if try !authentication.authenticateFromCache(request, context: context) {
                return .authenticate
            }
        }
        return try afterAuthentication(request, context)
    }

    /// Goes on from `next` (`prepare`'s) to the answer: each step that needs an `await`, then what follows it,
    /// until the operation answers.
    func complete(_ request: HTTPRequest, _ context: RequestContext,
                  from first: RequestStep.Next) async throws(GatewayError) -> HTTPResponse {
        var next = first
        while true {
            switch consume next {
            case .answered(let response):
                return response
            case .fetch(let read):
                guard case .read(let operation) = operation else { break }
                return try await operation.fetch(context, read)
            case .handle:
                guard case .handler(let handler) = operation else { break }
                return try await handler(request, context)
            case .authenticate:
                guard let authentication else { break }
                try await authentication.authenticate(request, context: context)
                next = try afterAuthentication(request, context)
                continue
            case .verifyOwner:
                guard let policy else { break }
                try await policy.verifyOwner(context)
                next = try operationStart(request, context)
                continue
            }
            // Not reached: `prepare` gives a step only when its stage (or that kind of operation) is there.
            throw .internalError("an endpoint step without its stage")
        }
    }

    /// The whole endpoint, `prepare` then `complete` (a stage that dispatches to another endpoint).
    func respond(to request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        try await complete(request, context, from: prepare(request, context))
    }

    /// The stages after authentication, then the operation's start, as far as they go without an `await`.
    @inline(never)
    private func afterAuthentication(_ request: HTTPRequest, _ context: RequestContext) throws(GatewayError) -> RequestStep.Next {
        if try checkAfterAuthentication(context) { return .verifyOwner }
        return try operationStart(request, context)
    }

    /// The operation's part that needs no `await`: a read's answer or upstream read, else `.handle`.
    private func operationStart(_ request: HTTPRequest, _ context: RequestContext) throws(GatewayError) -> RequestStep.Next {
        guard case .read(let read) = operation else { return .handle }
        return try read.lookUp(request, context)
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
