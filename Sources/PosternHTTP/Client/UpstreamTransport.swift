import FoundationEssentials
import PosternIO

/// Sends one request to the upstream and returns its answer: what an upstream client (the gateway's `DirectusClient`)
/// sends through — the loops' pools (`LoopTransport`) or, in tests, an in-process handler or a double.
package protocol UpstreamTransport: Sendable {
    /// Sends `request`, failing with a transport failure after `timeout` seconds at most.
    func send(_ request: UpstreamRequest, timeout: Double) async throws(UpstreamFailure) -> UpstreamResponse
}

/// A transport that calls an in-process handler (pipeline tests without sockets).
package struct InProcessTransport: UpstreamTransport {
    private let handler: @Sendable (HTTPRequest) -> HTTPResponse

    /// Wraps a synchronous request handler, e.g. the Directus stand-in's.
    package init(_ handler: @escaping @Sendable (HTTPRequest) -> HTTPResponse) {
        self.handler = handler
    }

    /// Answers through the handler.
    package func send(_ request: UpstreamRequest, timeout: Double) async throws(UpstreamFailure) -> UpstreamResponse {
        handler(HTTPRequest(method: request.method, target: request.target, headers: request.headers,
                            body: request.body, remoteAddress: "127.0.0.1"))
    }
}
