import Foundation
import Synchronization
import Testing
@testable import PosternIO
import PosternTesting

/// The resolver's threads and hand-back, with a lookup the test controls: lookups run off the loops, one per name
/// however many connects wait, each answer reaches its connect on the connect's loop, a cancelled lookup is never
/// answered, and a cached address answers at once without a lookup.
@Suite(.serialized) struct HostResolverTests {
    /// A lookup the test releases: counts calls, records whether it ran on a loop thread, and answers `address`.
    final class GatedLookup: @unchecked Sendable {
        let calls = Atomic<Int>(0)
        let onLoop = Atomic<Bool>(false)
        let gate = DispatchSemaphore(value: 0)
        let address: ResolvedAddress

        init(address: ResolvedAddress) { self.address = address }

        func lookup(_ host: String) -> Result<[ResolvedAddress], HostResolver.LookupFailure> {
            calls.add(1, ordering: .relaxed)
            if EventLoop.current != nil { onLoop.store(true, ordering: .relaxed) }
            gate.wait()
            return host == "unknown" ? .failure(.init(reason: "Name or service not known")) : .success([address])
        }
    }

    /// What the completions got, and on which loop (appended under the lock).
    final class Answers: @unchecked Sendable {
        private let lock = NSLock()
        private var entries: [(loop: String, address: String?, error: String)] = []

        func record(_ loop: EventLoop?, _ expected: EventLoop, _ plan: AddressPlan?, _ error: String) {
            let addresses = plan?.addresses.map(\.numericText).joined(separator: ",")
            lock.withLock { entries.append((loop === expected ? "own" : "other", addresses, error)) }
        }

        var all: [(loop: String, address: String?, error: String)] { lock.withLock { entries } }

        /// Waits (polling, up to 10 s) until `count` answers came.
        func wait(for count: Int) -> Bool {
            (try? eventually("\(count) answers") { all.count >= count }) != nil
        }
    }

    /// Starts a lookup of `host` on `loop` (on its thread) whose completion records into `answers`.
    @discardableResult
    private func start(_ host: String, on loop: EventLoop, _ resolver: HostResolver, _ answers: Answers) -> DNSLookup {
        loop.runAndWait {
            let lookup = DNSLookup { address, error in answers.record(EventLoop.current, loop, address, error) }
            lookup.start(host: host, loop: loop, resolver: resolver)
            return lookup
        }
    }

    @Test func connectsOnTwoLoopsShareOneLookupOffTheLoopsAndEachGetsTheAnswerOnItsOwnLoop() {
        let group = EventLoopGroup(count: 2, name: "resolver-test")
        defer { group.shutdown() }
        let gated = GatedLookup(address: ResolvedAddress(numeric: "10.0.0.7")!)  // a literal numeric address
        let now = Atomic<UInt64>(0)
        let resolver = HostResolver(clock: { now.load(ordering: .relaxed) }, lookup: { gated.lookup($0) })
        let answers = Answers()
        for loop in group.loops + group.loops { start("directus", on: loop, resolver, answers) }
        // The lookup started off the loops, and the loops still run (a blocked loop would not answer this).
        _ = try? eventually("the lookup started") { gated.calls.load(ordering: .relaxed) != 0 }
        #expect(group.loops.allSatisfy { $0.runAndWait { true } })
        #expect(answers.all.isEmpty)
        gated.gate.signal()
        #expect(answers.wait(for: 4))
        #expect(answers.all.map(\.loop) == ["own", "own", "own", "own"])
        #expect(answers.all.allSatisfy { $0.address == "10.0.0.7" })
        #expect(gated.calls.load(ordering: .relaxed) == 1)
        #expect(gated.onLoop.load(ordering: .relaxed) == false)
        // Cached: answered at once, inside start, with no lookup.
        let inline = group.loops[0].runAndWait { () -> Bool in
            var answered = false
            DNSLookup { _, _ in answered = true }.start(host: "directus", loop: group.loops[0], resolver: resolver)
            return answered
        }
        #expect(inline)
        #expect(gated.calls.load(ordering: .relaxed) == 1)
    }

    @Test func anAnswer30SecondsOldAnswersAtOnceAndItsRefreshServesTheNextConnect() {
        let group = EventLoopGroup(count: 1, name: "resolver-test")
        defer { group.shutdown() }
        let loop = group.loops[0]
        let addresses = LockedAddresses(["10.0.0.1", "10.0.0.2"])
        let calls = Atomic<Int>(0)
        let now = Atomic<UInt64>(0)
        let resolver = HostResolver(clock: { now.load(ordering: .relaxed) }, lookup: { _ in
            calls.add(1, ordering: .relaxed)
            return .success([addresses.next()])
        })
        let answers = Answers()
        start("directus", on: loop, resolver, answers)
        #expect(answers.wait(for: 1))
        now.store(ResolverCache.refreshAfter, ordering: .relaxed)
        // Answered inside start with the old address; the refresh runs beside it.
        let inline = loop.runAndWait { () -> String? in
            var got: String?
            DNSLookup { plan, _ in got = plan?.addresses.first?.numericText }.start(host: "directus", loop: loop, resolver: resolver)
            return got
        }
        #expect(inline == "10.0.0.1")
        var latest: String?
        try? eventually("the refreshed address answers") {
            latest = loop.runAndWait { () -> String? in
                var got: String?
                DNSLookup { plan, _ in got = plan?.addresses.first?.numericText }.start(host: "directus", loop: loop, resolver: resolver)
                return got
            }
            return latest == "10.0.0.2"
        }
        #expect(latest == "10.0.0.2")
        #expect(calls.load(ordering: .relaxed) == 2)
    }

