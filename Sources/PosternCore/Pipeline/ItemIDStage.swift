import FoundationEssentials

/// Rejects `{id}` values that are not valid keys of the collection with 404, before any upstream call.
struct ItemIDStage: Sendable {
    let mapper: ResourceMapper

    /// Throws 404 unless the `{id}` is a valid key.
    func check(_ context: RequestContext) throws(GatewayError) {
        guard let id = context.itemID, mapper.isValidID(id) else {
            throw .notFound("no such \(mapper.resource.name) item")
        }
    }
}
