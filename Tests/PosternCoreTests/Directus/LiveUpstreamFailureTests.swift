import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternCoreTesting
import PosternHTTP

/// What the gateway answers when Directus misbehaves on the wire (docs/api.md, Errors), through real sockets:
/// the gateway on port 0 in front of a raw-TCP `ScriptedUpstream`.
@Suite(.serialized) struct LiveUpstreamFailureTests {
    /// One way Directus can fail, and the answer a client must get for a login.
    struct Failure: Sendable, CustomTestStringConvertible {
        let name: String
        /// What the upstream does with each request (nil: nothing listens, the connection is refused).
        let steps: [ScriptedUpstream.Step]?
        let status: Int
        let code: String
        var testDescription: String { name }
    }

    static let failures: [Failure] = [
        Failure(name: "connection refused", steps: nil, status: 503, code: "upstream_unavailable"),
        Failure(name: "no answer within timeout", steps: [.silent], status: 504, code: "upstream_timeout"),
        Failure(name: "garbage instead of HTTP", steps: ScriptedUpstream.Misbehaviour.garbage, status: 502, code: "upstream_error"),
        Failure(name: "closed after the request", steps: ScriptedUpstream.Misbehaviour.closeAfterRequest, status: 502, code: "upstream_error"),
        Failure(name: "500 without envelope", steps: ScriptedUpstream.Misbehaviour.status(500, #"{"oops":true}"#), status: 502, code: "upstream_error"),
        Failure(name: "503 with a Directus envelope", steps: ScriptedUpstream.Misbehaviour.status(503, #"{"errors":[{"message":"down","extensions":{"code":"SERVICE_UNAVAILABLE"}}]}"#),
                status: 503, code: "upstream_unavailable"),
        Failure(name: "503 from /server/health without envelope", steps: ScriptedUpstream.Misbehaviour.status(503, #"{"status":"error"}"#),
                status: 503, code: "upstream_unavailable"),
        Failure(name: "200 not JSON", steps: ScriptedUpstream.Misbehaviour.notJSON, status: 502, code: "upstream_error"),
        Failure(name: "200 wrong shape", steps: ScriptedUpstream.Misbehaviour.wrongShape, status: 502, code: "upstream_error"),
    ]

    /// An upstream that does `steps` with each request (nil: one that refuses connections).
    static func upstream(_ steps: [ScriptedUpstream.Step]?) throws -> ScriptedUpstream {
        try steps.map { try ScriptedUpstream(every: $0) } ?? ScriptedUpstream.refusing()
    }

    /// A gateway pointed at `fake`, with a 300 ms upstream timeout.
    private static func gateway(_ fake: ScriptedUpstream, connections: Int? = nil, clock: GatewayClock = .system) throws -> TestGateway {
        try TestGateway(clock: clock) { config in
            config.directus.url = fake.url
            config.directus.timeoutMs = 300
            if let connections { config.directus.maxConnectionsPerWorker = connections }
        }
    }

    @Test(arguments: failures) func loginMapsUpstreamFailure(_ failure: Failure) throws {
        let fake = try Self.upstream(failure.steps)
        defer { fake.stop() }
        let gw = try Self.gateway(fake)
        defer { gw.stop() }

        let started = Date()
        let r = try gw.client().json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#,
                                     headers: ["X-Request-Id": "fail-1"])
        #expect(Date().timeIntervalSince(started) < 2, "answered within 2 s")
        #expect(r.status == failure.status, "\(r.text)")
        #expect(r.json?["code"]?.stringValue == failure.code)
        #expect(r.json?["error"]?.stringValue?.isEmpty == false)
        #expect(r.json?["request_id"]?.stringValue == "fail-1")
        #expect(r.headers["X-Request-Id"] == "fail-1")
        #expect(r.headers["Content-Type"]?.hasPrefix("application/json") == true)
        if failure.steps == nil {
            #expect(fake.requests.isEmpty)
        } else {
            #expect(fake.requests.first?.hasPrefix("POST /auth/login ") == true, "the login reached the fake upstream")
        }
        // No upstream detail (the fake's HTML page) leaks to the client.
        #expect(!r.text.contains("maintenance"))
    }

    @Test func loginStillAnswersAfterATimedOutCall() throws {
        // After a timeout the gateway drops the stuck connection; the next call must not hang on it.
        let fake = try ScriptedUpstream(every: [.silent])
        defer { fake.stop() }
        let gw = try Self.gateway(fake)
        defer { gw.stop() }
        let client = gw.client()
        for _ in 0..<3 {
            let started = Date()
            let r = try client.json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
            #expect(r.status == 504)
            #expect(Date().timeIntervalSince(started) < 2)
        }
    }

    /// A Directus that is down: refusing, silent, failing or not speaking HTTP.
    struct Outage: Sendable, CustomTestStringConvertible {
        let name: String
        /// What the upstream does with each request (nil: nothing listens, the connection is refused).
        let steps: [ScriptedUpstream.Step]?
        var testDescription: String { name }
    }

    @Test(arguments: [Outage(name: "refused", steps: nil), Outage(name: "silent", steps: [.silent]),
                      Outage(name: "500", steps: ScriptedUpstream.Misbehaviour.status(500, "{}")),
                      Outage(name: "garbage", steps: ScriptedUpstream.Misbehaviour.garbage)])
    func readyzIsUnavailableWhenDirectusIsDown(_ outage: Outage) throws {
        let fake = try Self.upstream(outage.steps)
        defer { fake.stop() }
        let gw = try Self.gateway(fake)
        defer { gw.stop() }
        for port in [gw.port, gw.app.adminPort] {
            let started = Date()
            let r = try RawHTTPClient(port: port).request("GET", "/readyz")
            #expect(r.status == 503, "port \(port): \(r.text)")
            #expect(r.json?["code"]?.stringValue == "upstream_unavailable")
            #expect(Date().timeIntervalSince(started) < 2)
        }
    }

    @Test
    func readyzUnavailableHasTheErrorShape() throws {
        let fake = try ScriptedUpstream.refusing()
        defer { fake.stop() }
        let gw = try Self.gateway(fake)
        defer { gw.stop() }
        let r = try gw.client().request("GET", "/readyz", headers: ["X-Request-Id": "rdy-1"])
        #expect(r.status == 503)
        #expect(r.json?["error"]?.stringValue?.isEmpty == false)
        #expect(r.json?["request_id"]?.stringValue == "rdy-1")
    }

    @Test func readyzIsReadyWithTheStandIn() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        for port in [gw.port, gw.app.adminPort] {
            let r = try RawHTTPClient(port: port).request("GET", "/readyz")
            #expect(r.status == 200, "port \(port): \(r.text)")
        }
        #expect(gw.upstream("/server/ping").count == 2)
    }

    @Test func healthzAnswersWithoutCallingDirectus() throws {
        let fake = try ScriptedUpstream(every: [.silent])
        defer { fake.stop() }
        let gw = try Self.gateway(fake)
        defer { gw.stop() }
        for port in [gw.port, gw.app.adminPort] {
            let started = Date()
            let r = try RawHTTPClient(port: port).request("GET", "/healthz")
            #expect(r.status == 200)
            #expect(Date().timeIntervalSince(started) < 1)
        }
        #expect(fake.requests.isEmpty)
    }

    @Test func resourceRouteWithSessionWhenDirectusStops() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = try gw.login()
        let client = gw.client()
        let before = try client.json("GET", "/api/v1/books", token: token)
        #expect(before.status == 200)

        gw.standInServer.shutdown(grace: 0)
        let started = Date()
        let r = try client.json("GET", "/api/v1/books", token: token)
        #expect(Date().timeIntervalSince(started) < 2)
        #expect(r.status == 503, "\(r.text)")
        #expect(r.json?["code"]?.stringValue == "upstream_unavailable")
        #expect(r.json?["books"] == .array([]))
        #expect(r.json?["total"]?.intValue == 0)
        #expect(r.json?["request_id"]?.stringValue == r.headers["X-Request-Id"])
        #expect(r.headers["Cache-Control"] == "no-store")
    }

    @Test func writeAfterDirectusStoppedIsUnavailableNotUpstreamError() throws {
        let gw = try TestGateway { $0.workers = 1 }
        defer { gw.stop() }
        let token = try gw.login()
        #expect(try gw.client().json("GET", "/api/v1/books", token: token).status == 200)  // a pooled connection now idles
        gw.standInServer.shutdown(grace: 0)
        let r = try gw.client().json("POST", "/api/v1/books", #"{"title":"x"}"#, token: token)
        #expect(r.status == 503, "\(r.text)")
        #expect(r.json?["code"]?.stringValue == "upstream_unavailable")
    }

    // MARK: Keep-alive connections that Directus closes

    /// A Directus login answer whose access token is an (unsigned) JWT carrying a user id.
    static var loginAnswer: String {
        func b64(_ s: String) -> String {
            Data(s.utf8).base64EncodedString().replacingOccurrences(of: "+", with: "-")
                .replacingOccurrences(of: "/", with: "_").replacingOccurrences(of: "=", with: "")
        }
        let jwt = b64(#"{"alg":"HS256","typ":"JWT"}"#) + "." + b64(#"{"id":"user-1","role":"role-1","exp":4102444800}"#) + ".sig"
        return #"{"data":{"access_token":"\#(jwt)","refresh_token":"r-1","expires":900000}}"#
    }

    @Test func idempotentGetIsRetriedWhenAReusedConnectionIsClosed() throws {
        // Directus hangs up on the second request of each connection: the GET is retried on a fresh one.
        let pong = ScriptedUpstream.answer(#"{"data":"pong"}"#)
        let fake = try ScriptedUpstream { $0.onConnection == 0 ? [.send(pong)] : [.close] }
        defer { fake.stop() }
        // One connection per worker: the pool, full, reuses it without waiting for it to be quiet.
        let clock = TestClock()
        let gw = try Self.gateway(fake, connections: 1, clock: clock.gatewayClock)
        defer { gw.stop() }
        let client = gw.client()  // one client connection, so one worker and one upstream pool
        #expect(try client.request("GET", "/readyz").status == 200)
        clock.advance(ReadinessPing.reuseSeconds)  // past the first ping's reuse: the second /readyz pings again
        let r = try client.request("GET", "/readyz")
        #expect(r.status == 200, "\(r.text)")
        #expect(fake.requests.count == 3, "first call, the call the upstream hung up on, the retry")
    }

    @Test func postOnAConnectionClosedAfterTheRequestIs502NotRetried() throws {
        // Directus hangs up on the second request of each connection, without answering it.
        let fake = try ScriptedUpstream { $0.onConnection == 0 ? [.send(ScriptedUpstream.answer(Self.loginAnswer))] : [.close] }
        defer { fake.stop() }
        // One connection per worker: the pool, full, reuses it without waiting for it to be quiet.
        let gw = try Self.gateway(fake, connections: 1)
        defer { gw.stop() }
        let client = gw.client()
        let first = try client.json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
        #expect(first.status == 200, "\(first.text)")
        let second = try client.json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
        #expect(second.status == 502, "\(second.text)")
        #expect(second.json?["code"]?.stringValue == "upstream_error")
        #expect(fake.requests.count == 2, "a login is not sent twice")
    }

    @Test func connectionClosedWhileIdleIsReplacedForAnyMethod() throws {
        // Directus closes idle keep-alive connections (its keep-alive timeout); the next call must not fail.
        let fake = try ScriptedUpstream(every: [.send(ScriptedUpstream.answer(Self.loginAnswer)), .close])
        defer { fake.stop() }
        let gw = try Self.gateway(fake)
        defer { gw.stop() }
        let client = gw.client()
        for i in 0..<3 {
            let r = try client.json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
            #expect(r.status == 200, "login \(i): \(r.text)")
            // The fake has hung up; the gateway's loops have then handled that close before the next call.
            #expect(fake.waitForHangUp())
            gw.drainGatewayLoops()
        }
        #expect(fake.requests.count == 3)
    }
}

extension LiveUpstreamFailureTests {
    @Test func malformedAnswerIs502UpstreamErrorForTheClient() throws {
        let peer = try ScriptedUpstream { _ in
            [.send("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\n{\"data\"}zz"), .close]
        }
        defer { peer.stop() }
        let gw = try TestGateway { config in
            config.directus.url = peer.url
            config.directus.timeoutMs = 2000
        }
        defer { gw.stop() }
        let r = try gw.client().json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
        #expect(r.status == 502, "\(r.text)")
        #expect(r.json?["code"]?.stringValue == "upstream_error")
        #expect(peer.requests.count == 1, "a login is not sent twice")
    }
}
