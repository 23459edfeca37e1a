/// The refresh and address rule of the host-name cache, apart from threads and clocks: what a connect does with a
/// name, which of its addresses a new connection tries and in what order, and what an answer or a failed connect
/// changes. Times are monotonic nanoseconds passed in by the caller (tests pass their own). Not thread-safe:
/// `HostResolver` holds it under its lock.
///
/// Refresh: an answer younger than `refreshAfter` is used as it is. An older one is still used by the connect that
/// finds it, and a lookup starts beside it whose answer serves the connects after it (a connect never waits for a
/// refresh while an address is known, and a resolver that is slow or down costs nothing while an address works).
/// A refresh that fails keeps the addresses it was to replace (the next connect tries again).
///
/// Several addresses: each new connection gets an `AddressPlan`, the name's addresses that work in turn (round
/// robin: each plan starts one further along), which it tries in order until one connects. An address whose
/// connect failed (refused, unreachable, timed out) is left out of the plans for `skipFailedFor`; a connect to it
/// that succeeds takes it back at once. When every address has failed lately the name may have moved: the next
/// connect waits for a fresh lookup, and its plan is every address again (those known before when the lookup
/// fails), rather than none: nothing is ever refused without a try. Marks are kept by address across refreshes.
struct ResolverCache {
    /// How long an answer is used before the name is looked up again: 30 s, so that a restarted container's
    /// new address is seen.
    static let refreshAfter: UInt64 = 30_000_000_000

    /// How long an address whose connect failed is left out of new connections' plans: 10 s.
    static let skipFailedFor: UInt64 = 10_000_000_000

    /// What a connect does with a name.
    enum Decision: Equatable {
        /// Connect by `plan`.
        case use(AddressPlan)
        /// Connect by `plan`, and start a lookup of the name whose answer serves later connects.
        case useAndRefresh(AddressPlan)
        /// No address to use: wait for the name's lookup, and start it when `start` is true (else one is in flight).
        case wait(start: Bool)
    }

    /// An empty cache.
    init() {}

    private struct Entry {
        /// The last answer (empty: none yet).
        var addresses: [ResolvedAddress] = []
        var resolvedAt: UInt64 = 0
        var inFlight = false
        /// Where the next plan starts among the addresses that work (round robin).
        var turn = 0
        /// Addresses whose connect failed, with the time until which they are left out.
        var failed: [(address: ResolvedAddress, until: UInt64)] = []

        /// True while `address` is left out of plans at `now`.
        func skips(_ address: ResolvedAddress, now: UInt64) -> Bool {
            failed.contains { $0.address == address && now < $0.until }
        }
    }

    private var entries: [String: Entry] = [:]

    /// What a connect to `name` does at `now` (a lookup it is told to start is counted as in flight; a plan it is
    /// given moves the round robin on).
    mutating func ask(_ name: String, now: UInt64) -> Decision {
        var entry = entries[name, default: Entry()]
        defer { entries[name] = entry }
        let working = entry.addresses.filter { !entry.skips($0, now: now) }
        guard !working.isEmpty else {
            // Nothing known, or every address failed lately (the name may have moved): a fresh lookup first.
            if entry.inFlight { return .wait(start: false) }
            entry.inFlight = true
            return .wait(start: true)
        }
        let plan = Self.rotated(working, by: &entry.turn, retrying: false)
        if entry.inFlight || now &- entry.resolvedAt < ResolverCache.refreshAfter { return .use(plan) }
        entry.inFlight = true
        return .useAndRefresh(plan)
    }

    /// The plan for a connect that waited for `name`'s lookup, which has answered: its addresses that work in
    /// turn, or every one of them when all failed lately (marked `retrying`); nil when the name has no address.
    package mutating func plan(_ name: String, now: UInt64) -> AddressPlan? {
        guard var entry = entries[name], !entry.addresses.isEmpty else { return nil }
        defer { entries[name] = entry }
        let working = entry.addresses.filter { !entry.skips($0, now: now) }
        if working.isEmpty { return Self.rotated(entry.addresses, by: &entry.turn, retrying: true) }
        return Self.rotated(working, by: &entry.turn, retrying: false)
    }

    /// The lookup of `name` ended at `now`: addresses replace the cached ones (the failure marks of those still
    /// listed are kept); a failure keeps them.
    package mutating func answered(_ name: String, _ addresses: [ResolvedAddress]?, now: UInt64) {
        var entry = entries[name, default: Entry()]
        entry.inFlight = false
        if let addresses, !addresses.isEmpty {
            entry.addresses = addresses
            entry.resolvedAt = now
            entry.failed.removeAll { failed in !addresses.contains(failed.address) || now >= failed.until }
        }
        entries[name] = entry
    }

    /// A connect to `address` of `name` failed at `now`: new connections leave it out for `skipFailedFor`.
    /// Names never looked up (numeric hosts) are not affected.
    package mutating func connectFailed(_ name: String, _ address: ResolvedAddress, now: UInt64) {
        guard var entry = entries[name], entry.addresses.contains(address) else { return }
        entry.failed.removeAll { $0.address == address || now >= $0.until }
        entry.failed.append((address, now &+ ResolverCache.skipFailedFor))
        entries[name] = entry
    }

    /// A connect to `address` of `name` succeeded: it is no longer left out.
    package mutating func connectSucceeded(_ name: String, _ address: ResolvedAddress) {
        guard entries[name]?.failed.isEmpty == false else { return }
        entries[name]?.failed.removeAll { $0.address == address }
    }

    /// `addresses` starting at `turn` (modulo their count), and `turn` moved on by one.
    private static func rotated(_ addresses: [ResolvedAddress], by turn: inout Int, retrying: Bool) -> AddressPlan {
        let start = turn % addresses.count
        turn = turn == Int.max ? 0 : turn + 1
        return AddressPlan(addresses: Array(addresses[start...] + addresses[..<start]), retrying: retrying)
    }
}

/// The addresses one new connection to a host name tries, in order: the next one after each failed connect (never
/// once anything of a request was sent on the connection).
package struct AddressPlan: Sendable, Equatable {
    /// The addresses to try, first to last (never empty).
    package let addresses: [ResolvedAddress]
    /// True when every address of the name had failed lately and the plan tries them again: a connect that succeeds
    /// reports it (`HostResolver.connectSucceeded`), so that the address serves the next connections at once.
    package let retrying: Bool

    /// A plan trying `addresses` in order.
    package init(addresses: [ResolvedAddress], retrying: Bool = false) {
        self.addresses = addresses
        self.retrying = retrying
    }
}
