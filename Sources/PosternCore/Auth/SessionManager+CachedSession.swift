import Foundation

extension SessionManager {
    /// The live session of `token` when the in-process cache holds it, found without an `await` (and marked
    /// used, as `authenticate(token:)` does); nil when the token is malformed, not cached or its session has
    /// expired: `authenticate(token:)` then decides, with a store read or the 401.
    func cachedLiveSession(token: Substring) -> Session? {
        // The token's bytes in place: its prefix compared bytewise (not `hasPrefix`, which compares Characters) and
        // digested without a copy.
        let digested: TokenKey?? = token.utf8.withContiguousStorageIfAvailable { bytes in
            bytes.count < 200 && SessionManager.hasAccessTokenPrefix(bytes) ? TokenKey(bytes: UnsafeRawBufferPointer(bytes)) : nil
        }
        let key: TokenKey
        switch digested {
        case .some(.some(let found)): key = found
        case .some(.none): return nil
        case .none:
            guard token.utf8.count < 200, token.utf8.starts(with: Crypto.accessTokenPrefix.utf8) else { return nil }
            key = TokenKey(token: token)
        }
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
