import FoundationEssentials

/// Refuses bodies above the configured limit with a JSON 413 (the server's own ceiling sits above it).
public struct BodyLimitMiddleware: Middleware {
    /// The largest accepted body in bytes.
    public let maxBytes: Int

    /// Creates the stage.
    public init(maxBytes: Int) { self.maxBytes = maxBytes }

    /// Passes requests within the limit.
    public func handle(_ request: HTTPRequest, context: RequestContext, next: any Responder) async throws(GatewayError) -> HTTPResponse {
        try check(request)
        return try await next.respond(to: request, context: context)
    }

    /// Throws 413 for a body above the limit.
    func check(_ request: HTTPRequest) throws(GatewayError) {
        guard request.body.count <= maxBytes else { throw .payloadTooLarge(maxBytes) }
    }
}
