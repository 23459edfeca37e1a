import Foundation

/// A request as the gateway sees it: a plain value, no libevent pointers.
public struct HTTPRequest: Sendable {
    /// The request method.
    public var method: HTTPMethod
    /// The path as received (still percent-encoded, no query), e.g. `/api/v1/books/12`; routing decodes each segment.
    public var path: String
    /// The raw query string without `?` (may be empty).
    public var query: String
    /// Request headers.
    public var headers: HTTPHeaders
    /// The request body (empty when none).
    public var body: Data
    /// The socket peer address (IP only).
    public var remoteAddress: String

    /// Builds a request.
    public init(method: HTTPMethod, path: String, query: String = "", headers: HTTPHeaders = HTTPHeaders(),
                body: Data = Data(), remoteAddress: String = "127.0.0.1") {
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
        self.remoteAddress = remoteAddress
    }

    /// Splits a request target such as `/a/b?x=1` into path and query (at the first `?` byte).
    public init(method: HTTPMethod, target: String, headers: HTTPHeaders = HTTPHeaders(), body: Data = Data(),
                remoteAddress: String = "127.0.0.1") {
        if let q = target.utf8.firstIndex(of: UInt8(ascii: "?")) {
            self.init(method: method, path: String(target[..<q]), query: String(target[target.index(after: q)...]),
                      headers: headers, body: body, remoteAddress: remoteAddress)
        } else {
            self.init(method: method, path: target, headers: headers, body: body, remoteAddress: remoteAddress)
        }
    }

    /// The query parameters, percent-decoded (`+` read as space), in order.
    public var queryItems: [(name: String, value: String)] {
        QueryString.parse(query)
    }
}
