import FoundationEssentials
import PosternHTTP
import PosternIO

// The edge stages at the head of every chain, outermost first: observation (metrics, access log),
// response headers, CORS decoration, the request-target limit, CORS preflight, error rendering.
// The gateway runs them around every route's endpoints, its 405 answer and the 404 answer, one after
// another in its own frame (`prepare`, then `respond(to:_:)`) rather than as a chain of nested async calls:
// each level of nesting is a task-allocator frame holding the request and its context, and a deep chain
// costs a fresh allocator slab (a malloc) every few levels on every request.

/// The edge stages shared by every route, built once. A class: read where the route table holds it, not copied
/// per request (a copy of a struct retained and released each of its parts, the CORS policy's too).
final class EdgeStages: Sendable {
    /// The metrics registry the observation stage records into.
    let metrics: Metrics
    /// The access log (one line per request, and the errors the stages below throw).
    let log: AccessLog
    /// The CORS policy (preflights and the headers of allowed origins).
    let cors: CORSPolicy
    /// Longest accepted request target (path and query), in bytes; longer is 414.
    static let maxTargetBytes = 8192

    /// The edge stages over `metrics`, `log` and `cors`.
    init(metrics: Metrics, log: AccessLog, cors: CORSPolicy) {
        self.metrics = metrics
        self.log = log
        self.cors = cors
    }

    /// The first step of every request, on both of the gateway's paths: the edge's own answers (a request target
    /// over `maxTargetBytes` is 414, CORS preflights), then `endpoint`'s stages as far as they go without an
    /// `await` (`Endpoint.prepare`), their errors rendered (and logged). Not inlined: what it builds stays off the
    /// async frame.
    @inline(never)
    func prepare(_ request: HTTPRequest, _ context: RequestContext, _ endpoint: Endpoint) -> RequestStep {
        if let answer = answerAtTheEdge(request, context) {
            return RequestStep(context: context, endpoint: endpoint, next: .answered(answer))
        }
        do throws(GatewayError) {
            return RequestStep(context: context, endpoint: endpoint, next: try endpoint.prepare(request, context))
        } catch {
            return RequestStep(context: context, endpoint: endpoint, next: .answered(rendered(error, context)))
        }
    }

    /// A new request's access-log trace; nil when no access line is written (nothing reads it then).
    func trace() -> RequestTrace? { log.logsAccess ? RequestTrace() : nil }

    /// The answer of the request at `step` (`prepare`'s) behind the edge stages: runs the rest of its endpoint,
    /// renders (and logs) the errors it throws, sets the headers every answer carries and the CORS headers, and
    /// records the answer in the metrics and the access log (`finish`). Never throws.
    @inline(__always)  // into the gateway's frame: no async frame of its own
    func respond(to request: HTTPRequest, _ step: RequestStep) async -> HTTPResponse {
        var response: HTTPResponse
        if case .answered(let answer) = step.next {
            response = answer
        } else {
            response = await run(step.endpoint, request, step.context, step.next)
        }
        finish(&response, request, step.context)
        return response
    }

    /// The answer of a request whose endpoint ran without a task (`Endpoint.Read.start`): `outcome`'s answer, or its
    /// error rendered (and logged), behind the edge stages (`finish`), as `respond` gives it.
    func finished(_ outcome: Result<HTTPResponse, GatewayError>, _ request: HTTPRequest,
                  _ context: RequestContext) -> HTTPResponse {
        var response: HTTPResponse
        switch outcome {
        case .success(let answer):
            response = answer
        case .failure(let error):
            response = rendered(error, context)
        }
        finish(&response, request, context)
        return response
    }

    /// The answer of a request the edge answers itself: 414 for a request target over `maxTargetBytes`, and
    /// CORS preflights. (Synchronous and not inlined, like `finish`: what they build stays off the async frame.)
    @inline(never)
    private func answerAtTheEdge(_ request: HTTPRequest, _ context: RequestContext) -> HTTPResponse? {
        if request.path.utf8.count + request.query.utf8.count > EdgeStages.maxTargetBytes {
            return ErrorRenderer.render(GatewayError(status: 414, code: .uriTooLong, message: "request target too long"),
                                        context: context)
        }
        return cors.isPreflight(request) ? cors.preflight(request) : nil
    }

    /// Decorates an answer (CORS, the headers every answer carries, `traceresponse` when the client sent a valid
    /// `traceparent`) and records it (metrics, access log).
    @inline(never)
    func finish(_ response: inout HTTPResponse, _ request: HTTPRequest, _ context: RequestContext) {
        cors.decorate(&response, origin: request.headers["Origin"])
        EdgeStages.decorate(&response, path: request.path, requestID: context.requestID)
        if context.traceContext.fromClient { response.headers.set("traceresponse", context.traceContext.traceparent) }
        metrics.request(route: context.routePattern, method: EdgeStages.methodLabel(request.method),
                        status: response.status, seconds: context.startedAt.secondsElapsed)
        if let trace = context.trace { log.access(request, response, context: context, trace: trace) }
    }

    /// `endpoint`'s answer from `next` on, or its error rendered (and logged).
    @inline(__always)
    private func run(_ endpoint: Endpoint, _ request: HTTPRequest, _ context: RequestContext,
                     _ next: RequestStep.Next) async -> HTTPResponse {
        do throws(GatewayError) {
            return try await endpoint.complete(request, context, from: next)
        } catch {
            return rendered(error, context)
        }
    }

    /// An error thrown below the edge, logged and rendered.
    @inline(never)
    private func rendered(_ error: GatewayError, _ context: RequestContext) -> HTTPResponse {
        log.error(error, context: context)
        return ErrorRenderer.render(error, context: context)
    }

    /// A bounded method label for metrics.
    static func methodLabel(_ method: HTTPMethod) -> String {
        if case .other = method { return "OTHER" }
        return method.description
    }

    /// Sets the headers every answer carries: the request id, `nosniff`, and `Cache-Control: no-store`
    /// under `/api/` (also used for answers refused before routing).
    static func decorate(_ response: inout HTTPResponse, path: String, requestID: String) {
        let underAPI = underAPI(path)
        // A stored micro-cache answer carries the alike fields already, rendered: setting them would find them and
        // change nothing, at the cost of two lookups on every hit.
        let alikeDone = underAPI && response.headers.rendersOnlyAlike
        // Room for the three fields up front: one copy of the list at most. A rendered answer has an empty list,
        // which its one field's append allocates.
        if !alikeDone { response.headers.reserve(3) }
        response.headers.set("X-Request-Id", requestID)
        if !alikeDone { decorateAlike(&response.headers, underAPI: underAPI) }
    }

    /// The fields `decorate` sets the same way on every answer: `nosniff`, and `Cache-Control: no-store` when
    /// `underAPI` (set already, e.g. on a stored micro-cache answer, they change nothing).
    static func decorateAlike(_ headers: inout HTTPHeaders, underAPI: Bool) {
        headers.set(HTTPHeaders.alike[0].name, HTTPHeaders.alike[0].value)
        if underAPI { headers.set(HTTPHeaders.alike[1].name, HTTPHeaders.alike[1].value) }
    }

    /// True for a path under `/api/`, compared bytewise in place (`hasPrefix` compares Characters).
    static func underAPI(_ path: String) -> Bool {
        let inPlace: Bool? = path.utf8.withContiguousStorageIfAvailable { b in
            b.count >= 5 && b[0] == 0x2F && b[1] == 0x61 && b[2] == 0x70 && b[3] == 0x69 && b[4] == 0x2F  // "/api/"
        }
        return inPlace ?? path.utf8.starts(with: "/api/".utf8)
    }
}
