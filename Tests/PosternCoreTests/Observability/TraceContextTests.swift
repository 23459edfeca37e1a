import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

/// W3C trace context (docs/api.md, Conventions): a client's valid `traceparent` is continued (Directus sees the
/// same trace with the gateway's span as parent, the answer carries `traceresponse`); an invalid one, or none,
/// starts a new trace, whose id is the request id when the client sent none.
@Suite struct TraceContextTests {
    static let traceID = "4bf92f3577b34da6a3ce929d0e0e4736"
    static let parentID = "00f067aa0ba902b7"
    static let valid = "00-\(traceID)-\(parentID)-01"

    /// The parts of a version-00 `traceparent`, nil when it is not one (55 bytes, lower-case hex).
    static func parts(_ value: String?) -> (trace: String, parent: String, flags: String)? {
        guard let value else { return nil }
        let p = value.split(separator: "-", omittingEmptySubsequences: false).map(String.init)
        let hex = { (s: String, n: Int) in s.utf8.count == n && s.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) } }
        guard value.utf8.count == 55, p.count == 4, p[0] == "00", hex(p[1], 32), hex(p[2], 16), hex(p[3], 2) else { return nil }
        return (p[1], p[2], p[3])
    }

    static func isTraceID(_ value: String?) -> Bool {
        guard let value else { return false }
        return value.utf8.count == 32 && value.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) }
    }

    static func login(_ gw: InProcessGateway, headers: HTTPHeaders) async -> InProcessGateway.Answer {
        await gw.send(.post, "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#, headers: headers)
    }

    @Test func aValidTraceparentIsContinuedToDirectusAndAnswered() async throws {
        let gw = InProcessGateway()
        let a = await Self.login(gw, headers: ["traceparent": Self.valid, "tracestate": "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7"])
        #expect(a.status == 200)
        let answered = try #require(Self.parts(a.response.headers["traceresponse"]))
        #expect(answered.trace == Self.traceID && answered.flags == "01")
        #expect(answered.parent != Self.parentID)
        // No X-Request-Id sent: the request id is the trace id.
        #expect(a.response.headers["X-Request-Id"] == Self.traceID)
        let calls = gw.standIn.received
        #expect(!calls.isEmpty)
        for call in calls {
            // Same trace, the gateway's span as parent (the one the answer names), flags as sent, tracestate as it came.
            let sent = try #require(Self.parts(call.headers["traceparent"]), "\(call.path)")
            #expect(sent.trace == Self.traceID && sent.parent == answered.parent && sent.flags == "01")
            #expect(call.headers["tracestate"] == "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7")
            #expect(call.headers["X-Request-Id"] == Self.traceID)
        }
    }

    @Test func aClientRequestIDIsKeptBesideItsTrace() async throws {
        let gw = InProcessGateway()
        let a = await Self.login(gw, headers: ["traceparent": Self.valid, "X-Request-Id": "mine-1"])
        #expect(a.response.headers["X-Request-Id"] == "mine-1")
        #expect(Self.parts(a.response.headers["traceresponse"])?.trace == Self.traceID)
        let call = try #require(gw.standIn.received.first)
        #expect(call.headers["X-Request-Id"] == "mine-1")
        #expect(Self.parts(call.headers["traceparent"])?.trace == Self.traceID)
    }

    @Test(arguments: [
        "ff-\(traceID)-\(parentID)-01",  // version ff
        "00-00000000000000000000000000000000-\(parentID)-01",  // all-zero trace id
        "00-\(traceID)-0000000000000000-01",  // all-zero parent id
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-\(parentID)-01",  // upper-case hex
        "00-\(traceID)-00F067AA0BA902B7-01",
        "00-\(traceID)-\(parentID)-0A",
        "00-\(traceID.dropLast())-\(parentID)-01",  // wrong lengths
        "00-\(traceID)0-\(parentID)-01",
        "00-\(traceID)-\(parentID.dropLast())-01",
        "00-\(traceID)-\(parentID)-1",
        "00-\(traceID)-\(parentID)-01-",  // version 00 has nothing after the flags
        "00-\(traceID)-\(parentID)-01x",
        "0-\(traceID)-\(parentID)-01",
        "00_\(traceID)_\(parentID)_01",
        "zz-\(traceID)-\(parentID)-01",
        "00-\(traceID.replacingOccurrences(of: "a", with: "g"))-\(parentID)-01",
        "",
        "garbage",
    ])
    func anInvalidTraceparentStartsANewTrace(value: String) async throws {
        let gw = InProcessGateway()
        let a = await Self.login(gw, headers: ["traceparent": value, "tracestate": "congo=t61rcWkgMzE"])
        #expect(a.status == 200)
        #expect(a.response.headers["traceresponse"] == nil)
        let requestID = try #require(a.response.headers["X-Request-Id"])
        #expect(Self.isTraceID(requestID) && requestID != Self.traceID && !requestID.hasPrefix("00000000"))
        let call = try #require(gw.standIn.received.first)
        let sent = try #require(Self.parts(call.headers["traceparent"]))
        #expect(sent.trace == requestID && sent.parent != Self.parentID && sent.parent != "0000000000000000")
        #expect(call.headers["tracestate"] == nil)
    }

    @Test func aLaterVersionIsReadAsVersion00() async throws {
        let gw = InProcessGateway()
        let a = await Self.login(gw, headers: ["traceparent": "cc-\(Self.traceID)-\(Self.parentID)-01-what-comes-next"])
        let answered = try #require(Self.parts(a.response.headers["traceresponse"]))
        #expect(answered.trace == Self.traceID && answered.parent != Self.parentID)
        #expect(Self.parts(gw.standIn.received.first?.headers["traceparent"])?.trace == Self.traceID)
    }

    @Test func withoutTraceparentTheRequestIDIsANewTraceID() async throws {
        let gw = InProcessGateway()
        let a = await Self.login(gw, headers: [:])
        let b = await Self.login(gw, headers: [:])
        #expect(a.response.headers["traceresponse"] == nil)
        let id = try #require(a.response.headers["X-Request-Id"])
        #expect(Self.isTraceID(id) && id != b.response.headers["X-Request-Id"])
        #expect(a.json?["request_id"] == nil || a.json?["request_id"]?.stringValue == id)
        let calls = gw.standIn.received.filter { $0.headers["X-Request-Id"] == id }
        #expect(!calls.isEmpty)
        for call in calls {
            let sent = try #require(Self.parts(call.headers["traceparent"]))
            #expect(sent.trace == id && sent.flags == "01")
        }
        // One span per request: the calls of one request share their parent id.
        #expect(Set(calls.compactMap { Self.parts($0.headers["traceparent"])?.parent }).count == 1)
    }

    @Test func aClientRequestIDWithoutTraceparentGetsItsOwnTrace() async throws {
        let gw = InProcessGateway()
        let a = await Self.login(gw, headers: ["X-Request-Id": "mine-2"])
        #expect(a.response.headers["X-Request-Id"] == "mine-2" && a.response.headers["traceresponse"] == nil)
        let call = try #require(gw.standIn.received.first)
        #expect(call.headers["X-Request-Id"] == "mine-2")
        #expect(Self.isTraceID(Self.parts(call.headers["traceparent"])?.trace))
    }

    @Test(arguments: [String(repeating: "a", count: 513), "congo=\u{7f}x", "congo=\u{e9}"])
    func aTracestateOverTheLimitOrNotPrintableIsDropped(state: String) async throws {
        let gw = InProcessGateway()
        _ = await Self.login(gw, headers: ["traceparent": Self.valid, "tracestate": state])
        let call = try #require(gw.standIn.received.first)
        #expect(Self.parts(call.headers["traceparent"])?.trace == Self.traceID)
        #expect(call.headers["tracestate"] == nil)
    }

    @Test func aTracestateOf512BytesIsPassedOn() async throws {
        let gw = InProcessGateway()
        let state = "k=" + String(repeating: "v", count: 510)
        _ = await Self.login(gw, headers: ["traceparent": Self.valid, "tracestate": state])
        #expect(gw.standIn.received.first?.headers["tracestate"] == state)
    }

    @Test func browsersMayReadTraceresponseAndSendTraceparent() async throws {
        let gw = InProcessGateway { $0.cors.allowedOrigins = ["https://app.example"] }
        let a = await Self.login(gw, headers: ["traceparent": Self.valid, "Origin": "https://app.example"])
        #expect(a.response.headers["Access-Control-Expose-Headers"]?.contains("traceresponse") == true)
        let preflight = await gw.send(.options, "/api/v1/user/login",
                                      headers: ["Origin": "https://app.example", "Access-Control-Request-Method": "POST",
                                                "Access-Control-Request-Headers": "traceparent, tracestate"])
        let allowed = preflight.response.headers["Access-Control-Allow-Headers"]?.lowercased() ?? ""
        #expect(allowed.contains("traceparent") && allowed.contains("tracestate"))
    }

    @Test func idsAreWrittenAsSixteenLowerCaseHexDigitsEach() {
        var values: [UInt64] = [0, 1, 9, 10, 15, 16, 0xffff_ffff, 0x1_0000_0000, 0x0123_4567_89ab_cdef, 0xfedc_ba98_7654_3210, .max]
        var generator = SystemRandomNumberGenerator()
        for _ in 0..<1000 { values.append(generator.next()) }
        for value in values {
            let trace = TraceContext(traceHigh: value, traceLow: ~value, spanID: value, flags: 0xa5, fromClient: true, state: nil)
            let hex = { (v: UInt64) in String(repeating: "0", count: 16 - String(v, radix: 16).count) + String(v, radix: 16) }
            #expect(trace.traceID == hex(value) + hex(~value))
            #expect(trace.traceparent == "00-\(hex(value))\(hex(~value))-\(hex(value))-a5")
        }
    }

    @Test func theOpenAPIDocumentNamesTraceresponseBesideTheRequestID() async throws {
        let gw = InProcessGateway()
        let a = await gw.send(.get, "/api/v1/openapi.json")
        let login = try #require(a.json?["paths"]?["/api/v1/user/login"]?["post"]?["responses"]?["200"]?["headers"])
        #expect(login["X-Request-Id"] != nil && login["traceresponse"]?["description"]?.stringValue?.contains("traceparent") == true)
    }
}

