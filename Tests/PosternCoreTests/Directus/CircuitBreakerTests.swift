import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

/// A transport whose behaviour tests switch at will, counting calls.
final class SwitchableTransport: UpstreamTransport, @unchecked Sendable {
    private let lock = NSLock()
    private var failing: UpstreamFailure?
    private var count = 0
    let standIn = DirectusStandIn()

    func fail(with failure: UpstreamFailure?) { lock.withLock { failing = failure } }
    var calls: Int { lock.withLock { count } }

    func send(_ request: UpstreamRequest, timeout: Double) async throws(UpstreamFailure) -> UpstreamResponse {
        let failure = lock.withLock { () -> UpstreamFailure? in
            count += 1
            return failing
        }
        if let failure { throw failure }
        return standIn.handle(HTTPRequest(method: request.method, target: request.target, headers: request.headers, body: request.body))
    }
}

@Suite(.serialized) struct CircuitBreakerTests {
    @Test func opensAfterConsecutiveFailuresFailsFastAndProbesBack() async throws {
        var config = PosternConfig.testing
        config.circuitBreaker.failures = 3
        config.circuitBreaker.openSeconds = 1
        let transport = SwitchableTransport()
        let clock = TestClock()
        let app = try Application.build(config: config, transport: transport, store: MemorySessionStore(), logSink: { _ in },
                                        clock: clock.gatewayClock)
        defer { app.shutdown() }
        func get(_ path: String) async -> HTTPResponse {
            await app.gateway.handle(HTTPRequest(method: .get, target: path))
        }
        transport.fail(with: .unreachable("refused"))
        for _ in 0..<3 { #expect(await get("/readyz").status == 503) }
        #expect(transport.calls == 3)
        // Open: fail fast, nothing reaches the upstream.
        let login = await app.gateway.handle(HTTPRequest(method: .post, target: "/api/v1/user/login",
                                                         headers: ["Content-Type": "application/json"],
                                                         body: Data(#"{"email":"x@y.com","password":"123456"}"#.utf8)))
        #expect(login.status == 503)
        #expect(await get("/readyz").status == 503)
        #expect(transport.calls == 3)
        let metrics = app.gateway.metrics.render()
        #expect(metrics.contains("postern_circuit_state 1"))
        #expect(metrics.contains(#"postern_upstream_errors_total{kind="circuit_open"} 2"#))
        // After the open period, one probe goes through; it succeeds and closes the circuit.
        transport.fail(with: nil)
        clock.advance(0.999)
        #expect(await get("/readyz").status == 503, "still open just before the open period ends")
        #expect(transport.calls == 3)
        clock.advance(0.001)
        #expect(await get("/readyz").status == 200)
        #expect(transport.calls == 4)
        #expect(app.gateway.metrics.render().contains("postern_circuit_state 0"))
    }

    @Test func aFailedProbeReopens() async throws {
        let clock = LockedBox<TimeInterval>(0)
        let breaker = CircuitBreaker(threshold: 2, openSeconds: 5) { clock.withLock { $0 } }
        breaker.failed(); breaker.failed()
        #expect(breaker.state == .open)
        #expect(!breaker.allow())
        clock.withLock { $0 = 5 }
        #expect(breaker.allow())
        #expect(!breaker.allow())  // only one probe
        breaker.failed()
        #expect(breaker.state == .open)
        clock.withLock { $0 = 9 }
        #expect(!breaker.allow())
        clock.withLock { $0 = 10 }
        #expect(breaker.allow())
        breaker.succeeded()
        #expect(breaker.state == .closed)
    }
}
