import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

/// A Directus that lies on the wire (docs/api.md, Upstream and edge rules; issue 23 findings 1 and 4), through
/// real sockets with the default config: answers larger than `directus.max_response_bytes` or with a head over
/// 64 KiB are 502 `upstream_error` at once, without the gateway reading them whole; and an answer nobody asked
/// for (a second one after each real answer, or garbage) never reaches a client and costs no other request a 502.
@Suite(.serialized) struct LiveHostileUpstreamTests {
    static let login = #"{"email":"x@y.com","password":"123456"}"#

    /// A gateway in front of `upstream` with the default config (test listeners), and `configure` for the rest.
    static func gateway(_ upstream: ScriptedUpstream, _ configure: (inout PosternConfig) -> Void = { _ in }) throws -> TestGateway {
        try TestGateway { config in
            config.directus.url = upstream.url
            config.directus.timeoutMs = 10_000
            configure(&config)
        }
    }

    /// The answers of an honest Directus to a login and to a list of posts whose one item's title is the
    /// request's `X-Request-Id`.
    static func honest(_ request: ScriptedUpstream.Request) -> String {
        if request.hasPrefix("POST /auth/login") { return ScriptedUpstream.answer(LiveUpstreamFailureTests.loginAnswer) }
        return ScriptedUpstream.answer(item(request.requestID))
    }

    /// A Directus list answer with one post titled `title`.
    static func item(_ title: String) -> String {
        #"{"data":[{"id":1,"title":"\#(title)","content":"c","user_created":"user-1","date_created":null}],"meta":{"filter_count":1}}"#
    }

    /// The list answer no request asked for.
    static let injected = ScriptedUpstream.answer(item("INJECTED"))

    // MARK: Ceilings

    /// An answer that never fits: its head, then `piece` streamed (`total` bytes, nil: endless) at `bytesPerSecond`
    /// (nil: as fast as the gateway reads it); the gateway must have hung up before the fake wrote `hungUpBefore`.
    struct Flood: Sendable, CustomTestStringConvertible {
        let name: String
        let head: String
        let piece: String
        let total: Int?
        let bytesPerSecond: Int?
        let hungUpBefore: Int
        var testDescription: String { name }
    }

    static let floods = [
        // 200 MB announced, then sent as fast as the gateway reads it: 502 before the body is read.
        Flood(name: "Content-Length over the ceiling",
              head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 200000000\r\n\r\n",
              piece: String(repeating: "a", count: 65536), total: 200_000_000, bytesPerSecond: nil, hungUpBefore: 64 << 20),
        // 64 MB/s of 1 KiB chunks without an end: the 16 MiB ceiling is passed in about 0.3 s, the timeout is 10 s,
        // so 502 at the ceiling, not 504 at the timeout.
        Flood(name: "endless chunked body",
              head: "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
              piece: "400\r\n" + String(repeating: "b", count: 1024) + "\r\n", total: nil, bytesPerSecond: 64 << 20,
              hungUpBefore: 64 << 20),
        // A header value (or name) that never ends, at 16 MB/s: the 64 KiB head ceiling is passed at once.
        Flood(name: "endless Retry-After value", head: "HTTP/1.1 503 Busy\r\nRetry-After: ",
              piece: String(repeating: "9", count: 4096), total: nil, bytesPerSecond: 16 << 20, hungUpBefore: 32 << 20),
        Flood(name: "endless header name", head: "HTTP/1.1 503 Busy\r\nX-Name-",
              piece: String(repeating: "9", count: 4096), total: nil, bytesPerSecond: 16 << 20, hungUpBefore: 32 << 20),
    ]

    @Test(arguments: floods)
    func anAnswerOverACeilingIs502AtOnceWithoutReadingItWhole(_ flood: Flood) throws {
        let upstream = try ScriptedUpstream { request in
            if request.hasPrefix("POST /auth/login") { return [.send(Self.honest(request))] }
            return [.send(flood.head), .stream(flood.piece, total: flood.total, bytesPerSecond: flood.bytesPerSecond)]
        }
        defer { upstream.stop() }
        let gw = try Self.gateway(upstream)
        defer { gw.stop() }
        let token = try gw.login()
        let r = try gw.client().json("GET", "/api/v1/posts", token: token)
        #expect(r.status == 502, "\(r.text)")
        #expect(r.json?["code"]?.stringValue == "upstream_error")
        // The gateway hung up at once: the fake could write only what the sockets' buffers hold.
        try eventually("the gateway dropped the connection") { upstream.streamsDone == 1 }
        #expect(upstream.streamed < flood.hungUpBefore, "the fake wrote \(upstream.streamed) bytes before the gateway hung up")
    }

    @Test func headerOver64KiBIs502() throws {
        let padding = String(repeating: "p", count: 70 * 1024)
        let upstream = try ScriptedUpstream { request in
            if request.hasPrefix("POST /auth/login") { return [.send(Self.honest(request))] }
            return [.send(ScriptedUpstream.answer(Self.item("x"), headers: ["X-Padding: \(padding)"]))]
        }
        defer { upstream.stop() }
        let gw = try Self.gateway(upstream)
        defer { gw.stop() }
        let token = try gw.login()
        let r = try gw.client().json("GET", "/api/v1/posts", token: token)
        #expect(r.status == 502, "\(r.text)")
        #expect(r.json?["code"]?.stringValue == "upstream_error")
        // The gateway answers the next request on a fresh connection.
        #expect(try gw.client().request("GET", "/healthz").status == 200)
    }

