import FoundationEssentials

/// Rejects `{id}` values that are not valid keys of the collection with 404, before any upstream call.
struct ItemIDMiddleware: Middleware {
    let mapper: ResourceMapper

    func handle(_ request: HTTPRequest, context: RequestContext, next: any Responder) async throws(GatewayError) -> HTTPResponse {
        try check(context)
        return try await next.respond(to: request, context: context)
    }

    /// Throws 404 unless the `{id}` is a valid key.
    func check(_ context: RequestContext) throws(GatewayError) {
        guard let id = context.itemID, mapper.isValidID(id) else {
            throw .notFound("no such \(mapper.resource.name) item")
        }
    }
}
