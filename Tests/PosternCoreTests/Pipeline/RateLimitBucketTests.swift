import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP

/// The limiter's memory is bounded (docs/api.md, Limits and defaults): buckets are keyed by a 16-byte digest,
/// at most `rate_limits.max_buckets` of them per limit, the least recently used dropped first, and a limit
/// still holds for a key in use while other keys push buckets out.
@Suite struct RateLimitBucketTests {
    @Test func manyDistinctKeysNeverHoldMoreThanTheBound() {
        let buckets = TokenBuckets(capacity: 5, window: 60, maxBuckets: 1000) { 0 }
        let long = String(repeating: "x", count: 10_000)
        for i in 0..<20_000 {
            // Every key is new, some of them long: each is one bucket of the same size, and never more than 1000.
            #expect(buckets.take(i.isMultiple(of: 100) ? "\(long)\(i)" : "k\(i)") == nil)
            if i.isMultiple(of: 997) { #expect(buckets.trackedKeys <= 1000) }
        }
        #expect(buckets.trackedKeys == 1000)
    }

    @Test func theLeastRecentlyUsedBucketIsDroppedFirst() {
        // One shard, so that "least recently used" is over every key.
        let buckets = TokenBuckets(capacity: 1, window: 60, maxBuckets: 3, shardCount: 1) { 0 }
        for key in ["a", "b", "c"] { #expect(buckets.take(key) == nil) }
        #expect(buckets.take("a") == 60)  // spent; and now used more recently than b and c
        #expect(buckets.take("d") == nil)  // a fourth key: b, the least recently used, goes
        #expect(buckets.trackedKeys == 3)
        // a, c and d are still spent...
        #expect(buckets.take("a") == 60)
        #expect(buckets.take("d") == 60)
        #expect(buckets.take("c") == 60)
        // ...b starts again from a full bucket, which pushes out a, now the least recently used.
        #expect(buckets.take("b") == nil)
        #expect(buckets.take("a") == nil)
        #expect(buckets.take("d") == nil)
    }

    @Test func aHotKeyStaysLimitedUnderEvictionPressure() {
        let buckets = TokenBuckets(capacity: 3, window: 60, maxBuckets: 1000) { 0 }
        for _ in 0..<3 { #expect(buckets.take("victim@example.com") == nil) }
        for round in 0..<12 {
            // 250 new keys between two guesses, 3000 in all: three times what the buckets hold.
            for i in 0..<250 { #expect(buckets.take("other\(round)-\(i)@example.com") == nil) }
            #expect(buckets.take("victim@example.com") != nil, "round \(round)")
        }
        #expect(buckets.trackedKeys == 1000)
    }

    @Test func pruningDropsFullBucketsAndFreesTheirSlotsForNewKeys() {
        let clock = LockedBox<TimeInterval>(0)
        let buckets = TokenBuckets(capacity: 2, window: 60, maxBuckets: 3, shardCount: 1) { clock.withLock { $0 } }
        for key in ["a", "b", "b", "c"] { #expect(buckets.take(key) == nil) }
        clock.withLock { $0 = 30 }  // a and c are full again, b has one token
        buckets.prune()
        #expect(buckets.trackedKeys == 1)
        // Two new keys take the freed slots without pushing b out.
        #expect(buckets.take("d") == nil && buckets.take("e") == nil)
        #expect(buckets.trackedKeys == 3)
        #expect(buckets.take("b") == nil)
        #expect(buckets.take("b") == 30)
    }

    @Test func afterAFloodPruningGivesBackTheStorageAndTheLimitsStillHold() {
        let clock = LockedBox<TimeInterval>(0)
        let buckets = TokenBuckets(capacity: 2, window: 60, maxBuckets: 4000) { clock.withLock { $0 } }
        for i in 0..<4000 { #expect(buckets.take("flood\(i)") == nil) }
        for _ in 0..<2 { #expect(buckets.take("hot") == nil) }
        clock.withLock { $0 = 30 }
        buckets.prune()  // every shard is left mostly empty: its storage is rebuilt around the live bucket
        #expect(buckets.trackedKeys == 1)
        #expect(buckets.take("hot") == nil)
        #expect(buckets.take("hot") == 30)
        for i in 0..<8000 { #expect(buckets.take("again\(i)") == nil) }
        #expect(buckets.trackedKeys == 4000)
    }

    @Test func theConfiguredBoundAppliesToTheLoginLimits() async throws {
        var config = RateLimitsConfig()
        config.failedLoginsPerIPPerMinute = 0
        config.failedLoginsPerEmailPerMinute = 1
        config.maxBuckets = 200
        let limits = RateLimits(config, metrics: Metrics(), clock: { 0 })
        _ = try await limits.claimLogin(ip: "198.51.100.1", email: "Victim@example.com")
        for round in 0..<10 {
            for i in 0..<50 { _ = try await limits.claimLogin(ip: "198.51.100.1", email: "u\(round)-\(i)@example.com") }
            do {
                _ = try await limits.claimLogin(ip: "198.51.100.1", email: "victim@example.com")
                Issue.record("round \(round): the victim's second failure was not limited")
            } catch {
                #expect(error.status == 429 && error.headers["Retry-After"] == "60")
            }
        }
        let buckets = try #require(limits.failedLoginsPerEmail as? TokenBuckets)
        #expect(buckets.maxBuckets == 200 && buckets.trackedKeys == 200)
    }

    @Test func aKeyIsTheFirst16BytesOfItsSHA256() {
        let key = RateLimitKey("x@y.com")
        #expect(key.hex == String(Crypto.sha256Hex("x@y.com").prefix(32)))
        #expect(key == RateLimitKey("x@y.com") && key != RateLimitKey("x@y.co"))
        #expect(MemoryLayout<RateLimitKey>.size == 16)
    }

    @Test func maxBucketsIsReadAndValidated() throws {
        #expect(PosternConfig().rateLimits.maxBuckets == 100_000)
        let read = try PosternConfig.load(json: Data(#"{"rate_limits": {"max_buckets": 5000}}"#.utf8), environment: [:]).get()
        #expect(read.rateLimits.maxBuckets == 5000)
        for bad in ["0", "-1", "\"many\"", "100000001"] {
            let result = PosternConfig.load(json: Data(#"{"rate_limits": {"max_buckets": \#(bad)}}"#.utf8), environment: [:])
            guard case .failure(let error) = result else {
                Issue.record("\(bad) was accepted")
                continue
            }
            #expect(error.problems.map(\.path) == ["rate_limits.max_buckets"])
            #expect(error.problems.first?.message == "must be an integer between 1 and 100000000")
        }
    }
}
