/// The refresh rule of the host-name cache, apart from threads and clocks: what a connect does with a name, and
/// what an answer or a failed connect changes. Times are monotonic nanoseconds passed in by the caller (tests pass
/// their own). Not thread-safe: `HostResolver` holds it under its lock.
///
/// An answer younger than `refreshAfter` is used as it is. An older one is still used by the connect that finds
/// it, and a lookup starts beside it whose answer serves the connects after it (a connect never waits for a
/// refresh while an address is known, and a resolver that is slow or down costs nothing while the address
/// works). A failed connect (refused, unreachable, timed out) drops the address: the next connect waits for a
/// fresh lookup. A refresh that fails keeps the address it was to replace (the next connect tries again).
package struct ResolverCache {
    /// How long an answer is used before the name is looked up again: 30 s, so that a restarted container's
    /// new address is seen.
    package static let refreshAfter: UInt64 = 30_000_000_000

    /// What a connect does with a name.
    package enum Decision: Equatable {
        /// Connect to the cached address.
        case use(ResolvedAddress)
        /// Connect to the cached address, and start a lookup of the name whose answer serves later connects.
        case useAndRefresh(ResolvedAddress)
        /// No address to use: wait for the name's lookup, and start it when `start` is true (else one is in flight).
        case wait(start: Bool)
    }

    /// An empty cache.
    package init() {}

    private struct Entry {
        var address: ResolvedAddress?
        var resolvedAt: UInt64 = 0
        var inFlight = false
    }

    private var entries: [String: Entry] = [:]

    /// What a connect to `name` does at `now` (a lookup it is told to start is counted as in flight).
    package mutating func ask(_ name: String, now: UInt64) -> Decision {
        var entry = entries[name, default: Entry()]
        defer { entries[name] = entry }
        guard let address = entry.address else {
            if entry.inFlight { return .wait(start: false) }
            entry.inFlight = true
            return .wait(start: true)
        }
        if entry.inFlight || now &- entry.resolvedAt < ResolverCache.refreshAfter { return .use(address) }
        entry.inFlight = true
        return .useAndRefresh(address)
    }

    /// The lookup of `name` ended at `now`: an address replaces the cached one; a failure keeps it.
    package mutating func answered(_ name: String, _ address: ResolvedAddress?, now: UInt64) {
        var entry = entries[name, default: Entry()]
        entry.inFlight = false
        if let address {
            entry.address = address
            entry.resolvedAt = now
        }
        entries[name] = entry
    }

    /// A connect to `name`'s address failed: the next connect waits for a fresh lookup.
    package mutating func connectFailed(_ name: String) {
        entries[name]?.address = nil
    }
}
