import Foundation
import Testing
@testable import PosternIO
import PosternTesting

/// The host-name cache's refresh rule, on a clock the test moves (no sleeps): an answer serves 30 s, then the
/// connect that finds it old still uses it while a refresh starts; a failed connect drops it; one lookup per name.
/// (The resolver around it: HostResolverTests.)
@Suite struct ResolverCacheTests {
    static let old = ResolvedAddress(numeric: "10.0.0.1")!  // a literal numeric address
    static let new = ResolvedAddress(numeric: "10.0.0.2")!  // a literal numeric address
    static let second: UInt64 = 1_000_000_000

    @Test func theFirstConnectWaitsForOneLookupThatServesEveryConnectFor30Seconds() {
        var cache = ResolverCache()
        #expect(cache.ask("directus", now: 0) == .wait(start: true))
        #expect(cache.ask("directus", now: 1) == .wait(start: false))  // one lookup in flight per name
        #expect(cache.ask("redis", now: 1) == .wait(start: true))  // names are apart
        cache.answered("directus", Self.old, now: 5 * Self.second)
        #expect(cache.ask("directus", now: 5 * Self.second) == .use(Self.old))
        #expect(cache.ask("directus", now: 35 * Self.second - 1) == .use(Self.old))
    }

    @Test func anAnswer30SecondsOldIsUsedWhileOneRefreshRunsAndTheNewAnswerServesAfterIt() {
        var cache = ResolverCache()
        _ = cache.ask("directus", now: 0)
        cache.answered("directus", Self.old, now: 0)
        #expect(cache.ask("directus", now: 30 * Self.second) == .useAndRefresh(Self.old))
        #expect(cache.ask("directus", now: 31 * Self.second) == .use(Self.old))  // the refresh is in flight
        cache.answered("directus", Self.new, now: 32 * Self.second)
        #expect(cache.ask("directus", now: 32 * Self.second) == .use(Self.new))
        #expect(cache.ask("directus", now: 61 * Self.second) == .use(Self.new))
        #expect(cache.ask("directus", now: 62 * Self.second) == .useAndRefresh(Self.new))
    }

    @Test func aRefreshThatFailsKeepsTheAddressAndTheNextConnectTriesAgain() {
        var cache = ResolverCache()
        _ = cache.ask("directus", now: 0)
        cache.answered("directus", Self.old, now: 0)
        #expect(cache.ask("directus", now: 40 * Self.second) == .useAndRefresh(Self.old))
        cache.answered("directus", nil, now: 41 * Self.second)
        #expect(cache.ask("directus", now: 42 * Self.second) == .useAndRefresh(Self.old))
    }

    @Test func aFailedConnectMakesTheNextConnectWaitForAFreshLookup() {
        var cache = ResolverCache()
        _ = cache.ask("directus", now: 0)
        cache.answered("directus", Self.old, now: 0)
        cache.connectFailed("directus")
        #expect(cache.ask("directus", now: Self.second) == .wait(start: true))
        cache.answered("directus", Self.new, now: 2 * Self.second)
        #expect(cache.ask("directus", now: 2 * Self.second) == .use(Self.new))
        // During a refresh, a failed connect leaves the next connects waiting for that refresh (no second lookup).
        #expect(cache.ask("directus", now: 40 * Self.second) == .useAndRefresh(Self.new))
        cache.connectFailed("directus")
        #expect(cache.ask("directus", now: 40 * Self.second) == .wait(start: false))
        // A name never looked up is not affected.
        cache.connectFailed("127.0.0.1")
        #expect(cache.ask("127.0.0.1", now: 0) == .wait(start: true))
    }

    @Test func aFirstLookupThatFailsIsRetriedByTheNextConnect() {
        var cache = ResolverCache()
        _ = cache.ask("directus", now: 0)
        cache.answered("directus", nil, now: 1)
        #expect(cache.ask("directus", now: 2) == .wait(start: true))
    }
}