/// The same through real sockets: the head written to Directus, the answer, the access log line.
@Suite(.serialized) struct LiveTraceContextTests {
    /// The access-log lines of `route`, parsed.
    static func accessLines(_ gw: TestGateway, route: String) -> [JSONValue] {
        gw.logLines.all.compactMap { line in
            guard let json = try? JSONValue.parse(Data(line.utf8)), json["msg"]?.stringValue == "request",
                  json["route"]?.stringValue == route else { return nil }
            return json
        }
    }

    @Test func aValidTraceparentReachesDirectusTheAnswerAndTheLog() throws {
        let gw = try TestGateway { $0.logLevel = "info" }
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        let r = try gw.client().json("GET", "/api/v1/books", token: token,
                                     headers: ["traceparent": TraceContextTests.valid, "tracestate": "congo=t61rcWkgMzE"])
        #expect(r.status == 200)
        let answered = try #require(TraceContextTests.parts(r.headers["traceresponse"]))
        #expect(answered.trace == TraceContextTests.traceID && answered.parent != TraceContextTests.parentID)
        #expect(r.headers["X-Request-Id"] == TraceContextTests.traceID)
        let call = try #require(gw.upstream("/items/").first)
        let sent = try #require(TraceContextTests.parts(call.headers["traceparent"]))
        #expect(sent.trace == TraceContextTests.traceID && sent.parent == answered.parent && sent.flags == "01")
        #expect(call.headers["tracestate"] == "congo=t61rcWkgMzE")
        let line = try #require(Self.accessLines(gw, route: "/api/v1/books").last)
        #expect(line["trace_id"]?.stringValue == TraceContextTests.traceID)
        #expect(line["request_id"]?.stringValue == TraceContextTests.traceID)
    }

