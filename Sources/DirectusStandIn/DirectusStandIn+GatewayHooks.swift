import FoundationEssentials
import PosternIO

extension DirectusStandIn {
    /// Deletes every refresh session, as if each user had logged out elsewhere (their refresh tokens die;
    /// access tokens stay valid until they expire, as in Directus).
    package func revokeAllRefreshTokens() {
        lock.withLock { state.sessions.removeAll() }
    }
}
