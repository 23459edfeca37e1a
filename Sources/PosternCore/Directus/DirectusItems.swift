import FoundationEssentials
import PosternHTTP
import PosternIO

/// Item calls to Directus on behalf of a caller: with the caller's Directus token (kept fresh by `sessions`: the
/// session manager, `DirectusItems<SessionManager>`), or anonymously on public routes; Directus errors translated
/// for the resource (field names, 403 vs 404).
struct DirectusItems<Tokens: DirectusTokenSource>: Sendable {
    let directus: DirectusClient
    let sessions: Tokens

    /// Runs `call` with the caller's Directus token (nil when anonymous). A Directus FORBIDDEN becomes
    /// `forbidden`; validation errors name the resource's field.
    func withToken<T: Sendable>(_ session: Tokens.Caller?, mapper: ResourceMapper, call context: CallFields, forbidden: GatewayError,
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
                    return try await retriedWithFreshToken(session, mapper: mapper, call: context, forbidden: forbidden) {
                        (token) async throws(DirectusError) -> T in
                        try await call(token)
                    }
                } catch {
                    throw translated(error, mapper: mapper, forbidden: forbidden)
                }
            }
            return try await sessions.withDirectusToken(session, context: context, translate: { error in
                translated(error, mapper: mapper, forbidden: forbidden)
            }) { (token) async throws(DirectusError) -> T in
                try await call(token)
            }
        }
        do {
            return try await call(nil)
        } catch {
            throw translated(error, mapper: mapper, forbidden: forbidden)
        }
    }

    /// Reads one item with its detail fields (`ResourceMapper.readQuery`); a Directus 403 (which hides "missing")
    /// is 404 here.
    func readItem(id: String, mapper: ResourceMapper, session: Tokens.Caller?, call: CallFields) async throws(GatewayError) -> HTTPBody {
        try await read(UpstreamTarget(item: id, of: mapper), mapper: mapper, session: session, call: call,
                       forbidden: .notFound("no such \(mapper.resource.name) item"))
    }

    /// Reads `target` (a list or an item) with the caller's token; a Directus 403 is `forbidden`.
    func read(_ target: UpstreamTarget, mapper: ResourceMapper, session: Tokens.Caller?, call: CallFields,
              forbidden: GatewayError) async throws(GatewayError) -> HTTPBody {
        try await withToken(session, mapper: mapper, call: call, forbidden: forbidden) {
            (token) async throws(DirectusError) -> HTTPBody in
            try await directus.read(target, token: token, context: call)
        }
    }

    /// The caller's Directus token for `startRead`: `.some(nil)` for an anonymous call, nil when it cannot start
    /// here (off the loops, or the token is about to expire and must be refreshed first: `read` then).
    func startToken(_ session: Tokens.Caller?) -> String?? {
        guard directus.canStart else { return nil }
        guard let session else { return .some(nil) }
        guard let token = sessions.freshDirectusToken(session) else { return nil }
        return .some(token)
    }

    /// `read`'s upstream call without a task, with the token `startToken` gave (`DirectusClient.startRead`: nil and
    /// the outcome for `completion`, which `readOutcome` reads; or the breaker's refusal). The caller finishes as
    /// `read` would: `translated`, or `retriedWithFreshToken` when the error calls the token stale
    /// (`DirectusError.isStaleToken`) and there is a session.
    func startRead(_ target: UpstreamTarget, token: String?, call: CallFields,
                   completion: @escaping UpstreamCompletion) -> DirectusError? {
        directus.startRead(target, token: token, context: call, completion: completion)
    }

    /// The body of a 2xx answer to a call `startRead` sent at `start`, or Directus's error, untranslated
    /// (`DirectusClient.readOutcome`).
    func readOutcome(_ outcome: consuming Result<UpstreamResponse, UpstreamFailure>, since start: MonotonicInstant,
                     call: CallFields) -> Result<HTTPBody, DirectusError> {
        directus.readOutcome(outcome, since: start, trace: call.accessTrace)
    }

    /// A Directus error of a read as `read` throws it: a 403 is `forbidden`, validation errors name the resource's
    /// field.
    func translated(_ error: DirectusError, mapper: ResourceMapper, forbidden: GatewayError) -> GatewayError {
        error.forItemCall(forbidden: forbidden, fieldName: { mapper.resourceFieldName(forDirectus: $0) })
    }

    /// `call` once more after Directus called `session`'s token stale: the token refreshed first, errors translated
    /// (`withToken`'s retry, and that of a read started without a task).
    func retriedWithFreshToken<T: Sendable>(_ session: Tokens.Caller, mapper: ResourceMapper, call context: CallFields,
                                            forbidden: GatewayError,
                                            _ call: (String) async throws(DirectusError) -> T) async throws(GatewayError) -> T {
        try await sessions.retryWithFreshDirectusToken(session, context: context, translate: { error in
            translated(error, mapper: mapper, forbidden: forbidden)
        }) { (token) async throws(DirectusError) -> T in
            try await call(token)
        }
    }
}