    @Test func anInvalidOneOrNoneStartsATraceNamedByTheRequestID() throws {
        let gw = try TestGateway { $0.logLevel = "info" }
        defer { gw.stop() }
        let token = try gw.login()
        for headers in [["traceparent": "00-\(TraceContextTests.traceID.uppercased())-\(TraceContextTests.parentID)-01"], [:]] {
            gw.standIn.clearReceived()
            let r = try gw.client().json("GET", "/api/v1/books", token: token, headers: headers)
            #expect(r.status == 200 && r.headers["traceresponse"] == nil)
            let id = try #require(r.headers["X-Request-Id"])
            #expect(TraceContextTests.isTraceID(id) && id != TraceContextTests.traceID)
            let call = try #require(gw.upstream("/items/").first)
            #expect(TraceContextTests.parts(call.headers["traceparent"])?.trace == id)
            #expect(call.headers["X-Request-Id"] == id)
            let line = try #require(Self.accessLines(gw, route: "/api/v1/books").last)
            #expect(line["trace_id"]?.stringValue == id && line["request_id"]?.stringValue == id)
        }
        // A client's request id is kept; the log still names the trace.
        let r = try gw.client().json("GET", "/api/v1/books", token: token, headers: ["X-Request-Id": "live-1"])
        #expect(r.headers["X-Request-Id"] == "live-1")
        let line = try #require(Self.accessLines(gw, route: "/api/v1/books").last)
        #expect(line["request_id"]?.stringValue == "live-1" && TraceContextTests.isTraceID(line["trace_id"]?.stringValue))
    }
}

/// Repeated `tracestate` lines are one list (W3C Trace Context; issue 34): combined with commas, in order.
@Suite struct TraceStateLinesTests {
    @Test func repeatedTracestateLinesReachDirectusAsOneList() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let body = #"{"email":"x@y.com","password":"123456"}"#
        let client = gw.client()
        try client.sendRaw(Array(("POST /api/v1/user/login HTTP/1.1\r\nHost: x\r\ntraceparent: \(TraceContextTests.valid)\r\n"
            + "tracestate: congo=t61rcWkgMzE\r\ntracestate: \r\ntracestate: rojo=00f067aa0ba902b7,vendor=x\r\n"
            + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)").utf8))
        let answer = try client.readResponse()
        #expect(answer.status == 200, "\(answer.text)")
        let call = try #require(gw.upstream("/auth/login").last)
        #expect(call.headers["tracestate"] == "congo=t61rcWkgMzE,rojo=00f067aa0ba902b7,vendor=x")
        #expect(call.headers.values("tracestate").count == 1)
    }

    @Test func oneLineIsPassedOnAsItCame() {
        #expect(RequestID.traceState(["tracestate": "a=1"]) == "a=1")
        #expect(RequestID.traceState([:]) == nil)
        var headers = HTTPHeaders()
        headers.add("tracestate", "a=1")
        headers.add("tracestate", "b=2")
        #expect(RequestID.traceState(headers) == "a=1,b=2")
    }
}
