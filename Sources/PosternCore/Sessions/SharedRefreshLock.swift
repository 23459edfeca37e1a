import FoundationEssentials

/// A lock per session held in a store shared by several gateway instances, so that only one of them
/// refreshes the session's Directus tokens at a time (Directus rotates its refresh token: a second refresh
/// with the old one fails and would end the session). The lock expires by itself after `refreshLockTTL`,
/// so a holder that dies never wedges the session.
protocol SharedRefreshLock: Sendable {
    /// How long a lock lives unless released; longer than a Directus call can take.
    var refreshLockTTL: TimeInterval { get }
    /// Takes the lock of `sessionID`: a token to release it with, or nil when another instance holds it.
    func acquireRefreshLock(sessionID: String) async throws(SessionStoreError) -> String?
    /// Releases the lock taken with `token` (no-op when it expired and someone else holds it now).
    func releaseRefreshLock(sessionID: String, token: String) async
}
