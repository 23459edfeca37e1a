import Foundation
import Testing
@testable import PosternIO
import PosternTesting

/// The host-name cache's refresh rule, on a clock the test moves (no sleeps): an answer serves 30 s, then the
/// connect that finds it old still uses it while a refresh starts; a name whose addresses all failed waits for a
/// fresh lookup; one lookup per name. (Its address rule, several addresses: ResolverCacheAddressTests. The resolver
/// around it: HostResolverTests.)
@Suite struct ResolverCacheTests {
    static let old = ResolvedAddress(numeric: "10.0.0.1")!  // a literal numeric address
    static let new = ResolvedAddress(numeric: "10.0.0.2")!  // a literal numeric address
    static let second: UInt64 = 1_000_000_000

    @Test func theFirstConnectWaitsForOneLookupThatServesEveryConnectFor30Seconds() {
        var cache = ResolverCache()
        #expect(cache.ask("directus", now: 0) == .wait(start: true))
        #expect(cache.ask("directus", now: 1) == .wait(start: false))  // one lookup in flight per name
        #expect(cache.ask("redis", now: 1) == .wait(start: true))  // names are apart
        cache.answered("directus", [Self.old], now: 5 * Self.second)
        #expect(cache.ask("directus", now: 5 * Self.second) == .use(AddressPlan(addresses: [Self.old])))
        #expect(cache.ask("directus", now: 35 * Self.second - 1) == .use(AddressPlan(addresses: [Self.old])))
    }

    @Test func anAnswer30SecondsOldIsUsedWhileOneRefreshRunsAndTheNewAnswerServesAfterIt() {
        var cache = ResolverCache()
        _ = cache.ask("directus", now: 0)
        cache.answered("directus", [Self.old], now: 0)
        #expect(cache.ask("directus", now: 30 * Self.second) == .useAndRefresh(AddressPlan(addresses: [Self.old])))
        #expect(cache.ask("directus", now: 31 * Self.second) == .use(AddressPlan(addresses: [Self.old])))  // the refresh is in flight
        cache.answered("directus", [Self.new], now: 32 * Self.second)
        #expect(cache.ask("directus", now: 32 * Self.second) == .use(AddressPlan(addresses: [Self.new])))
        #expect(cache.ask("directus", now: 61 * Self.second) == .use(AddressPlan(addresses: [Self.new])))
        #expect(cache.ask("directus", now: 62 * Self.second) == .useAndRefresh(AddressPlan(addresses: [Self.new])))
    }

    @Test func aRefreshThatFailsKeepsTheAddressAndTheNextConnectTriesAgain() {
        var cache = ResolverCache()
        _ = cache.ask("directus", now: 0)
        cache.answered("directus", [Self.old], now: 0)
        #expect(cache.ask("directus", now: 40 * Self.second) == .useAndRefresh(AddressPlan(addresses: [Self.old])))
        cache.answered("directus", nil, now: 41 * Self.second)
        #expect(cache.ask("directus", now: 42 * Self.second) == .useAndRefresh(AddressPlan(addresses: [Self.old])))
    }

    @Test func aFailedConnectToTheOnlyAddressMakesTheNextConnectWaitForAFreshLookup() {
        var cache = ResolverCache()
        _ = cache.ask("directus", now: 0)
        cache.answered("directus", [Self.old], now: 0)
        cache.connectFailed("directus", Self.old, now: Self.second)
        #expect(cache.ask("directus", now: Self.second) == .wait(start: true))
        cache.answered("directus", [Self.new], now: 2 * Self.second)
        #expect(cache.ask("directus", now: 2 * Self.second) == .use(AddressPlan(addresses: [Self.new])))
        // During a refresh, a failed connect leaves the next connects waiting for that refresh (no second lookup).
        #expect(cache.ask("directus", now: 40 * Self.second) == .useAndRefresh(AddressPlan(addresses: [Self.new])))
        cache.connectFailed("directus", Self.new, now: 40 * Self.second)
        #expect(cache.ask("directus", now: 40 * Self.second) == .wait(start: false))
        // A name never looked up is not affected.
        cache.connectFailed("127.0.0.1", Self.old, now: 0)
        #expect(cache.ask("127.0.0.1", now: 0) == .wait(start: true))
    }

    @Test func aFirstLookupThatFailsIsRetriedByTheNextConnect() {
        var cache = ResolverCache()
        _ = cache.ask("directus", now: 0)
        cache.answered("directus", nil, now: 1)
        #expect(cache.ask("directus", now: 2) == .wait(start: true))
    }
}

/// The cache's address rule for a name with several addresses, on a clock the test moves: new connections take
/// the addresses that work in turn (round robin), an address whose connect failed is left out for 10 s (and at once
/// taken back when a retry connects), and when every address failed the next connect waits for a fresh lookup
/// whose plan is every address again, never none.
@Suite struct ResolverCacheAddressTests {
    static let a = ResolvedAddress(numeric: "10.0.0.1")!  // a literal numeric address
    static let b = ResolvedAddress(numeric: "10.0.0.2")!  // a literal numeric address
    static let c = ResolvedAddress(numeric: "10.0.0.3")!  // a literal numeric address
    static let second: UInt64 = 1_000_000_000

