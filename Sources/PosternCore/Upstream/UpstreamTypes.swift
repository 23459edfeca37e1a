import Foundation

/// One request to the upstream, as a value.
///
/// The caller's Directus token may be carried beside the other headers (`bearer`): the pooled connection writes
/// it as `Authorization: Bearer <token>` straight into the request head, so no header value is built for it;
/// `headers` still shows it in its place to every other reader (in-process transports, test doubles).
public struct UpstreamRequest: Sendable {
    /// The method.
    public var method: HTTPMethod
    /// Path plus optional `?query`, already percent-encoded.
    public var target: String
    /// The headers to send except the carried `bearer` (Host and Content-Length are added).
    public private(set) var otherHeaders: HTTPHeaders
    /// The access token sent as `Authorization: Bearer <token>`, if carried beside `otherHeaders`.
    public private(set) var bearer: String?
    /// Where the `Authorization` field goes among `otherHeaders` (the index of the field it precedes).
    public private(set) var bearerIndex: Int
    /// The body (empty for none).
    public var body: Data

    /// Builds a request.
    public init(method: HTTPMethod, target: String, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data()) {
        self.method = method
        self.target = target
        otherHeaders = headers
        bearer = nil
        bearerIndex = 0
        self.body = body
    }

    /// Builds a request whose `Authorization: Bearer <bearer>` field comes before `headers`' field at
    /// `bearerIndex` (after all of them when it is their count).
    public init(method: HTTPMethod, target: String, headers: HTTPHeaders, bearer: String, bearerIndex: Int, body: Data = Data()) {
        self.method = method
        self.target = target
        otherHeaders = headers
        self.bearer = bearer
        self.bearerIndex = min(max(0, bearerIndex), headers.fields.count)
        self.body = body
    }

    /// Every header to send, `Authorization` included, in the order they go on the wire (Host and
    /// Content-Length are added); setting it replaces them all.
    public var headers: HTTPHeaders {
        get {
            guard let bearer else { return otherHeaders }
            var all = HTTPHeaders(capacity: otherHeaders.fields.count + 1)
            for (offset, field) in otherHeaders.fields.enumerated() {
                if offset == bearerIndex { all.add("Authorization", "Bearer " + bearer) }
                all.add(field.name, field.value)
            }
            if bearerIndex == otherHeaders.fields.count { all.add("Authorization", "Bearer " + bearer) }
            return all
        }
        set {
            otherHeaders = newValue
            bearer = nil
            bearerIndex = 0
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
