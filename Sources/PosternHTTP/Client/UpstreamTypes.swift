import FoundationEssentials
import Glibc
import PosternIO

/// Head fields a caller keeps as values and writes into the request head itself (the gateway's Directus calls:
/// request id, client address, token, trace), so that the pooled connection needs no header array, nor a value
/// string built per call, for them. Written after `Host`, before the request's other headers.
package protocol UpstreamHeadFields: Sendable {
    /// Appends the fields to `head`, as whole header lines.
    func write(to head: HeadWriter)
    /// The same fields as headers, in the order `write` puts them on the wire (for every other reader: in-process
    /// transports, test doubles).
    var headers: HTTPHeaders { get }
}

/// Where `UpstreamHeadFields` write their lines: the connection's output, while it serializes a request head.
package struct HeadWriter {
    /// The request bytes being serialized.
    package let output: RawBytes

    /// A writer appending to `output`.
    package init(_ output: RawBytes) {
        self.output = output
    }

    /// Appends `line` as it is: a whole field line, its CRLF included.
    package func line(_ line: StaticString) {
        output.append(line)
    }

    /// Appends a field whose `prefix` is its name, `": "` and any fixed start of its value, then `value` and CRLF;
    /// nothing when `value` holds CR, LF or NUL (it would split the request).
    package func field(_ prefix: StaticString, _ value: String) {
        guard HeadWriter.safe(value) else { return }
        output.append(prefix)
        output.append(value)
        output.append(13, 10)
    }

    /// True when `text` holds no CR, LF or NUL (`strcspn` stops at the first of them, the terminator included).
    static func safe(_ text: String) -> Bool {
        let length = text.utf8.count
        return text.withCString { strcspn($0, "\r\n") } == length
    }
}

/// One request to the upstream, as a value.
///
/// A caller's usual fields may be carried as values (`headFields`), without a header array or a value built per
/// call; `headers` still shows every field in its place to every other reader (in-process transports, test doubles).
package struct UpstreamRequest: Sendable {
    /// The parts, in one box shared by copies until one of them changes a part (a call is handed through
    /// several layers: a copy is one retain, not one per part).
    private var parts: Parts

    /// The method.
    package var method: HTTPMethod {
        _read { yield parts.method }
        _modify {
            makeUnique()
            yield &parts.method
        }
    }
    /// Path plus optional `?query`, already percent-encoded.
    package var target: String {
        _read { yield parts.target }
        _modify {
            makeUnique()
            yield &parts.target
        }
    }
    /// The fields written before `otherHeaders`, if carried as values.
    var headFields: (any UpstreamHeadFields)? { parts.headFields }
    /// The headers to send after `headFields` (Host and Content-Length are added).
    var otherHeaders: HTTPHeaders { parts.otherHeaders }
    /// The body (empty for none).
    package var body: Data {
        _read { yield parts.body }
        _modify {
            makeUnique()
            yield &parts.body
        }
    }

    /// Builds a request.
    package init(method: HTTPMethod, target: String, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data()) {
        parts = Parts(method: method, target: target, headFields: nil, otherHeaders: headers, body: body)
    }

    /// Builds a request whose head fields are `fields`, carried as values.
    package init(method: HTTPMethod, target: String, fields: any UpstreamHeadFields, body: Data = Data()) {
        parts = Parts(method: method, target: target, headFields: fields, otherHeaders: HTTPHeaders(), body: body)
    }

    /// Makes the parts this value's own (a copy when another value shares them), before a change.
    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&parts) {
            parts = Parts(method: parts.method, target: parts.target, headFields: parts.headFields,
                          otherHeaders: parts.otherHeaders, body: parts.body)
        }
    }

    /// The box behind `UpstreamRequest`. Changed only after `makeUnique()`, i.e. while one value holds it: what
    /// is shared between threads is never written, hence `@unchecked Sendable`.
    private final class Parts: @unchecked Sendable {
        var method: HTTPMethod
        var target: String
        var headFields: (any UpstreamHeadFields)?
        var otherHeaders: HTTPHeaders
        var body: Data

        init(method: HTTPMethod, target: String, headFields: (any UpstreamHeadFields)?, otherHeaders: HTTPHeaders, body: Data) {
            self.method = method
            self.target = target
            self.headFields = headFields
            self.otherHeaders = otherHeaders
            self.body = body
        }
    }

    /// Every header to send, in the order they go on the wire (Host and Content-Length are added); setting it
    /// replaces them all.
    package var headers: HTTPHeaders {
        get {
            guard let headFields else { return otherHeaders }
            var all = headFields.headers
            for (name, value) in otherHeaders { all.add(name, value) }
            return all
        }
        set {
            makeUnique()
            parts.headFields = nil
            parts.otherHeaders = newValue
        }
    }
}

/// The upstream's answer: the same plain value as a response the gateway sends.
package typealias UpstreamResponse = HTTPResponse

/// How an upstream call failed at the transport level (docs/api.md, Errors).
package enum UpstreamFailure: Error, Sendable, Equatable {
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
    package static let poolQueueFull = "too many requests waiting for a Directus connection"
}

/// Where the upstream lives.
package struct UpstreamEndpoint: Sendable, Equatable {
    /// `http` or `https`.
    package var tls: Bool
    /// Host name or IP.
    package var host: String
    /// Port.
    package var port: UInt16
    /// A path prefix (no trailing slash), e.g. `` or `/directus`.
    package var basePath: String

    /// Parses `http://host[:port][/base]` or `https://…`.
    package init?(url: String) {
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
    package var hostHeader: String {
        let isDefault = (tls && port == 443) || (!tls && port == 80)
        let h = host.contains(":") ? "[\(host)]" : host
        return isDefault ? h : "\(h):\(port)"
    }
}
