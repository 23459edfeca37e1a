import FoundationEssentials
import PosternHTTP

/// What every Directus call of one client request carries from it: request id, client address, trace, and the
/// access-log trace each call adds its time to. One object per request, handed to each call as a reference (a copy
/// is one retain, not one per string).
package final class CallFields: Sendable {
    /// Sent as `X-Request-Id`.
    let requestID: String
    /// Sent as `X-Forwarded-For` (set, not appended).
    let clientIP: String
    /// Sent as `traceparent` (the gateway's span as the parent) and `tracestate` (nil: neither is sent).
    let trace: TraceContext?
    /// The access-log trace of the client request (not a head field): `DirectusClient` adds each call's time to it.
    let accessTrace: RequestTrace?

    /// The fields of the calls for the client request `requestID` from `clientIP`, with no access-log trace.
    package convenience init(requestID: String, clientIP: String, trace: TraceContext? = nil) {
        self.init(requestID: requestID, clientIP: clientIP, trace: trace, accessTrace: nil)
    }

    /// The fields of the calls for the client request `requestID` from `clientIP`, whose access-log trace is
    /// `accessTrace`.
    init(requestID: String, clientIP: String, trace: TraceContext?, accessTrace: RequestTrace?) {
        self.requestID = requestID
        self.clientIP = clientIP
        self.trace = trace
        self.accessTrace = accessTrace
    }
}

/// The head fields of one Directus call, kept as values: the pooled connection writes them straight into the
/// request head, in this order: `Accept: application/json`, `X-Request-Id`, `X-Forwarded-For`,
/// `Authorization: Bearer <token>` (with a token), `Content-Type: application/json` (with a JSON body),
/// `traceparent` and `tracestate` (with a trace; `tracestate` when the client sent one). A value holding CR, LF or
/// NUL is not sent.
package struct CallHead: UpstreamHeadFields {
    /// The client request's fields.
    let request: CallFields
    /// Sent as `Authorization: Bearer <token>` (nil: no such field).
    let bearer: String?
    /// True when the body is JSON (sent with `Content-Type: application/json`).
    let jsonBody: Bool

    /// The head of a call for `request`, with the call's token and body kind.
    package init(_ request: CallFields, bearer: String?, jsonBody: Bool) {
        self.request = request
        self.bearer = bearer
        self.jsonBody = jsonBody
    }

    /// Writes the fields into the request head.
    package func write(to head: HeadWriter) {
        head.line("Accept: application/json\r\n")
        head.field("X-Request-Id: ", request.requestID)
        head.field("X-Forwarded-For: ", request.clientIP)
        if let bearer { head.field("Authorization: Bearer ", bearer) }
        if jsonBody { head.line("Content-Type: application/json\r\n") }
        request.trace?.appendFields(to: head.output)
    }

    /// The fields as headers, in the order they go on the wire.
    package var headers: HTTPHeaders {
        var h = HTTPHeaders(capacity: 7)
        h.add("Accept", "application/json")
        h.add("X-Request-Id", request.requestID)
        h.add("X-Forwarded-For", request.clientIP)
        if let bearer { h.add("Authorization", "Bearer " + bearer) }
        if jsonBody { h.add("Content-Type", "application/json") }
        if let trace = request.trace {
            h.add("traceparent", trace.traceparent)
            if let state = trace.state { h.add("tracestate", state) }
        }
        return h
    }
}

extension UpstreamHTTPClient {
    /// The answer headers the gateway reads (`Retry-After`, for the 429/503 translation; `Connection` is
    /// looked at in place by the connection): the others are never turned into `String`s.
    static let gatewayHeaders: [StaticString] = ["Retry-After"]
}
