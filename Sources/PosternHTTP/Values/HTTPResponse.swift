import FoundationEssentials
import PosternIO

/// A response as the gateway builds it: a plain value, sent once by the event loop.
package struct HTTPResponse: Sendable {
    /// The status code.
    package var status: Int
    /// Response headers (the server adds none but `Content-Length`/`Date`).
    package var headers: HTTPHeaders
    /// The body's bytes (empty for 204).
    package var content: HTTPBody
    /// The body as a `Data` (a copy when `content` is `HeapBytes`); setting it sets `content`.
    package var body: Data {
        get { content.data }
        set { content = .data(newValue) }
    }

    /// Builds a response.
    package init(status: Int, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data()) {
        self.status = status
        self.headers = headers
        content = .data(body)
    }

    /// Builds a response whose body is `content`.
    package init(status: Int, headers: HTTPHeaders = HTTPHeaders(), content: HTTPBody) {
        self.status = status
        self.headers = headers
        self.content = content
    }

    /// A JSON response with `Content-Type: application/json; charset=utf-8`.
    package static func json(_ status: Int, _ body: Data, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        var h = headers
        h.reserve(4)  // this one and the three every answer gets on its way out: one allocation
        h.set("Content-Type", "application/json; charset=utf-8")
        return HTTPResponse(status: status, headers: h, body: body)
    }

    /// A JSON answer of a route under `/api/`: `Content-Type` and the fields the edge sets alike on every such
    /// answer (`HTTPHeaders.alike`), rendered once and shared (`HTTPHeaders.apiJSON`). The edge then adds only
    /// the request's own fields, and the server writes the shared ones with one copy: the same fields as
    /// `json(_:_:headers:)` decorated, without three lookups and settings per answer.
    package static func apiJSON(_ status: Int, _ body: Data) -> HTTPResponse {
        HTTPResponse(status: status, headers: .apiJSON, body: body)
    }

    /// `apiJSON(_:_:)` with a body of any kind.
    package static func apiJSON(_ status: Int, content: HTTPBody) -> HTTPResponse {
        HTTPResponse(status: status, headers: .apiJSON, content: content)
    }

    /// A JSON response from a `JSONValue`.
    package static func json(_ status: Int, _ value: JSONValue, headers: HTTPHeaders = HTTPHeaders()) -> HTTPResponse {
        json(status, value.serialized(), headers: headers)
    }

    /// The standard reason phrase for common statuses.
    package static func reason(_ status: Int) -> String {
        switch status {
        case 200: return "OK"
        case 201: return "Created"
        case 204: return "No Content"
        case 301: return "Moved Permanently"
        case 304: return "Not Modified"
        case 400: return "Bad Request"
        case 401: return "Unauthorized"
        case 403: return "Forbidden"
        case 404: return "Not Found"
        case 405: return "Method Not Allowed"
        case 408: return "Request Timeout"
        case 409: return "Conflict"
        case 413: return "Payload Too Large"
        case 414: return "URI Too Long"
        case 415: return "Unsupported Media Type"
        case 429: return "Too Many Requests"
        case 500: return "Internal Server Error"
        case 502: return "Bad Gateway"
        case 503: return "Service Unavailable"
        case 504: return "Gateway Timeout"
        default: return "Status \(status)"
        }
    }
}
