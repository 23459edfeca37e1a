import PosternIO

/// The SHA-256 digests (`TokenKey`) of the bearer tokens one event loop saw last, so that a request presenting the
/// same token as a recent one (a client's next request on its keep-alive connection) finds its session cache key
/// without digesting the token again: the digest was a sixth of a cached request's instructions.
///
/// - A pure memo of a function: an entry maps a token's exact bytes to that token's digest, so it can never be stale.
///   A revoked or expired token still maps to its digest; the session cache and the store then refuse it as before.
/// - Direct-mapped: `slotCount` slots, the slot chosen by a seeded mix of the token's bytes; a token that lands on a
///   taken slot replaces its entry. A miss costs the digest it would have cost anyway.
/// - A hit needs every byte equal, compared in constant time over the whole slot (no early exit), so that the time
///   a lookup takes says nothing about how much of another client's token a guess got right. The slot choice is
///   seeded per loop, so that no client can aim its tokens at another's slot to evict it.
/// - Tokens of at most `maxTokenBytes` bytes are kept (Postern's access tokens are 47); longer ones are digested
///   every time.
/// - It holds up to `slotCount` recent tokens in the loop's memory, as the session cache holds each session's Directus
///   tokens; freed (and wiped) with the loop.
///
/// One per event loop (`EventLoop.local`), used from that loop's thread only: no lock.
final class TokenDigestMemo {
    /// Slots per loop (about 90 bytes each).
    static let slotCount = 256
    /// The longest token kept: six words.
    static let maxTokenBytes = 48

    /// One remembered token and its digest.
    private struct Slot {
        /// The token's bytes, zero-padded to six words.
        var words: Words
        /// The token's length; -1 for a slot never filled (no token matches it).
        var count: Int
        /// The token's digest.
        var key: TokenKey
    }

    /// Six words of token bytes.
    private typealias Words = (UInt64, UInt64, UInt64, UInt64, UInt64, UInt64)

    /// A slot never filled (and one wiped).
    private static let empty = Slot(words: (0, 0, 0, 0, 0, 0), count: -1, key: TokenKey(w0: 0, w1: 0, w2: 0, w3: 0))

    private let slots: UnsafeMutablePointer<Slot>
    /// The seed of the slot choice (odd, so that the multiplication mixes every bit upwards).
    private let seed: UInt64

    init() {
        slots = .allocate(capacity: TokenDigestMemo.slotCount)
        slots.initialize(repeating: TokenDigestMemo.empty, count: TokenDigestMemo.slotCount)
        seed = KernelRandom.threeWords().0 | 1
    }

    deinit {
        // The slots hold bearer tokens: wiped before the memory goes back to the allocator.
        slots.update(repeating: TokenDigestMemo.empty, count: TokenDigestMemo.slotCount)
        slots.deallocate()
    }

    /// The digest of `token`, remembered or computed (and then remembered in place of the slot's last token).
    func key(_ token: UnsafeRawBufferPointer) -> TokenKey {
        let count = token.count
        guard count <= TokenDigestMemo.maxTokenBytes, let base = token.baseAddress else { return TokenKey(bytes: token) }
        var words: Words = (0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &words) { $0.baseAddress!.copyMemory(from: base, byteCount: count) }
        // The high bits of the product depend on every bit of the mixed words.
        let mixed = (words.0 ^ words.1 ^ words.2 ^ words.3 ^ words.4 ^ words.5 ^ UInt64(count)) &* seed
        let slot = slots + Int(truncatingIfNeeded: mixed &>> UInt64(64 - TokenDigestMemo.slotBits))
        let stored = slot.pointee.words
        let difference = (stored.0 ^ words.0) | (stored.1 ^ words.1) | (stored.2 ^ words.2)
            | (stored.3 ^ words.3) | (stored.4 ^ words.4) | (stored.5 ^ words.5)
            | UInt64(bitPattern: Int64(slot.pointee.count ^ count))
        if difference == 0 { return slot.pointee.key }
        let key = TokenKey(bytes: token)
        slot.pointee = Slot(words: words, count: count, key: key)
        return key
    }

    /// log2 of `slotCount`.
    private static let slotBits = slotCount.trailingZeroBitCount

    private static let localKey = EventLoop.LocalKey()

    /// The digest of `token`: through the calling loop's memo, or computed off the loops.
    @inline(__always)
    static func key(of token: UnsafeRawBufferPointer) -> TokenKey {
        if let memo = EventLoop.currentLocal(localKey, make: { TokenDigestMemo() }) { return memo.key(token) }
        return TokenKey(bytes: token)
    }
}
