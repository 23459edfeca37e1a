import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternCoreTesting
import PosternHTTP

/// Request and trace ids nobody can predict (issue 34): generated `X-Request-Id`s, read through a live gateway, are
/// random 128-bit W3C trace ids. Before, they were a bijective mix (splitmix64) of a counter: un-mixing two ids
/// gave a constant step, so one id predicted the next and counted the requests served in between.
@Suite struct RequestIDRandomnessTests {
    /// The inverse of the splitmix64 finaliser the old ids went through.
    static func unmix(_ value: UInt64) -> UInt64 {
        func inverse(_ a: UInt64) -> UInt64 {
            var x = a  // Newton's iteration for the inverse of an odd number modulo 2^64
            for _ in 0..<6 { x = x &* (2 &- a &* x) }
            return x
        }
        var z = value
        z = z ^ (z >> 31) ^ (z >> 62)
        z = z &* inverse(0x94d049bb133111eb)
        z = z ^ (z >> 27) ^ (z >> 54)
        z = z &* inverse(0xbf58476d1ce4e5b9)
        z = z ^ (z >> 30) ^ (z >> 60)
        return z
    }

    /// The two 64-bit halves of a 32-hex-digit id.
    static func words(_ id: String) -> (UInt64, UInt64)? {
        guard id.utf8.count == 32, id.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }),
              let high = UInt64(id.prefix(16), radix: 16), let low = UInt64(id.suffix(16), radix: 16) else { return nil }
        return (high, low)
    }

    @Test func theInverseIsOne() {
        func mix(_ v: UInt64) -> UInt64 {
            var z = v
            z = (z ^ (z >> 30)) &* 0xbf58476d1ce4e5b9
            z = (z ^ (z >> 27)) &* 0x94d049bb133111eb
            return z ^ (z >> 31)
        }
        for v: UInt64 in [0, 1, 42, 0xdeadbeef, .max, 0x0123456789abcdef] { #expect(Self.unmix(mix(v)) == v) }
    }

    @Test func generatedRequestIDsThroughTheWireHaveNoCounterBehindThem() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let client = gw.client()
        var ids: [(UInt64, UInt64)] = []
        // An all-zero trace id is invalid (W3C Trace Context): the gateway starts a new trace instead.
        let zero = "00-00000000000000000000000000000000-00f067aa0ba902b7-01"
        for i in 0..<64 {
            let r = try client.request("GET", "/healthz", headers: i % 2 == 0 ? [:] : ["traceparent": zero])
            let id = r.headers["X-Request-Id"] ?? ""
            let words = try #require(Self.words(id), "a 32-hex-digit lower-case id: \(id)")
            #expect(words.0 | words.1 != 0, "never all zero")
            ids.append(words)
        }
        #expect(Set(ids.map { "\($0.0)-\($0.1)" }).count == ids.count, "no id twice")
        // No constant step between the un-mixed ids (the old scheme's step was the same for every pair).
        let steps = zip(ids, ids.dropFirst()).map { Self.unmix($1.0) &- Self.unmix($0.0) }
        #expect(Set(steps).count > steps.count / 2, "\(steps.prefix(4))")
        // Consecutive ids differ in about half their 128 bits, never in only a few.
        for (a, b) in zip(ids, ids.dropFirst()) {
            let differing = (a.0 ^ b.0).nonzeroBitCount + (a.1 ^ b.1).nonzeroBitCount
            #expect(differing >= 24 && differing <= 104, "\(differing) bits")
        }
        // Each half on its own is not a counter either.
        let lows = ids.map(\.1)
        #expect(Set(zip(lows, lows.dropFirst()).map { $1 &- $0 }).count > lows.count / 2)
    }

    @Test func theTraceSentUpstreamIsAValidW3CTraceWithARandomID() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        for _ in 0..<3 { _ = try gw.client().json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"wrong"}"#) }
        let parents = gw.upstream("/auth/login").compactMap { $0.headers["traceparent"] }
        #expect(parents.count == 3)
        var traceIDs: Set<String> = []
        for parent in parents {
            let parts = parent.split(separator: "-").map(String.init)
            #expect(parts.count == 4 && parts[0] == "00" && parts[3] == "01", "\(parent)")
            guard parts.count == 4 else { continue }
            #expect(Self.words(parts[1]).map { $0.0 | $0.1 != 0 } == true, "\(parent)")
            #expect(parts[2].count == 16 && parts[2] != "0000000000000000", "\(parent)")
            traceIDs.insert(parts[1])
        }
        #expect(traceIDs.count == 3)
    }

    @Test func idsDrawnOffTheLoopsAreRandomToo() {
        let drawn = (0..<2000).map { _ in RequestID.generate().id }
        #expect(Set(drawn).count == drawn.count)
        #expect(drawn.allSatisfy { Self.words($0) != nil })
    }
}
