import FoundationEssentials
import PosternIO

/// A request as the gateway sees it: a plain value, no libevent pointers.
///
/// Its fields live in one shared box, copied on the first change (as `Array` is): a request is handed from stage
/// to stage and into the handler's task, and a copy of the box is one retain where a copy of the fields was
/// one per part (seven).
package struct HTTPRequest: Sendable {
    /// The fields; shared by copies until one of them changes a field.
    private var fields: Fields

    /// The request method.
    package var method: HTTPMethod {
        _read { yield fields.method }
        _modify {
            makeUnique()
            yield &fields.method
        }
    }
    /// The path as received (still percent-encoded, no query), e.g. `/api/v1/books/12`; routing decodes each segment.
    package var path: String {
        _read { yield fields.path }
        _modify {
            makeUnique()
            yield &fields.path
        }
    }
    /// The raw query string without `?` (may be empty).
    package var query: String {
        _read { yield fields.query }
        _modify {
            makeUnique()
            yield &fields.query
        }
    }
    /// Request headers.
    package var headers: HTTPHeaders {
        _read { yield fields.headers }
        _modify {
            makeUnique()
            yield &fields.headers
        }
    }
    /// The request body (empty when none).
    package var body: Data {
        _read { yield fields.body }
        _modify {
            makeUnique()
            yield &fields.body
        }
    }
    /// The socket peer address (IP only).
    package var remoteAddress: String {
        _read { yield fields.remoteAddress }
        _modify {
            makeUnique()
            yield &fields.remoteAddress
        }
    }

    /// Builds a request.
    package init(method: HTTPMethod, path: String, query: String = "", headers: HTTPHeaders = HTTPHeaders(),
                body: Data = Data(), remoteAddress: String = "127.0.0.1") {
        fields = Fields(method: method, path: path, query: query, headers: headers, body: body,
                        remoteAddress: remoteAddress)
    }

    /// Makes the fields this value's own (a copy when another value shares them), before a change.
    private mutating func makeUnique() {
        if !isKnownUniquelyReferenced(&fields) {
            fields = Fields(method: fields.method, path: fields.path, query: fields.query, headers: fields.headers,
                            body: fields.body, remoteAddress: fields.remoteAddress)
        }
    }

    /// The box behind `HTTPRequest`. Changed only after `makeUnique()`, i.e. while one value holds it: what is
    /// shared between threads is never written, hence `@unchecked Sendable`.
    private final class Fields: @unchecked Sendable {
        var method: HTTPMethod
        var path: String
        var query: String
        var headers: HTTPHeaders
        var body: Data
        var remoteAddress: String

        init(method: HTTPMethod, path: String, query: String, headers: HTTPHeaders, body: Data, remoteAddress: String) {
            self.method = method
            self.path = path
            self.query = query
            self.headers = headers
            self.body = body
            self.remoteAddress = remoteAddress
        }
    }

    /// Splits a request target such as `/a/b?x=1` into path and query (at the first `?` byte).
    package init(method: HTTPMethod, target: String, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data(),
                remoteAddress: String = "127.0.0.1") {
        if let q = target.utf8.firstIndex(of: UInt8(ascii: "?")) {
            self.init(method: method, path: String(target[..<q]), query: String(target[target.index(after: q)...]),
                      headers: headers, body: body, remoteAddress: remoteAddress)
        } else {
            self.init(method: method, path: target, headers: headers, body: body, remoteAddress: remoteAddress)
        }
    }

    /// The query parameters, percent-decoded (`+` read as space), in order.
    package var queryItems: [(name: String, value: String)] {
        QueryString.parse(query)
    }
}
