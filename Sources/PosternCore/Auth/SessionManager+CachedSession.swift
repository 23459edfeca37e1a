import Foundation

extension SessionManager {
    /// The live session of `token` when the in-process cache holds it, found without an `await` (and marked
    /// used, as `authenticate(token:)` does); nil when the token is malformed, not cached or its session has
    /// expired: `authenticate(token:)` then decides, with a store read or the 401.
    func cachedLiveSession(token: Substring) -> Session? {
        guard token.hasPrefix(Crypto.accessTokenPrefix), token.utf8.count < 200 else { return nil }
        let now = clock()
        guard let session = cache.hit(TokenKey(token: token), now: now, idleTTL: idleTTL, touchInterval: SessionManager.touchInterval),
              !session.isExpired(now: now, idleTTL: idleTTL) else { return nil }
        return session
    }
}
