import FoundationEssentials

/// Answers a request.
public protocol Responder: Sendable {
    /// Produces the response, or throws a `GatewayError`.
    func respond(to request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse
}

/// Wraps the next stage of the pipeline.
public protocol Middleware: Sendable {
    /// Handles the request, usually by calling `next` with a (possibly enriched) context.
    func handle(_ request: HTTPRequest, context: RequestContext, next: any Responder) async throws(GatewayError) -> HTTPResponse
}

/// A responder made of a closure.
public struct ClosureResponder: Responder {
    private let body: @Sendable (HTTPRequest, RequestContext) async throws(GatewayError) -> HTTPResponse

    /// Wraps `body`.
    public init(_ body: @escaping @Sendable (HTTPRequest, RequestContext) async throws(GatewayError) -> HTTPResponse) {
        self.body = body
    }

    /// Calls the closure.
    public func respond(to request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        try await body(request, context)
    }
}
