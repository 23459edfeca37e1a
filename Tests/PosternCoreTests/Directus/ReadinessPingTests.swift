import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternCoreTesting
import PosternHTTP

/// `/readyz` coalesced (docs/api.md, Operations; issue 34): one `GET /server/ping` in flight per worker, its result
/// reused for 1 s, counted where it arrives (the Directus stand-in), on the gateway's test clock.
@Suite struct ReadinessPingTests {
    /// `GET /server/ping` calls the stand-in has received.
    static func pings(_ gw: TestGateway) -> Int { gw.upstream("/server/ping").count }

    /// `postern_requests_in_flight` as `/metrics` reads it.
    static func inFlight(_ gw: TestGateway) throws -> Int {
        let text = try RawHTTPClient(port: gw.app.adminPort).request("GET", "/metrics").text
        let line = text.split(separator: "\n").first { $0.hasPrefix("postern_requests_in_flight ") }
        return line.flatMap { Double($0.split(separator: " ").last ?? "") }.map { Int($0) } ?? -1
    }

    @Test func concurrentAndSequentialReadyzWithinASecondMakeOnePingThenANewOne() throws {
        let clock = TestClock()
        let gw = try TestGateway(clock: clock.gatewayClock) { $0.workers = 1 }
        defer { gw.stop() }
        let base = Self.pings(gw)
        // The first ping is held at the stand-in while a crowd of probes arrives behind it.
        gw.upstreamGate.close(holding: 1) { $0.path == "/server/ping" }
        let n = 12
        let requests = BackgroundRequests()
        let port = gw.port
        requests.start(n) { try RawHTTPClient(port: port).request("GET", "/readyz") }
        try eventually("one held ping") { gw.upstreamGate.heldCount == 1 }
        try eventually("\(n) probes waiting") { try Self.inFlight(gw) == n }
        gw.upstreamGate.open()
        let answers = requests.join()
        #expect(answers.count == n && answers.allSatisfy { $0?.status == 200 }, "\(answers.map { $0?.status ?? -1 })")
        #expect(Self.pings(gw) == base + 1)
        // Within the second, one after another: the same result, no new ping.
        for _ in 0..<20 { #expect(try gw.client().request("GET", "/readyz").status == 200) }
        #expect(Self.pings(gw) == base + 1)
        // A second later, a new ping.
        clock.advance(1.001)
        #expect(try gw.client().request("GET", "/readyz").status == 200)
        #expect(Self.pings(gw) == base + 2)
        #expect(try gw.client().request("GET", "/readyz").status == 200)
        #expect(Self.pings(gw) == base + 2)
    }

    @Test func theAdminListenersReadyzPingsOnEveryProbe() throws {
        let clock = TestClock()
        let gw = try TestGateway(clock: clock.gatewayClock) { $0.workers = 1 }
        defer { gw.stop() }
        let base = Self.pings(gw)
        let admin = RawHTTPClient(port: gw.app.adminPort)
        for _ in 0..<3 { #expect(try admin.request("GET", "/readyz").status == 200) }
        #expect(Self.pings(gw) == base + 3)
    }
}
