import PosternHTTP

/// One request's place on its one path through the gateway: its context, the endpoint that answers it, and what
/// comes next. The edge's first, synchronous part makes it (`EdgeStages.prepare`, through `Endpoint.prepare`:
/// every stage that needs no `await`, and a list or read's micro-cache lookup); the loop thread's immediate path
/// sends it at once when it is answered, else hands it, typed, to the asynchronous path
/// (`HTTPRequestHandler.Prepared`), which goes on from `next` (`Endpoint.complete`) and never runs a stage twice.
struct RequestStep: Sendable {
    /// The request's context (its access-log trace inside).
    let context: RequestContext
    /// The endpoint that answers it (the 404 one when no route matched).
    let endpoint: Endpoint
    /// What comes next.
    var next: Next

    /// Where a request stands: answered, or the step `Endpoint.complete` goes on from.
    enum Next: Sendable {
        /// Answered (a micro-cache hit, an item the policy stage read, an error): nothing left to run.
        case answered(HTTPResponse)
        /// The token's session is not in the session cache (or a per-token limit is to be claimed): the
        /// authentication, then every stage after it.
        case authenticate
        /// Every check passed; the policy must still read the item's owner upstream, then the operation.
        case verifyOwner
        /// Every stage passed: the handler.
        case handle
        /// Every stage passed and a list or read's lookup missed: its upstream read.
        case fetch(UpstreamRead)
    }
}

/// The upstream read of a list or read whose micro-cache lookup missed: its target, built once, and the key its
/// answer is stored under.
struct UpstreamRead: Sendable {
    /// What is sent to Directus (its path and query also make `key`).
    let target: UpstreamTarget
    /// The answer's micro-cache key (nil when the resource is not cached).
    let key: CacheKey?
}
