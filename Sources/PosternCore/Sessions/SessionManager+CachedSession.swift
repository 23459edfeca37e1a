import FoundationEssentials

extension SessionManager {
    /// The live session of a token (its UTF-8 bytes, read where they were received) when the in-process cache
    /// holds it, found without an `await` (and marked used, as `authenticate(token:)` does); nil when the token
    /// is malformed, not cached or its session has expired: `authenticate(token:)` then decides, with a store
    /// read or the 401. The prefix is compared bytewise; the token's digest comes from the loop's memo of recent
    /// tokens (`TokenDigestMemo`) or is computed without a copy.
    func cachedLiveSession(tokenBytes bytes: UnsafeBufferPointer<UInt8>) -> Session? {
        guard bytes.count < 200, SessionManager.hasAccessTokenPrefix(bytes) else { return nil }
        let key = TokenDigestMemo.key(of: UnsafeRawBufferPointer(bytes))
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