    /// The first address of the plan each of `count` connects gets at `now` (nil for a connect told to wait).
    private func firsts(_ cache: inout ResolverCache, count: Int, now: UInt64) -> [String?] {
        (0..<count).map { _ in
            switch cache.ask("directus", now: now) {
            case .use(let plan), .useAndRefresh(let plan): return plan.addresses.first?.numericText
            case .wait: return nil
            }
        }
    }

    /// A cache that knows directus as `addresses`, answered at 0.
    private func cache(_ addresses: [ResolvedAddress]) -> ResolverCache {
        var cache = ResolverCache()
        _ = cache.ask("directus", now: 0)
        cache.answered("directus", addresses, now: 0)
        return cache
    }

    @Test func newConnectionsTakeTheAddressesInTurnEachPlanListingTheOthersAfterIt() {
        var cache = cache([Self.a, Self.b, Self.c])
        #expect(cache.ask("directus", now: 1) == .use(AddressPlan(addresses: [Self.a, Self.b, Self.c])))
        #expect(cache.ask("directus", now: 1) == .use(AddressPlan(addresses: [Self.b, Self.c, Self.a])))
        #expect(cache.ask("directus", now: 1) == .use(AddressPlan(addresses: [Self.c, Self.a, Self.b])))
        #expect(firsts(&cache, count: 6, now: 1) == ["10.0.0.1", "10.0.0.2", "10.0.0.3", "10.0.0.1", "10.0.0.2", "10.0.0.3"])
    }

    @Test func anAddressWhoseConnectFailedIsLeftOutFor10SecondsWhileTheOthersShareTheConnections() {
        var cache = cache([Self.a, Self.b, Self.c])
        cache.connectFailed("directus", Self.a, now: Self.second)
        #expect(cache.ask("directus", now: Self.second) == .use(AddressPlan(addresses: [Self.b, Self.c])))
        #expect(firsts(&cache, count: 4, now: 2 * Self.second) == ["10.0.0.3", "10.0.0.2", "10.0.0.3", "10.0.0.2"])
        // Still left out just before 10 s have passed since its failure; back in the turn at 10 s.
        let justBefore = Self.second + ResolverCache.skipFailedFor - 1
        #expect(!firsts(&cache, count: 3, now: justBefore).contains("10.0.0.1"))
        #expect(firsts(&cache, count: 3, now: Self.second + ResolverCache.skipFailedFor).contains("10.0.0.1"))
    }

    @Test func whenEveryAddressFailedTheNextConnectWaitsForALookupAndTriesThemAllAgain() {
        var cache = cache([Self.a, Self.b])
        cache.connectFailed("directus", Self.a, now: Self.second)
        cache.connectFailed("directus", Self.b, now: Self.second)
        #expect(cache.ask("directus", now: 2 * Self.second) == .wait(start: true))
        #expect(cache.ask("directus", now: 2 * Self.second) == .wait(start: false))
        // The lookup gives the same addresses: the waiting connects try them all, in turn, as a retry.
        cache.answered("directus", [Self.a, Self.b], now: 3 * Self.second)
        let first = cache.plan("directus", now: 3 * Self.second)
        let second = cache.plan("directus", now: 3 * Self.second)
        #expect(first?.retrying == true && second?.retrying == true)
        #expect(first?.addresses == [Self.a, Self.b])
        #expect(second?.addresses == [Self.b, Self.a])
        // A retry that connects takes its address back at once; the other stays out until its 10 s are over.
        cache.connectSucceeded("directus", Self.b)
        #expect(cache.ask("directus", now: 4 * Self.second) == .use(AddressPlan(addresses: [Self.b])))
        #expect(firsts(&cache, count: 2, now: 11 * Self.second).contains("10.0.0.1"))
    }

    @Test func aNewAnswerKeepsTheFailuresOfTheAddressesItStillListsAndForgetsTheOthers() {
        var cache = cache([Self.a, Self.b])
        cache.connectFailed("directus", Self.a, now: 25 * Self.second)  // out until 35 s
        #expect(cache.ask("directus", now: 30 * Self.second) == .useAndRefresh(AddressPlan(addresses: [Self.b])))
        cache.answered("directus", [Self.a, Self.b, Self.c], now: 31 * Self.second)
        // a is still listed, so still out; c is new.
        #expect(cache.ask("directus", now: 32 * Self.second) == .use(AddressPlan(addresses: [Self.c, Self.b])))
        cache.connectFailed("directus", Self.c, now: 32 * Self.second)  // out until 42 s
        // An answer without c forgets its failure: listed again, it is used at once.
        cache.answered("directus", [Self.a, Self.b], now: 33 * Self.second)
        cache.answered("directus", [Self.a, Self.b, Self.c], now: 34 * Self.second)
        #expect(cache.ask("directus", now: 34 * Self.second) == .use(AddressPlan(addresses: [Self.b, Self.c])))
        #expect(cache.ask("directus", now: 35 * Self.second) == .use(AddressPlan(addresses: [Self.a, Self.b, Self.c])))
    }
}
