import FoundationEssentials
import PosternHTTP

/// A transport that calls an in-process handler (pipeline tests without sockets).
struct InProcessTransport: UpstreamTransport {
    private let handler: @Sendable (HTTPRequest) -> HTTPResponse

    /// Wraps a synchronous request handler, e.g. the Directus stand-in's.
    init(_ handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse) {
        self.handler = handler
    }

    /// Answers through the handler.
    func send(_ request: UpstreamRequest, timeout: Double) async throws(UpstreamFailure) -> UpstreamResponse {
        handler(HTTPRequest(method: request.method, target: request.target, headers: request.headers,
                            body: request.body, remoteAddress: "127.0.0.1"))
    }
}
