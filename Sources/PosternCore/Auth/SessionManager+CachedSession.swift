import Foundation

extension SessionManager {
    /// The live session of `token` when the in-process cache holds it, found without an `await` (and marked
    /// used, as `authenticate(token:)` does); nil when the token is malformed, not cached or its session has
    /// expired: `authenticate(token:)` then decides, with a store read or the 401.
    func cachedLiveSession(token: Substring) -> Session? {
        // The token's bytes in place: its prefix compared bytewise (not `hasPrefix`, which compares Characters) and
        // digested without a copy.
        let found: Session?? = token.utf8.withContiguousStorageIfAvailable { cachedLiveSession(tokenBytes: $0) }
        if let found { return found }
        guard token.utf8.count < 200, token.utf8.starts(with: Crypto.accessTokenPrefix.utf8) else { return nil }
        return cachedLiveSession(key: TokenKey(token: token))
    }

    /// `cachedLiveSession(token:)` of a token given as its UTF-8 bytes (read where they were received).
    func cachedLiveSession(tokenBytes bytes: UnsafeBufferPointer<UInt8>) -> Session? {
        guard bytes.count < 200, SessionManager.hasAccessTokenPrefix(bytes) else { return nil }
        return cachedLiveSession(key: TokenKey(bytes: UnsafeRawBufferPointer(bytes)))
    }

    /// The live cached session under `key`, marked used.
    private func cachedLiveSession(key: TokenKey) -> Session? {
        let now = clock()
        guard let session = cache.hit(key, now: now, idleTTL: idleTTL, touchInterval: SessionManager.touchInterval),
              !session.isExpired(now: now, idleTTL: idleTTL) else { return nil }
        return session
    }

    /// The bytes of `Crypto.accessTokenPrefix` (`pst_`), for the comparison in place.
    private static let accessPrefixBytes: [UInt8] = Array(Crypto.accessTokenPrefix.utf8)

    /// True when `bytes` start with `Crypto.accessTokenPrefix`.
    static func hasAccessTokenPrefix(_ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let prefix = accessPrefixBytes
        guard bytes.count >= prefix.count else { return false }
        for i in 0..<prefix.count where bytes[i] != prefix[i] { return false }
        return true
    }
}
