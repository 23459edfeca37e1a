import FoundationEssentials
import PosternIO
import PosternHTTP

/// The tokens Directus hands out on login and refresh.
package struct DirectusTokens: Sendable, Equatable {
    /// The access JWT.
    var accessToken: String
    /// The refresh token (rotates on every refresh).
    var refreshToken: String
    /// Access-token lifetime in milliseconds.
    var expiresMs: Int64
}

/// Directus's REST API as typed calls: auth, users, items, ping.
package struct DirectusClient: Sendable {
    /// The transport with the circuit breaker and the upstream metrics (one object: a copy of the client retains
    /// one reference, not each of them).
    private let upstream: Upstream
    /// Upstream timeout in seconds.
    let timeout: Double

    /// Creates a client over `transport`; its calls go through `breaker` and are counted in `metrics` (a breaker
    /// that never opens and metrics nobody reads when nil, as in tests of the client alone).
    package init(transport: any UpstreamTransport, timeout: Double, breaker: CircuitBreaker? = nil, metrics: Metrics? = nil) {
        upstream = Upstream(transport: transport, breaker: breaker ?? CircuitBreaker(threshold: .max, openSeconds: 0),
                            metrics: metrics ?? Metrics())
        self.timeout = timeout
    }

    /// What the client sends through.
    private final class Upstream: Sendable {
        let transport: any UpstreamTransport
        /// `transport` when it is the event loops' own (the gateway's): called directly, the call needs no switch
        /// of executor after it, which a call through the protocol does (the compiler keeps a hop after an
        /// `await` on an existential; each takes the task's status-record lock, docs/performance.md).
        let loops: LoopTransport?
        let breaker: CircuitBreaker
        let metrics: Metrics

        init(transport: any UpstreamTransport, breaker: CircuitBreaker, metrics: Metrics) {
            self.transport = transport
            loops = transport as? LoopTransport
            self.breaker = breaker
            self.metrics = metrics
        }
    }

    // MARK: Auth (never with an Authorization header: Directus checks it even on /auth/*)

    /// `POST /auth/login`.
    package func login(email: String, password: String, context: CallFields) async throws(DirectusError) -> DirectusTokens {
        let body = JSONValue.object([("email", .string(email)), ("password", .string(password)), ("mode", .string("json"))])
        return try tokens(from: try await call(.post, "/auth/login", body: body, token: nil, context: context))
    }

    /// `POST /auth/refresh` (rotates the refresh token).
    func refresh(refreshToken: String, context: CallFields) async throws(DirectusError) -> DirectusTokens {
        let body = JSONValue.object([("refresh_token", .string(refreshToken)), ("mode", .string("json"))])
        return try tokens(from: try await call(.post, "/auth/refresh", body: body, token: nil, context: context))
    }

    /// `POST /auth/logout` with the refresh token in the body only.
    func logout(refreshToken: String, context: CallFields) async throws(DirectusError) {
        let body = JSONValue.object([("refresh_token", .string(refreshToken))])
        _ = try await call(.post, "/auth/logout", body: body, token: nil, context: context)
    }

    // MARK: Users

    /// Registers a user: `POST /users` (public create) or `POST /users/register`.
    func register(email: String, password: String, viaRegisterEndpoint: Bool, context: CallFields) async throws(DirectusError) {
        let body = JSONValue.object([("email", .string(email)), ("password", .string(password))])
        _ = try await call(.post, viaRegisterEndpoint ? "/users/register" : "/users", body: body, token: nil, context: context)
    }

    /// `GET /users/me` → the `data` object.
    func me(token: String, context: CallFields) async throws(DirectusError) -> JSONValue {
        let response = try await call(.get, "/users/me?fields=id,email,role", body: nil, token: token, context: context)
        guard let data = (try? JSONValue.parse(response.body))?["data"], data.objectValue != nil else {
            throw .badAnswer("users/me without data object")
        }
        return data
    }

    // MARK: Items

    /// `GET <target>` for a list whose target (`/items/<c>?…`, as `QueryString.target` builds it) is already
    /// built → the raw answer body.
    func listItems(target: String, token: String?, context: CallFields) async throws(DirectusError) -> HTTPBody {
        try await call(.get, target, body: nil, token: token, context: context).content
    }

    /// `GET <target>`, a list or an item read built once (`UpstreamTarget`) → the raw answer body.
    func read(_ target: UpstreamTarget, token: String?, context: CallFields) async throws(DirectusError) -> HTTPBody {
        try await call(.get, target.text, body: nil, token: token, context: context).content
    }

    /// `POST /items/<c>` → the raw answer body, or nil when Directus answered 204 (no read-back).
    func createItem(path: String, payload: JSONValue, fields: String, token: String?, context: CallFields) async throws(DirectusError) -> Data? {
        let response = try await call(.post, path + "?fields=" + QueryString.encode(fields), body: payload, token: token, context: context)
        return response.status == 204 || response.body.isEmpty ? nil : response.body
    }

    /// `PATCH /items/<c>/<id>` → the raw answer body, or nil when Directus answered 204.
    func updateItem(path: String, payload: JSONValue, fields: String, token: String?, context: CallFields) async throws(DirectusError) -> Data? {
        let response = try await call(.patch, path + "?fields=" + QueryString.encode(fields), body: payload, token: token, context: context)
        return response.status == 204 || response.body.isEmpty ? nil : response.body
    }

    /// `DELETE /items/<c>/<id>`.
    func deleteItem(path: String, token: String?, context: CallFields) async throws(DirectusError) {
        _ = try await call(.delete, path, body: nil, token: token, context: context)
    }

    // MARK: Server

    /// `GET /server/ping`: true when Directus answers 200.
    func ping(context: CallFields) async -> Bool {
        do {
            return try await send(UpstreamRequest(method: .get, target: "/server/ping",
                                                  fields: CallHead(context, bearer: nil, jsonBody: false)),
                                  trace: context.accessTrace).status == 200
        } catch {
            return false
        }
    }

    // MARK: Plumbing

    /// Sends one call; 2xx answers come back, everything else is thrown as a typed error.
    func call(_ method: HTTPMethod, _ target: String, body: JSONValue?, token: String?, context: CallFields) async throws(DirectusError) -> UpstreamResponse {
        // The head fields go as values: the pooled connection writes them without a header array or an
        // `Authorization` value built per call.
        let request = UpstreamRequest(method: method, target: target, fields: CallHead(context, bearer: token, jsonBody: body != nil),
                                      body: body?.serialized() ?? Data())
        let response: UpstreamResponse
        do {
            response = try await send(request, trace: context.accessTrace)
        } catch {
            throw .transport(error)
        }
        guard (200..<300).contains(response.status) else { throw DirectusError.from(response) }
        return response
    }

    /// Sends `request` through the circuit breaker (an open circuit fails it at once, as unreachable), and
    /// records the outcome in the breaker, the upstream metrics and the request's trace.
    private func send(_ request: UpstreamRequest, trace: RequestTrace?) async throws(UpstreamFailure) -> UpstreamResponse {
        try admit()
        let start = MonotonicInstant.now
        do {
            let response: UpstreamResponse
            if let loops = upstream.loops {
                response = try await loops.send(request, timeout: timeout)
            } else {
                response = try await upstream.transport.send(request, timeout: timeout)
            }
            succeeded(request.method, since: start, trace: trace)
            return response
        } catch {
            failed(error, since: start, trace: trace)
            throw error
        }
    }

    /// True when `startRead` can send from here: on one of the event loops, through their transport.
    var canStart: Bool { upstream.loops?.onALoop ?? false }

    /// `read`'s call without a task, for a caller on one of the event loops (`canStart`): nil, with the call sent and
    /// its outcome for `completion` on the loop thread, at the end of a turn (`readOutcome` makes of it what `read`
    /// returns or throws); or, when the circuit breaker refuses the call, the error `read` throws, with nothing sent
    /// and `completion` never called. The caller's closure is the only one made for the call.
    func startRead(_ target: UpstreamTarget, token: String?, context: CallFields,
                   completion: @escaping UpstreamCompletion) -> DirectusError? {
        do throws(UpstreamFailure) {
            try admit()
        } catch {
            return .transport(error)
        }
        guard let loops = upstream.loops else { return .transport(.unreachable("no event loops")) }
        let request = UpstreamRequest(method: .get, target: target.text, fields: CallHead(context, bearer: token, jsonBody: false),
                                      body: Data())
        loops.start(request, timeout: timeout, completion: completion)
        return nil
    }

    /// What `read` returns or throws, from the outcome of a call `startRead` sent at `start`, recorded in the breaker,
    /// the metrics and `trace` as `read` records it.
    func readOutcome(_ outcome: consuming Result<UpstreamResponse, UpstreamFailure>, since start: MonotonicInstant,
                     trace: RequestTrace?) -> Result<HTTPBody, DirectusError> {
        switch consume outcome {
        case .success(let response):
            succeeded(.get, since: start, trace: trace)
            guard (200..<300).contains(response.status) else { return .failure(DirectusError.from(response)) }
            return .success(response.content)
        case .failure(let error):
            failed(error, since: start, trace: trace)
            return .failure(.transport(error))
        }
    }

    /// The circuit breaker's leave for one call (refused, and counted, while it is open).
    private func admit() throws(UpstreamFailure) {
        guard upstream.breaker.allow() else {
            upstream.metrics.upstreamError("circuit_open")
            throw .unreachable("circuit open")
        }
    }

    /// A call started at `start` was answered: the breaker, the metrics and the request's trace learn it (one clock
    /// read for the metric and the trace).
    private func succeeded(_ method: HTTPMethod, since start: MonotonicInstant, trace: RequestTrace?) {
        upstream.breaker.succeeded()
        let seconds = start.secondsElapsed
        upstream.metrics.upstream(method: method.description, seconds: seconds)
        trace?.addUpstream(seconds)
    }

    /// A call started at `start` failed with `error`: the breaker, the metrics and the request's trace learn it.
    private func failed(_ error: UpstreamFailure, since start: MonotonicInstant, trace: RequestTrace?) {
        let breaker = upstream.breaker, metrics = upstream.metrics
        trace?.addUpstream(start.secondsElapsed)
        switch error {
        case .unreachable(UpstreamFailure.poolQueueFull):
            // Our own queue is full: says nothing about Directus being reachable.
            breaker.inconclusive()
            metrics.upstreamError("queue_full")
        case .unreachable:
            breaker.failed()
            metrics.upstreamError("unreachable")
        case .timeout:
            breaker.failed()
            metrics.upstreamError("timeout")
        case .closed:
            breaker.inconclusive()
            metrics.upstreamError("closed")
        case .badResponse:
            breaker.succeeded()
            metrics.upstreamError("bad_response")
        }
    }

    private func tokens(from response: UpstreamResponse) throws(DirectusError) -> DirectusTokens {
        guard let data = (try? JSONValue.parse(response.body))?["data"],
              let access = data["access_token"]?.stringValue, let refresh = data["refresh_token"]?.stringValue else {
            throw .badAnswer("auth answer without tokens")
        }
        return DirectusTokens(accessToken: access, refreshToken: refresh, expiresMs: data["expires"]?.intValue ?? 900_000)
    }
}
