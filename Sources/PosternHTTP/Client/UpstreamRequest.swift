import FoundationEssentials
import Glibc
import PosternIO

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
