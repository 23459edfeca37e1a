import Foundation

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

/// A middleware bound to its next stage: the pipeline is a chain of these, built once.
struct ChainedResponder: Responder {
    let middleware: any Middleware
    let next: any Responder

    func respond(to request: HTTPRequest, context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        try await middleware.handle(request, context: context, next: next)
    }
}

extension Array where Element == any Middleware {
    /// The chain `self[0] → self[1] → … → responder`.
    func wrapping(_ responder: any Responder) -> any Responder {
        reversed().reduce(responder) { next, middleware in ChainedResponder(middleware: middleware, next: next) }
    }
}
