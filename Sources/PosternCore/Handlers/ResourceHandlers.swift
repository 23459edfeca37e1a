import FoundationEssentials
import PosternHTTP
import PosternIO

/// The resource routes' final stages: map the request to one Directus call and the answer back.
/// Permissions were decided before these run (PolicyStage); handlers never check them.
final class ResourceHandlers: Sendable {
    let mapper: ResourceMapper
    let items: DirectusItems<SessionManager>
    /// Learns from list answers whether the collection exists (for `/readyz`).
    let schema: SchemaWatch?
    /// The micro-cache for list and read answers; writes invalidate the collection through it.
    let cache: ResourceCache
    /// The errors a call may be answered with, built once (not one message string per request).
    private let notFound: GatewayError
    private let listForbidden: GatewayError
    private let createForbidden: GatewayError
    /// The upstream target of a list without list parameters and not narrowed to the owner (the plain list),
    /// built once instead of percent-encoding the same query on every call.
    let plainList: UpstreamTarget

    /// The handlers of `mapper`'s resource.
    init(mapper: ResourceMapper, items: DirectusItems<SessionManager>, schema: SchemaWatch? = nil, cache: ResourceCache) {
        self.mapper = mapper
        self.items = items
        self.schema = schema
        self.cache = cache
        notFound = .notFound("no such \(mapper.resource.name) item")
        listForbidden = .forbidden("you may not list \(mapper.resource.name)")
        createForbidden = .forbidden("you may not create \(mapper.resource.name)")
        plainList = UpstreamTarget(plainListOf: mapper.upstreamCollectionPath, query: mapper.defaultListQuery)
    }

    private var directus: DirectusClient { items.directus }

    /// `GET /api/v1/R` on a miss: the upstream list `lookUpList` prepared, through the micro-cache (stored, or
    /// joined to an identical call in flight) when the resource is cached.
    func list(_ context: RequestContext, _ call: UpstreamRead) async throws(GatewayError) -> HTTPResponse {
        // Not cached: called directly (a call through the cache's closure keeps a hop of executor after it).
        guard call.key != nil else { return try await listFromDirectus(context, call) }
        return try await cache.respond(key: call.key) { () async throws(GatewayError) -> HTTPResponse in
            try await listFromDirectus(context, call)
        }
    }

    /// `list`'s answer from Directus.
    @inline(__always)
    private func listFromDirectus(_ context: RequestContext, _ call: UpstreamRead) async throws(GatewayError) -> HTTPResponse {
        let body: Result<HTTPBody, GatewayError>
        do throws(GatewayError) {
            body = .success(try await items.read(call.target, mapper: mapper, session: context.session, call: context.call,
                                                 forbidden: listForbidden))
        } catch {
            body = .failure(error)
        }
        return try listAnswer(body, context)
    }

    /// The client's answer to a list from Directus's (its body, or the error reading it), and what it says of the
    /// collection (`schema`).
    private func listAnswer(_ body: Result<HTTPBody, GatewayError>, _ context: RequestContext) throws(GatewayError) -> HTTPResponse {
        let collection = mapper.resource.collection
        switch body {
        case .success(let data):
            schema?.succeeded(collection: collection)
            return .apiJSON(200, content: try mapper.renderer.renderList(directusBody: data))
        case .failure(let error):
            // A signed-in caller refused a whole collection: it is missing (or the app role cannot read it).
            if error.status == 403, context.session != nil { schema?.listForbidden(collection: collection) }
            throw error
        }
    }

    /// `list` without a task, for a resource that is not cached: false, with nothing done, when it cannot start here
    /// (`DirectusItems.startToken`: `list` then); else `later` gets `list`'s answer or error (`LaterFetch.finished`),
    /// once, on the loop thread.
    func startList(_ context: RequestContext, _ call: UpstreamRead, _ later: LaterFetch) -> Bool {
        startFetch(.list, context, call, later)
    }

    /// `read` without a task, as `startList`.
    func startRead(_ context: RequestContext, _ call: UpstreamRead, _ later: LaterFetch) -> Bool {
        startFetch(.read, context, call, later)
    }

