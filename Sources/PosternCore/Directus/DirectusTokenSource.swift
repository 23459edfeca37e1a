/// Where item calls get their caller's Directus access token, kept fresh: the session manager (`Sessions/`), seen
/// from here through this protocol, so that `Directus/` does not depend on `Sessions/`, which depends on it.
protocol DirectusTokenSource: Sendable {
    /// Whom a call is made for (a session).
    associatedtype Caller: Sendable

    /// `caller`'s access token when it is not about to expire, else nil (`withDirectusToken` refreshes it first).
    func freshDirectusToken(_ caller: Caller) -> String?

    /// After Directus called `caller`'s access token stale: refreshes it once and runs `call` once more.
    func retryWithFreshDirectusToken<T: Sendable>(_ caller: Caller, context: CallFields,
                                                  translate: (DirectusError) -> GatewayError,
                                                  _ call: (String) async throws(DirectusError) -> T) async throws(GatewayError) -> T

    /// Runs `call` with `caller`'s access token, refreshed first when it is about to expire, and once more after a
    /// refresh when Directus calls it stale; other Directus errors go through `translate`.
    func withDirectusToken<T: Sendable>(_ caller: Caller, context: CallFields, translate: (DirectusError) -> GatewayError,
                                        _ call: (String) async throws(DirectusError) -> T) async throws(GatewayError) -> T
}
