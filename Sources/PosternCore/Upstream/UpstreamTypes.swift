import FoundationEssentials

/// The head fields every Directus call carries, kept as values: the pooled connection writes them straight into
/// the request head, in this order: `Accept: application/json`, `X-Request-Id`, `X-Forwarded-For`,
/// `Authorization: Bearer <token>` (with a token), `Content-Type: application/json` (with a JSON body),
/// `traceparent` and `tracestate` (with a trace; `tracestate` when the client sent one).
public struct CallFields: Sendable, Equatable {
    /// Sent as `X-Request-Id`.
    public var requestID: String
    /// Sent as `X-Forwarded-For`.
    public var forwardedFor: String
    /// Sent as `Authorization: Bearer <token>` (nil: no such field).
    public var bearer: String?
    /// True when the body is JSON (sent with `Content-Type: application/json`).
    public var jsonBody: Bool
    /// Sent as `traceparent` (and `tracestate` when it has one); nil: not sent.
    public var trace: TraceContext?

    /// The fields of a call.
    public init(requestID: String, forwardedFor: String, bearer: String?, jsonBody: Bool, trace: TraceContext? = nil) {
        self.requestID = requestID
        self.forwardedFor = forwardedFor
        self.bearer = bearer
        self.jsonBody = jsonBody
        self.trace = trace
    }

    /// The fields as headers, in the order they go on the wire.
    var headers: HTTPHeaders {
        var h = HTTPHeaders(capacity: 7)
        h.add("Accept", "application/json")
        h.add("X-Request-Id", requestID)
        h.add("X-Forwarded-For", forwardedFor)
        if let bearer { h.add("Authorization", "Bearer " + bearer) }
        if jsonBody { h.add("Content-Type", "application/json") }
        if let trace {
            h.add("traceparent", trace.traceparent)
            if let state = trace.state { h.add("tracestate", state) }
        }
        return h
    }
}

/// One request to the upstream, as a value.
///
/// A Directus call's usual fields are carried as values (`callFields`), without a header array or an
/// `Authorization` value built per call; `headers` still shows every field in its place to every other reader
/// (in-process transports, test doubles).
public struct UpstreamRequest: Sendable {
    /// The parts, in one box shared by copies until one of them changes a part (a call is handed through
    /// several layers: a copy is one retain, not one per part).
    private var parts: Parts

    /// The method.
    public var method: HTTPMethod {
        _read { yield parts.method }
        _modify {
            makeUnique()
            yield &parts.method
        }
    }
    /// Path plus optional `?query`, already percent-encoded.
    public var target: String {
        _read { yield parts.target }
        _modify {
            makeUnique()
            yield &parts.target
        }
    }
    /// The fields written before `otherHeaders`, if carried as values.
    public var callFields: CallFields? { parts.callFields }
    /// The headers to send after `callFields` (Host and Content-Length are added).
    public var otherHeaders: HTTPHeaders { parts.otherHeaders }
    /// The body (empty for none).
    public var body: Data {
        _read { yield parts.body }
        _modify {
            makeUnique()
            yield &parts.body
        }
    }

    /// Builds a request.
    public init(method: HTTPMethod, target: String, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data()) {
        parts = Parts(method: method, target: target, callFields: nil, otherHeaders: headers, body: body)
    }

    /// Builds a Directus call whose head fields are `fields`.
    public init(method: HTTPMethod, target: String, fields: CallFields, body: Data = Data()) {
        parts = Parts(method: method, target: target, callFields: fields, otherHeaders: HTTPHeaders(), body: body)
    }

    /// Makes the parts this value's own (a copy when another value shares them), before a change.
    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&parts) {
            parts = Parts(method: parts.method, target: parts.target, callFields: parts.callFields,
                          otherHeaders: parts.otherHeaders, body: parts.body)
        }
    }

    /// The box behind `UpstreamRequest`. Changed only after `makeUnique()`, i.e. while one value holds it: what
    /// is shared between threads is never written, hence `@unchecked Sendable`.
    private final class Parts: @unchecked Sendable {
        var method: HTTPMethod
        var target: String
        var callFields: CallFields?
        var otherHeaders: HTTPHeaders
        var body: Data

        init(method: HTTPMethod, target: String, callFields: CallFields?, otherHeaders: HTTPHeaders, body: Data) {
            self.method = method
            self.target = target
            self.callFields = callFields
            self.otherHeaders = otherHeaders
            self.body = body
        }
    }

    /// Every header to send, in the order they go on the wire (Host and Content-Length are added); setting it
    /// replaces them all.
    public var headers: HTTPHeaders {
        get {
            guard let callFields else { return otherHeaders }
            var all = callFields.headers
            for (name, value) in otherHeaders { all.add(name, value) }
            return all
        }
        set {
            makeUnique()
            parts.callFields = nil
            parts.otherHeaders = newValue
        }
    }
}

/// The upstream's answer: the same plain value as a response the gateway sends.
public typealias UpstreamResponse = HTTPResponse

/// How an upstream call failed at the transport level (docs/api.md, Errors).
public enum UpstreamFailure: Error, Sendable, Equatable {
    /// Could not connect (refused, DNS, TLS handshake): → 503.
    case unreachable(String)
    /// No answer within the timeout: → 504.
    case timeout
    /// The connection closed after the request was sent: → 502.
    case closed
    /// The answer was not valid HTTP: → 502.
    case badResponse(String)

    /// The reason of the `unreachable` failure given when too many calls already wait for a pooled connection
    /// (`directus.max_waiting_per_worker`): → 503, and not a sign that Directus is down.
    public static let poolQueueFull = "too many requests waiting for a Directus connection"
}

/// Where the upstream lives.
public struct UpstreamEndpoint: Sendable, Equatable {
    /// `http` or `https`.
    public var tls: Bool
    /// Host name or IP.
    public var host: String
    /// Port.
    public var port: UInt16
    /// A path prefix (no trailing slash), e.g. `` or `/directus`.
    public var basePath: String

    /// Parses `http://host[:port][/base]` or `https://…`.
    public init?(url: String) {
        guard let components = URLComponents(string: url), let scheme = components.scheme?.lowercased(),
              scheme == "http" || scheme == "https", let host = components.host, !host.isEmpty else { return nil }
        tls = scheme == "https"
        self.host = host
        port = UInt16(components.port ?? (tls ? 443 : 80))
        var path = components.percentEncodedPath
        while path.hasSuffix("/") { path.removeLast() }
        basePath = path
    }

    /// The `Host` header value.
    public var hostHeader: String {
        let isDefault = (tls && port == 443) || (!tls && port == 80)
        let h = host.contains(":") ? "[\(host)]" : host
        return isDefault ? h : "\(h):\(port)"
    }
}