    // MARK: Answers nobody asked for

    /// When the upstream sends its unasked bytes: in the same write as the answer, or 2 ms after it.
    enum Timing: String, CaseIterable, Sendable { case sameWrite, twoMillisecondsLater }

    /// Steps that answer `request` honestly and then send `extra` as `timing` says.
    static func answerThen(_ extra: String, _ timing: Timing, _ request: ScriptedUpstream.Request) -> [ScriptedUpstream.Step] {
        switch timing {
        case .sameWrite: return [.send(Self.honest(request) + extra)]
        case .twoMillisecondsLater: return [.send(Self.honest(request)), .wait(0.002), .send(extra)]
        }
    }

    /// Signs in, then sends `perClient` list requests from each of `clients` clients at once (each request
    /// with its own `X-Request-Id`); returns what each answer was: "ok", or what went wrong.
    static func listMany(_ gw: TestGateway, clients: Int, perClient: Int) throws -> [String] {
        let token = try gw.login()
        let outcomes = CodeList()
        _ = gw.concurrently(clients) { client in
            var last = RawHTTPClient.Response(status: 0, headers: HTTPHeaders(), body: Data())
            let me = UUID().uuidString.prefix(8)
            for n in 0..<perClient {
                let id = "req-\(me)-\(n)"
                last = try client.request("GET", "/api/v1/posts",
                                          headers: ["Authorization": "Bearer \(token)", "X-Request-Id": id])
                let title = last.json?["posts"]?.arrayValue?.first?["title"]?.stringValue
                if last.status != 200 {
                    outcomes.append("\(last.status) \(last.text)")
                } else if title != id {
                    outcomes.append("wrong answer: asked \(id), got \(title ?? "nothing")")
                } else {
                    outcomes.append("ok")
                }
            }
            return last
        }
        return outcomes.all
    }

    /// What the upstream sends after each answer: a second answer nobody asked for, or garbage.
    enum Extra: String, CaseIterable, Sendable {
        case secondAnswer, garbage
        var bytes: String { self == .secondAnswer ? LiveHostileUpstreamTests.injected : "GARBAGE\r\n\r\n" }
    }

    @Test(arguments: Extra.allCases, Timing.allCases)
    func bytesAfterEachAnswerNeverReachAClientNorCostARequestA502(_ extra: Extra, _ timing: Timing) throws {
        try Self.expectEveryAnswerRight(extra: extra.bytes, timing)
    }

    /// Against an upstream that sends `extra` after each answer as `timing` says, with the default config: one
    /// client after another, then 8 at once, and every answer is the asking request's own, and a 200.
    ///
    /// The rule (docs/api.md, Upstream and edge rules): bytes that come while a connection idles close it, and a
    /// connection idles 10 ms after an answer before it carries another request (`UpstreamHTTPClient.reuseQuiet`),
    /// so extra bytes sent within 10 ms of an answer never reach a request. Later ones, once the next request
    /// went out, cannot be told from its answer (HTTP/1.1 answers carry nothing that ties them to a request): the
    /// fake counts the waits its thread overslept to 9 ms or more (a busy machine), and each may cost one answer.
    static func expectEveryAnswerRight(extra: String, _ timing: Timing) throws {
        let upstream = try ScriptedUpstream { request in Self.answerThen(extra, timing, request) }
        upstream.lateWait = 0.009
        defer { upstream.stop() }
        let gw = try Self.gateway(upstream)
        defer { gw.stop() }
        let sequential = try Self.listMany(gw, clients: 1, perClient: 100)
        let concurrent = try Self.listMany(gw, clients: 8, perClient: 40)
        let wrong = (sequential + concurrent).filter { $0 != "ok" }
        let late = upstream.lateWaits
        #expect(wrong.count <= late, """
            \(wrong.count) of \(sequential.count + concurrent.count) answers wrong, \(late) extra bytes sent 9 ms or \
            more after their answer (longest \(upstream.longestWait) s): \(Array(Set(wrong)).prefix(5))
            """)
    }

    // MARK: Node as the upstream

    @Test(.enabled(if: NodeUpstream.available))
    func nodeAsTheUpstreamGetsOneRequestAtATimeOnKeptAliveConnections() throws {
        // Node's own HTTP server, as Directus runs on, with the default config.
        let node = try NodeUpstream(loginAnswer: LiveUpstreamFailureTests.loginAnswer)
        defer { node.stop() }
        let gw = try TestGateway { $0.directus.url = node.url }
        defer { gw.stop() }
        let sequential = try Self.listMany(gw, clients: 1, perClient: 100)
        let concurrent = try Self.listMany(gw, clients: 8, perClient: 40)
        let wrong = (sequential + concurrent).filter { $0 != "ok" }
        #expect(wrong.isEmpty, "\(wrong.count): \(Array(Set(wrong)).prefix(5))")
        let stats = try node.stats()
        // Every answer went to its request, one request at a time per connection (never two in one read), and
        // connections were kept alive (the stats call has one of its own).
        #expect(stats.requests == 2 + sequential.count + concurrent.count)
        #expect(stats.maxPerRead == 1, "\(stats.maxPerRead) requests arrived in one read: pipelined")
        #expect(stats.connections - 1 <= 2 * PosternConfig().directus.maxConnectionsPerWorker, "\(stats)")
        #expect(stats.connections - 1 < stats.requests / 2, "\(stats)")
    }
}
