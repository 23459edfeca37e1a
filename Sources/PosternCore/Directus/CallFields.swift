import FoundationEssentials
import PosternHTTP

/// What a Directus call carries from the client's request (request id, client address, trace) and its own head
/// fields (token, JSON body), kept as values: the pooled connection writes them straight into the request head, in
/// this order: `Accept: application/json`, `X-Request-Id`, `X-Forwarded-For`, `Authorization: Bearer <token>`
/// (with a token), `Content-Type: application/json` (with a JSON body), `traceparent` and `tracestate` (with a
/// trace; `tracestate` when the client sent one). A value holding CR, LF or NUL is not sent.
package struct CallFields: UpstreamHeadFields, Equatable {
    /// Sent as `X-Request-Id`.
    var requestID: String
    /// Sent as `X-Forwarded-For` (set, not appended).
    var clientIP: String
    /// Sent as `traceparent` (the gateway's span as the parent) and `tracestate` (nil: neither is sent).
    var trace: TraceContext?
    /// Sent as `Authorization: Bearer <token>` (nil: no such field); set by `DirectusClient` per call.
    var bearer: String?
    /// True when the body is JSON (sent with `Content-Type: application/json`); set by `DirectusClient` per call.
    var jsonBody: Bool

    /// The fields of a call for the client request `requestID` from `clientIP`.
    package init(requestID: String, clientIP: String, trace: TraceContext? = nil, bearer: String? = nil, jsonBody: Bool = false) {
        self.requestID = requestID
        self.clientIP = clientIP
        self.trace = trace
        self.bearer = bearer
        self.jsonBody = jsonBody
    }

    /// Writes the fields into the request head.
    package func write(to head: HeadWriter) {
        head.line("Accept: application/json\r\n")
        head.field("X-Request-Id: ", requestID)
        head.field("X-Forwarded-For: ", clientIP)
        if let bearer { head.field("Authorization: Bearer ", bearer) }
        if jsonBody { head.line("Content-Type: application/json\r\n") }
        trace?.appendFields(to: head.output)
    }

    /// The fields as headers, in the order they go on the wire.
    package var headers: HTTPHeaders {
        var h = HTTPHeaders(capacity: 7)
        h.add("Accept", "application/json")
        h.add("X-Request-Id", requestID)
        h.add("X-Forwarded-For", clientIP)
        if let bearer { h.add("Authorization", "Bearer " + bearer) }
        if jsonBody { h.add("Content-Type", "application/json") }
        if let trace {
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
