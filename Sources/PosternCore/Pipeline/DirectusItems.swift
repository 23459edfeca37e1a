import FoundationEssentials

/// Item calls to Directus on behalf of a caller: with the session's Directus token (kept fresh), or
/// anonymously on public routes; Directus errors translated for the resource (field names, 403 vs 404).
struct DirectusItems: Sendable {
    let directus: DirectusClient
    let sessions: SessionManager

    /// Runs `call` with the caller's Directus token (nil when anonymous). A Directus FORBIDDEN becomes
    /// `forbidden`; validation errors name the resource's field.
    func withToken<T: Sendable>(_ session: Session?, mapper: ResourceMapper, context: RequestContext, forbidden: GatewayError,
                                _ call: (String?) async throws(DirectusError) -> T) async throws(GatewayError) -> T {
        // The translation is written out at each use, not kept in a closure value: such a closure would copy the
        // whole mapper on every call, though only a failing call needs it.
        if let session {
            // The usual case, a token that is not about to expire: the call runs here, without the nested
            // closures (each an async frame); a stale answer goes on exactly as in `withDirectusToken`.
            if let token = sessions.freshDirectusToken(session) {
                do {
                    return try await call(token)
                } catch let error where error.isStaleToken {
                    return try await sessions.retryWithFreshDirectusToken(session, context: context.call, translate: { error in
                        error.forItemCall(forbidden: forbidden, fieldName: { mapper.resourceFieldName(forDirectus: $0) })
                    }) { (token) async throws(DirectusError) -> T in
                        try await call(token)
                    }
                } catch {
                    throw error.forItemCall(forbidden: forbidden, fieldName: { mapper.resourceFieldName(forDirectus: $0) })
                }
            }
            return try await sessions.withDirectusToken(session, context: context.call, translate: { error in
                error.forItemCall(forbidden: forbidden, fieldName: { mapper.resourceFieldName(forDirectus: $0) })
            }) { (token) async throws(DirectusError) -> T in
                try await call(token)
            }
        }
        do {
            return try await call(nil)
        } catch {
            throw error.forItemCall(forbidden: forbidden, fieldName: { mapper.resourceFieldName(forDirectus: $0) })
        }
    }

    /// Reads one item with its detail fields (`ResourceMapper.readQuery`); a Directus 403 (which hides "missing")
    /// is 404 here.
    func readItem(id: String, mapper: ResourceMapper, session: Session?, context: RequestContext) async throws(GatewayError) -> Data {
        let path = mapper.upstreamItemPath(id: id)
        return try await withToken(session, mapper: mapper, context: context, forbidden: .notFound("no such \(mapper.resource.name) item")) {
            (token) async throws(DirectusError) -> Data in
            try await directus.getItem(path: path, query: mapper.readQuery, token: token, context: context.call)
        }
    }
}