    /// Which of the two reads a fetch without a task answers.
    private enum FetchKind {
        case list, read
    }

    /// `startList` and `startRead`: one closure for the whole call (the upstream outcome comes straight to it).
    private func startFetch(_ kind: FetchKind, _ context: RequestContext, _ call: UpstreamRead,
                            _ later: LaterFetch) -> Bool {
        guard call.key == nil, let token = items.startToken(context.session) else { return false }
        let target = call.target
        let start = MonotonicInstant.now
        let refused = items.startRead(target, token: token, call: context.call) { [self] outcome in
            fetched(kind, items.readOutcome(outcome, since: start, call: context.call), target, context, later)
        }
        if let refused { fetched(kind, .failure(refused), target, context, later) }
        return true
    }

    /// A fetch's Directus body or error, made into the client's answer as `list` or `read` makes it, for `later`.
    private func fetched(_ kind: FetchKind, _ body: Result<HTTPBody, DirectusError>, _ target: UpstreamTarget,
                         _ context: RequestContext, _ later: LaterFetch) {
        switch body {
        case .success(let data):
            later.finished(answer(kind, .success(data), context))
        case .failure(let error):
            failed(error, target, forbidden: kind == .list ? listForbidden : notFound, context) { [self] body in
                later.finished(answer(kind, body, context))
            }
        }
    }

    /// The client's answer (or error) to a fetch's body (or error).
    private func answer(_ kind: FetchKind, _ body: Result<HTTPBody, GatewayError>,
                        _ context: RequestContext) -> Result<HTTPResponse, GatewayError> {
        Result { () throws(GatewayError) in
            switch kind {
            case .list: try listAnswer(body, context)
            case .read: try readAnswer(body)
            }
        }
    }

    /// A read started without a task failed with Directus's `error`: translated as `DirectusItems.read` translates it,
    /// or, when Directus called the caller's token stale, read once more with a fresh one in a task of the loop
    /// (rare: the refresh needs `await`s). `finish` gets the outcome on the loop thread.
    private func failed(_ error: DirectusError, _ target: UpstreamTarget, forbidden: GatewayError, _ context: RequestContext,
                        _ finish: @escaping (Result<HTTPBody, GatewayError>) -> Void) {
        guard error.isStaleToken, let session = context.session else {
            return finish(.failure(items.translated(error, mapper: mapper, forbidden: forbidden)))
        }
        let done = UncheckedSendable(finish)
        Task(executorPreference: EventLoop.current) { [self] in
            do throws(GatewayError) {
                let body = try await items.retriedWithFreshToken(session, mapper: mapper, call: context.call,
                                                                 forbidden: forbidden) { (token) async throws(DirectusError) -> HTTPBody in
                    try await items.directus.read(target, token: token, context: context.call)
                }
                done.value(.success(body))
            } catch {
                done.value(.failure(error))
            }
        }
    }

    /// `GET /api/v1/R/{id}` on a miss: the upstream read `lookUpRead` prepared, through the micro-cache when
    /// the resource is cached.
    func read(_ context: RequestContext, _ call: UpstreamRead) async throws(GatewayError) -> HTTPResponse {
        guard call.key != nil else { return try await readFromDirectus(context, call) }
        return try await cache.respond(key: call.key) { () async throws(GatewayError) -> HTTPResponse in
            try await readFromDirectus(context, call)
        }
    }

    /// `read`'s answer from Directus.
    @inline(__always)
    private func readFromDirectus(_ context: RequestContext, _ call: UpstreamRead) async throws(GatewayError) -> HTTPResponse {
        let body = try await items.read(call.target, mapper: mapper, session: context.session, call: context.call,
                                        forbidden: notFound)
        return try readAnswer(.success(body))
    }

    /// The client's answer to a read from Directus's (its body, or the error reading it).
    private func readAnswer(_ body: Result<HTTPBody, GatewayError>) throws(GatewayError) -> HTTPResponse {
        .apiJSON(200, content: try mapper.detailRenderer.renderItem(directusBody: try body.get()))
    }