    /// Addresses handed out in turn (the last one again once they run out).
    final class LockedAddresses: @unchecked Sendable {
        private let lock = NSLock()
        private var left: [String]

        init(_ addresses: [String]) { left = addresses }

        func next() -> ResolvedAddress {
            ResolvedAddress(numeric: nextText())!  // the test's literal numeric addresses
        }

        func nextText() -> String {
            lock.withLock { left.count > 1 ? left.removeFirst() : left[0] }
        }
    }

    @Test func aCancelledLookupIsNeverAnsweredAndAFailureGivesTheResolversReason() {
        let group = EventLoopGroup(count: 1, name: "resolver-test")
        defer { group.shutdown() }
        let loop = group.loops[0]
        let gated = GatedLookup(address: ResolvedAddress(numeric: "10.0.0.7")!)  // a literal numeric address
        let resolver = HostResolver(clock: { 0 }, lookup: { gated.lookup($0) })
        let answers = Answers()
        let cancelled = start("unknown", on: loop, resolver, answers)
        start("unknown", on: loop, resolver, answers)
        loop.runAndWait { cancelled.cancel() }
        gated.gate.signal()
        #expect(answers.wait(for: 1))
        // The answer is in; one more turn of the loop would have run a second completion.
        loop.runAndWait {}
        #expect(answers.all.count == 1)
        #expect(answers.all.first?.address == nil)
        #expect(answers.all.first?.error == "Name or service not known")
    }

    @Test func connectsWaitingForOneLookupStartAtDifferentAddressesAndAFailedOneIsLeftOutFor10Seconds() {
        let group = EventLoopGroup(count: 1, name: "resolver-test")
        defer { group.shutdown() }
        let loop = group.loops[0]
        let dead = ResolvedAddress(numeric: "10.0.0.1")!  // a literal numeric address
        let live = ResolvedAddress(numeric: "10.0.0.2")!  // a literal numeric address
        let clock = TestClock()
        let resolver = HostResolver(clock: { UInt64(clock.seconds * 1e9) }, lookup: { _ in .success([dead, live]) })
        let answers = Answers()
        start("directus", on: loop, resolver, answers)
        start("directus", on: loop, resolver, answers)
        #expect(answers.wait(for: 2))
        // One plan each, in turn (which of the two got which depends on whether the lookup had answered).
        #expect(answers.all.compactMap { $0.address }.sorted() == ["10.0.0.1,10.0.0.2", "10.0.0.2,10.0.0.1"])
        // The first address refused a connect: the next connects are planned without it, from the cache at once.
        resolver.connectFailed(host: "directus", address: dead)
        clock.advance(by: .seconds(9))
        for _ in 0..<3 { start("directus", on: loop, resolver, answers) }
        #expect(answers.wait(for: 5))
        #expect(answers.all.suffix(3).map { $0.address } == ["10.0.0.2", "10.0.0.2", "10.0.0.2"])
        // 10 s after its failure it is in the turn again.
        clock.advance(by: .seconds(1))
        for _ in 0..<2 { start("directus", on: loop, resolver, answers) }
        #expect(answers.wait(for: 7))
        #expect(answers.all.suffix(2).compactMap { $0.address?.split(separator: ",").first }.sorted() == ["10.0.0.1", "10.0.0.2"])
    }

    @Test func whenEveryAddressFailedAndTheFreshLookupFailsTooTheKnownAddressesAreTriedAgain() {
        let group = EventLoopGroup(count: 1, name: "resolver-test")
        defer { group.shutdown() }
        let loop = group.loops[0]
        let a = ResolvedAddress(numeric: "10.0.0.1")!  // a literal numeric address
        let b = ResolvedAddress(numeric: "10.0.0.2")!  // a literal numeric address
        let lookups = LockedAddresses(["ok", "down"])
        let resolver = HostResolver(clock: { 0 }, lookup: { _ in
            lookups.nextText() == "ok" ? .success([a, b]) : .failure(.init(reason: "Temporary failure in name resolution"))
        })
        let answers = Answers()
        start("directus", on: loop, resolver, answers)
        #expect(answers.wait(for: 1))
        resolver.connectFailed(host: "directus", address: a)
        resolver.connectFailed(host: "directus", address: b)
        // Every address failed: the next connect waits for a lookup, which fails; it still gets both addresses.
        start("directus", on: loop, resolver, answers)
        #expect(answers.wait(for: 2))
        #expect(answers.all.last?.address == "10.0.0.2,10.0.0.1")
        // A name never resolved has nothing to try: the failure is the resolver's.
        start("other", on: loop, resolver, answers)
        #expect(answers.wait(for: 3))
        #expect(answers.all.last?.address == nil)
        #expect(answers.all.last?.error == "Temporary failure in name resolution")
    }

    @Test func theSystemLookupReadsEtcHostsAndPrefersIPv4() throws {
        // localhost is in /etc/hosts everywhere (often ::1 first): the IPv4 address is chosen.
        #expect(try HostResolver.systemLookup("localhost").get() == [ResolvedAddress(numeric: "127.0.0.1")!])
        #expect((try? HostResolver.systemLookup("no-such-host.invalid").get()) == nil)
    }
}
