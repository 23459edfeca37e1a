import FoundationEssentials
import PosternIO
import PosternHTTP

/// What the pipeline stages learn about one request, typed (no string-keyed bag).
///
/// A class: the stages pass one context down and fill it in (session, authorization), and the edge reads
/// what they found. Handing over a reference costs one retain; a struct of strings and optionals would be
/// copied at each hand-over (two copies and three destroys per request, about 30 reference-count operations). One request owns it and only its handler
/// task touches it, one stage after another (`@unchecked Sendable`: never shared between threads at once).
final class RequestContext: @unchecked Sendable {
    /// What every upstream call of the request carries (request id, client IP, trace), built once with the
    /// context and handed to each call as it is.
    let call: CallFields
    /// The request id (echoed or generated), sent upstream and back.
    var requestID: String { call.requestID }
    /// The request's access-log trace (nil when no access line is written), also in `call`.
    var trace: RequestTrace? { call.accessTrace }
    /// The request's W3C trace context (the client's trace or a new one, and the gateway's span in it).
    let traceContext: TraceContext
    /// The client IP (socket peer, or `X-Forwarded-For` from a trusted proxy).
    var clientIP: String { call.clientIP }
    /// The matched route pattern, e.g. `/api/v1/books/{id}` (for logs and metrics).
    var routePattern: String
    /// The resource of a resource route (error bodies carry its empty collection).
    var resourceName: String?
    /// The decoded `{id}` path parameter.
    var itemID: String?
    /// The authenticated session, once the authentication stage ran.
    var session: Session?
    /// What the policy stage decided (set by it; handlers act on it and never evaluate rules).
    var authorization: Authorization = .unrestricted
    /// The write body (POST/PATCH/PUT) when a stage before the handler already parsed it (`POST`, to
    /// choose between create and update); handlers parse it themselves otherwise.
    var parsedWriteBody: ResourceMapper.WritePayload?
    /// When the request started (monotonic clock).
    let startedAt: MonotonicInstant

    /// Builds a context for a new request (in a trace of its own).
    init(requestID: String, clientIP: String, routePattern: String = "unmatched", resourceName: String? = nil) {
        traceContext = RequestID.newTrace()
        call = CallFields(requestID: requestID, clientIP: clientIP, trace: traceContext)
        self.routePattern = routePattern
        self.resourceName = resourceName
        startedAt = .now
    }

    /// Builds the context of a request with `headers`: its request id (`X-Request-Id` when safe, else the trace id)
    /// and its trace (`traceparent` when valid, else a new one); `trace` is its access-log trace.
    init(headers: HTTPHeaders, clientIP: String, trace: RequestTrace? = nil) {
        let start = RequestID.start(headers)
        traceContext = start.trace
        call = CallFields(requestID: start.id, clientIP: clientIP, trace: start.trace, accessTrace: trace)
        routePattern = "unmatched"
        resourceName = nil
        startedAt = .now
    }

    /// The context of a composite's part (docs/api.md, Composite endpoints): the caller's request id, address,
    /// traces (the part's upstream time counts in the caller's access line) and its session, authenticated once
    /// for the whole composite; the part's own route, resource, `{id}` and policy decision are its own.
    init(partOf caller: RequestContext, routePattern: String, resourceName: String?, itemID: String?) {
        call = caller.call
        traceContext = caller.traceContext
        self.routePattern = routePattern
        self.resourceName = resourceName
        self.itemID = itemID
        session = caller.session
        startedAt = caller.startedAt
    }
}