    /// `POST /api/v1/R` without an `id`.
    func create(_ request: HTTPRequest, _ context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let payload = try parsedPayload(request, context, mode: .create)
        let path = mapper.upstreamCollectionPath
        defer { cache.invalidate() }  // before the response is sent; also on errors (the write may have landed)
        let body = try await items.withToken(context.session, mapper: mapper, call: context.call,
                                             forbidden: createForbidden) {
            (token) async throws(DirectusError) -> Data? in
            try await directus.createItem(path: path, payload: payload.payload, fields: mapper.directusFieldList,
                                          token: token, context: context.call)
        }
        // Directus answers 204 when the caller cannot read the new row: without its id it cannot be read back.
        guard let body else { throw .upstreamError("Directus created the item but did not return it") }
        return .apiJSON(201, content: try mapper.renderer.renderItem(directusBody: .data(body)))
    }

    /// `PATCH`/`PUT /api/v1/R/{id}`, and `POST /api/v1/R` with an `id` (answered 200).
    func update(_ request: HTTPRequest, _ context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let id = try itemID(context)
        let payload = try parsedPayload(request, context, mode: .update)
        let path = mapper.upstreamItemPath(id: id)
        defer { cache.invalidate() }  // before the response is sent; also on errors (the write may have landed)
        // Ownership was checked before (when the rule needs it); a Directus 403 now means Directus itself refused.
        let forbidden: GatewayError = ownerVerified(context) ? .forbidden("Directus refused the update") : notFound
        let body = try await items.withToken(context.session, mapper: mapper, call: context.call, forbidden: forbidden) {
            (token) async throws(DirectusError) -> Data? in
            try await directus.updateItem(path: path, payload: payload.payload, fields: mapper.directusFieldList,
                                          token: token, context: context.call)
        }
        if let body { return .apiJSON(200, content: try mapper.renderer.renderItem(directusBody: .data(body))) }
        // 204: updated without read-back. Read it back; failing that, the answer is unusable.
        do {
            let readBack = try await items.readItem(id: id, mapper: mapper, session: context.session, call: context.call)
            return .apiJSON(200, content: try mapper.detailRenderer.renderItem(directusBody: readBack))
        } catch {
            throw .upstreamError("updated item could not be read back: \(error)")
        }
    }

    /// `DELETE /api/v1/R/{id}`.
    func delete(_ request: HTTPRequest, _ context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let path = mapper.upstreamItemPath(id: try itemID(context))
        let forbidden: GatewayError = ownerVerified(context) ? .forbidden("Directus refused the delete") : notFound
        defer { cache.invalidate() }  // before the response is sent; also on errors (the write may have landed)
        try await items.withToken(context.session, mapper: mapper, call: context.call, forbidden: forbidden) {
            (token) async throws(DirectusError) -> Void in
            try await directus.deleteItem(path: path, token: token, context: context.call)
        }
        return HTTPResponse(status: 204)
    }

    private func parsedPayload(_ request: HTTPRequest, _ context: RequestContext,
                               mode: ResourceMapper.WriteMode) throws(GatewayError) -> ResourceMapper.WritePayload {
        if let parsed = context.parsedWriteBody { return parsed }
        return try mapper.writePayload(request.body, mode: mode)
    }

    /// True when the policy stage saw the caller own the item (a later Directus 403 is then not "missing").
    private func ownerVerified(_ context: RequestContext) -> Bool {
        if case .ownerVerified = context.authorization { return true }
        return false
    }

    /// The request's `{id}` (404 when it has none).
    func itemID(_ context: RequestContext) throws(GatewayError) -> String {
        guard let id = context.itemID else { throw notFound }
        return id
    }
}

/// `POST /api/v1/R`: parses the body once; a body carrying an `id` takes the update route (and its
/// policy) instead of create — the tutorial server's compatibility rule.
struct CreateOrUpdateResponder: Sendable {
    let mapper: ResourceMapper
    let create: Endpoint
    let update: Endpoint

    func respond(to request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        let payload = try mapper.writePayload(request.body, mode: .createOrUpdate)
        context.parsedWriteBody = payload
        guard let id = payload.id else { return try await create.respond(to: request, context: context) }
        context.itemID = id
        return try await update.respond(to: request, context: context)
    }
}
