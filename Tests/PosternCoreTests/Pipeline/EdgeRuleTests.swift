import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
@testable import PosternIO
import PosternTesting
@testable import PosternHTTP
import PosternCoreTesting

/// Edge rules (docs/api.md, Upstream and edge rules): registration as a password guess, X-Forwarded-For,
/// Content-Length, whole-request deadline, HEAD.
@Suite struct RegisterModeLimitTests {
    func register(_ gw: InProcessGateway, _ email: String, _ password: String) async -> InProcessGateway.Answer {
        await gw.send(.post, "/api/v1/user", #"{"email":"\#(email)","password":"\#(password)"}"#)
    }

    func signIns(_ gw: InProcessGateway) -> Int { gw.standIn.received.filter { $0.path == "/auth/login" }.count }

    @Test func wrongPasswordsOnTheRegisterRouteSpendTheLoginBudget() async {
        let gw = InProcessGateway { $0.directus.registration = "register" }
        // `/users/register` answers 204 for a taken email: each wrong password is a guess answered by a sign-in.
        for _ in 0..<5 { #expect(await register(gw, "x@y.com", "wrong").status == 409) }
        #expect(signIns(gw) == 5)
        let again = await register(gw, "X@y.com", "123456")
        #expect(again.status == 429)
        #expect(again.code == "rate_limited")
        #expect(Int(again.response.headers["Retry-After"] ?? "") ?? 0 >= 1)
        // The failures on the register route count for login too.
        let login = await gw.send(.post, "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
        #expect(login.status == 429)
        #expect(signIns(gw) == 5)
        #expect(gw.standIn.received.filter { $0.path == "/users/register" }.count == 5)
    }

    @Test func loginFailuresLimitTheRegisterRoute() async {
        let gw = InProcessGateway { $0.directus.registration = "register" }
        for _ in 0..<5 {
            #expect(await gw.send(.post, "/api/v1/user/login", #"{"email":"x@y.com","password":"wrong"}"#).status == 401)
        }
        #expect(await register(gw, "x@y.com", "123456").status == 429)
        #expect(signIns(gw) == 5)
    }

    @Test func successfulRegistrationsGiveTheClaimBack() async {
        let gw = InProcessGateway {
            $0.directus.registration = "register"
            $0.rateLimits.failedLoginsPerIPPerMinute = 2
        }
        for i in 0..<4 { #expect(await register(gw, "new\(i)@example.com", "pw-123456").status == 200) }
    }
}

/// A request written byte for byte (repeated or malformed header lines), for live tests.
func rawRequest(_ method: String, _ target: String, headerLines: [String], body: String = "") -> [UInt8] {
    var head = "\(method) \(target) HTTP/1.1\r\nHost: 127.0.0.1\r\n"
    for line in headerLines { head += line + "\r\n" }
    return Array((head + "\r\n" + body).utf8)
}

@Suite(.serialized) struct ForwardedForTests {
    @Test func everyForwardedForLineIsReadBeforeWalkingFromTheRight() throws {
        let gw = try TestGateway { $0.rateLimits.trustedProxies = ["127.0.0.1"] }
        defer { gw.stop() }
        var statuses: [Int] = []
        for i in 0..<14 {
            // The client forges a first line; the trusted proxy adds its own line with the real client.
            let body = #"{"email":"guess\#(i)@example.com","password":"wrong"}"#
            let client = gw.client()
            try client.sendRaw(rawRequest("POST", "/api/v1/user/login", headerLines: [
                "Content-Type: application/json", "X-Forwarded-For: 6.6.6.\(i)", "X-Forwarded-For: 198.51.100.7",
                "Content-Length: \(body.utf8.count)",
            ], body: body))
            statuses.append(try client.readResponse(method: "POST").status)
        }
        // Ten failures a minute per client IP: the forged first lines do not make fourteen clients.
        #expect(statuses.prefix(10).allSatisfy { $0 == 401 })
        #expect(statuses.suffix(4).allSatisfy { $0 == 429 })
        let forwarded = Set(gw.upstream("/auth/login").compactMap { $0.headers["X-Forwarded-For"] })
        #expect(forwarded == ["198.51.100.7"])
    }
}

@Suite(.serialized) struct HeadRequestTests {
    @Test func headOnAGetRouteAnswersLikeGetWithoutABody() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = try gw.login()
        let client = gw.client()
        let get = try client.json("GET", "/api/v1/books", token: token)
        #expect(get.status == 200)
        for _ in 0..<2 {
            let head = try client.request("HEAD", "/api/v1/books", headers: ["Authorization": "Bearer \(token)"])
            #expect(head.status == 200)
            #expect(head.headers["Content-Length"] == String(get.body.count))
            #expect(head.headers["Content-Type"] == get.headers["Content-Type"])
            #expect(head.headers["Cache-Control"] == "no-store")
        }
        // An error answer too: its length, no body byte.
        let missing = try client.request("HEAD", "/api/v1/books/99999", headers: ["Authorization": "Bearer \(token)"])
        #expect(missing.status == 404)
        #expect(Int(missing.headers["Content-Length"] ?? "") ?? 0 > 0)
        // No stray body byte: the keep-alive connection still reads the next answer cleanly.
        let again = try client.json("GET", "/api/v1/books", token: token)
        #expect(again.status == 200)
        #expect(again.body == get.body)
        #expect(try client.request("HEAD", "/healthz").status == 200)
        #expect(try client.request("GET", "/healthz").json?["status"] == .string("ok"))
    }

    @Test func allowListsHeadBesideGet() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let client = gw.client()
        let list = try client.request("DELETE", "/api/v1/books")
        #expect(list.status == 405)
        #expect(list.headers["Allow"] == "GET, HEAD, POST")
        let login = try client.request("HEAD", "/api/v1/user/login")
        #expect(login.status == 405)
        #expect(login.headers["Allow"] == "POST")
        #expect(try client.request("GET", "/healthz").status == 200)
    }
}

@Suite struct RequestFramingRuleTests {
    @Test(arguments: [
        (["Content-Length": "12"], nil as String?), (["Content-Length": "0039"], nil), (["Transfer-Encoding": "Chunked"], nil),
        (["Content-Length": "+39"], "Content-Length must be digits"), (["Content-Length": "-1"], "Content-Length must be digits"),
        (["Content-Length": "1e3"], "Content-Length must be digits"), (["Content-Length": ""], "Content-Length must be digits"),
        (["Content-Length": "3 9"], "Content-Length must be digits"),
        (["Transfer-Encoding": "gzip, chunked"], "unsupported Transfer-Encoding"),
        (["Transfer-Encoding": "chunked", "Content-Length": "4"], "both Transfer-Encoding and Content-Length"),
    ])
    func singleLines(_ fields: [String: String], _ problem: String?) {
        var headers = HTTPHeaders()
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) { headers.add(name, value) }
        #expect(RequestFraming.problem(method: .post, headers: headers) == problem)
    }

    @Test func repeatedLinesAndBodiesOnHead() {
        #expect(RequestFraming.problem(method: .post, headers: ["Content-Length": "2", "content-length": "2"]) == "more than one Content-Length")
        var chunkedTwice = HTTPHeaders()
        chunkedTwice.add("Transfer-Encoding", "chunked")
        chunkedTwice.add("Transfer-Encoding", "chunked")
        #expect(RequestFraming.problem(method: .post, headers: chunkedTwice) == "unsupported Transfer-Encoding")
        #expect(RequestFraming.problem(method: .head, headers: ["Content-Length": "5"]) == "HEAD carries no body")
        #expect(RequestFraming.problem(method: .head, headers: ["Content-Length": "0"]) == nil)
        #expect(RequestFraming.problem(method: .get, headers: ["Content-Length": "0"]) == nil)
    }
}

@Suite(.serialized) struct LiveRequestFramingTests {
    static let login = #"{"email":"x@y.com","password":"123456"}"#
    static let count = login.utf8.count

    /// Bad framings: each is answered 400 (JSON: the server's own refusals go through the gateway's error
    /// renderer too) and the connection is closed, and nothing reaches Directus.
    @Test(arguments: [
        ("two equal lengths", "POST", ["Content-Length: \(count)", "Content-Length: \(count)"], true),
        ("two lengths", "POST", ["Content-Length: \(count)", "Content-Length: 4"], true),
        ("a plus sign", "POST", ["Content-Length: +\(count)"], true),
        ("chunked and a length", "POST", ["Transfer-Encoding: chunked", "Content-Length: \(count)"], true),
        ("an encoding before chunked", "POST", ["Transfer-Encoding: gzip, chunked"], true),
        ("a body on HEAD", "HEAD", ["Content-Length: 5"], true),
        ("a negative length", "POST", ["Content-Length: -1"], true),
        ("an exponent", "POST", ["Content-Length: 1e3"], true),
        ("an empty length", "POST", ["Content-Length:"], true),
    ])
    func badFramingIs400AndCloses(_ name: String, _ method: String, _ lines: [String], _ json: Bool) throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let client = gw.client()
        var body = ""
        if method == "POST" {
            body = lines.contains { $0.hasPrefix("Transfer-Encoding") }
                ? "\(String(LiveRequestFramingTests.count, radix: 16))\r\n\(LiveRequestFramingTests.login)\r\n0\r\n\r\n"
                : LiveRequestFramingTests.login
        }
        try client.sendRaw(rawRequest(method, "/api/v1/user/login", headerLines: ["Content-Type: application/json"] + lines, body: body))
        let answer = try client.readResponse(method: method)
        #expect(answer.status == 400, "\(name) \(answer.text)")
        #expect(answer.headers["Connection"]?.lowercased() == "close", "\(name)")
        if json && method != "HEAD" {
            #expect(answer.json?["code"] == .string("invalid_request"), "\(name)")
            #expect(answer.json?["request_id"]?.stringValue == answer.headers["X-Request-Id"], "\(name)")
        }
        #expect(client.waitForClose(seconds: 5), "\(name)")
        #expect(gw.standIn.received.isEmpty, "\(name)")
    }

    /// `0039` is digits (RFC 9110 `1*DIGIT`), and whitespace after the value is not part of it.
    @Test(arguments: ["00\(count)", "\(count) "])
    func plainDigitsAreAccepted(_ length: String) throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let client = gw.client()
        try client.sendRaw(rawRequest("POST", "/api/v1/user/login", headerLines: [
            "Content-Type: application/json", "Content-Length: \(length)",
        ], body: LiveRequestFramingTests.login))
        #expect(try client.readResponse(method: "POST").status == 200)
        #expect(try client.request("GET", "/healthz").status == 200)
    }
}

@Suite(.serialized) struct RequestDeadlineTests {
    static func headerTrickle(_ lines: Int) -> [[UInt8]] {
        [Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8)]
            + (0..<lines).map { Array("X-Slow-\($0): a\r\n".utf8) } + [Array("\r\n".utf8)]
    }

    @Test func headersTricklingPastTheDeadlineAreCutOff() throws {
        let gw = try TestGateway { $0.limits.requestTimeoutSeconds = 1 }
        defer { gw.stop() }
        let client = try TrickleClient(port: gw.port)
        // Twenty header lines 300 ms apart: each byte restarts the inactivity timer, but not the deadline.
        let pieces = RequestDeadlineTests.headerTrickle(20)
        let sent = client.trickle(pieces, interval: 0.3)
        client.waitForClose(seconds: 5)
        #expect(sent < pieces.count, "the whole request went out: \(client.replyText)")
        #expect(client.closed)
        #expect(!client.replyText.contains(" 200 "))
        // When an answer made it out before the close, it is the 408 in the error shape.
        if !client.reply.isEmpty {
            #expect(client.replyText.hasPrefix("HTTP/1.1 408"))
            #expect(client.replyText.contains(#""code":"request_timeout""#))
        }
        #expect(try gw.client().request("GET", "/healthz").status == 200)
    }

    @Test func aBodyTricklingPastTheDeadlineIsCutOffBeforeDirectus() throws {
        let gw = try TestGateway { $0.limits.requestTimeoutSeconds = 1 }
        defer { gw.stop() }
        let body = Array(#"{"email":"x@y.com","password":"123456"}"#.utf8)
        let head = "POST /api/v1/user/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(body.count)\r\n\r\n"
        let client = try TrickleClient(port: gw.port)
        let pieces = [Array(head.utf8)] + body.map { [$0] }
        let sent = client.trickle(pieces, interval: 0.3)
        client.waitForClose(seconds: 5)
        #expect(sent < pieces.count)
        #expect(client.closed)
        #expect(!client.replyText.contains(" 200 "))
        #expect(gw.upstream("/auth/login").isEmpty)
    }

    @Test func aPipelinedRequestStalledPastTheDeadlineIsCutOff() throws {
        let gw = try TestGateway { $0.limits.requestTimeoutSeconds = 1 }
        defer { gw.stop() }
        let client = try TrickleClient(port: gw.port)
        // A whole request and the start of the next in one write, then nothing: the next one's deadline
        // runs from the moment the first is answered (its bytes were already there), long before the
        // 10 s inactivity timer would close the connection without a word.
        let pipelined = "GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\nGET /healthz HTTP/1.1\r\nX-Slow: a\r\n"
        #expect(client.trickle([Array(pipelined.utf8)], interval: 0) == 1)
        client.waitForClose(seconds: 5)
        #expect(client.closed)
        #expect(client.replyText.hasPrefix("HTTP/1.1 200 OK"))
        #expect(client.replyText.contains("HTTP/1.1 408 Request Timeout"), "\(client.replyText)")
    }

    @Test func theDeadlineCountsFromEachRequestsFirstByte() throws {
        let gw = try TestGateway { $0.limits.requestTimeoutSeconds = 2 }
        defer { gw.stop() }
        let client = try TrickleClient(port: gw.port)
        // A slow request within the deadline is answered.
        let slow = RequestDeadlineTests.headerTrickle(2)
        #expect(client.trickle(slow, interval: 0.2) == slow.count)
        // Idle longer than the deadline on the kept-alive connection (idle time is the inactivity timer's): a witness
        // connection starts a request now and is cut off by its own deadline; only then does the idle one send again.
        let witness = try TrickleClient(port: gw.port)
        #expect(witness.trickle([Array("GET /healthz HTTP/1.1\r\nX-Slow: a\r\n".utf8)], interval: 0) == 1)
        witness.waitForClose(seconds: 10)
        #expect(witness.replyText.contains("HTTP/1.1 408 Request Timeout"), "\(witness.replyText)")
        let next = Array("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n".utf8)
        #expect(client.trickle([next], interval: 0) == 1)
        client.waitUntil(seconds: 5) { $0.components(separatedBy: "HTTP/1.1 200 OK").count == 3 }
        #expect(!client.closed)
        #expect(client.replyText.components(separatedBy: "HTTP/1.1 200 OK").count == 3, "\(client.replyText)")
    }

    @Test func bodiesFarAboveTheLimitAreRefusedOnTheirLength() throws {
        // max_body_bytes 1000: the server's ceiling is 1000 + 64 KiB, so 100 kB is refused before it is read.
        let gw = try TestGateway {
            $0.limits.maxBodyBytes = 1000
            $0.limits.inactivityTimeoutSeconds = 2
        }
        defer { gw.stop() }
        let client = gw.client()
        try client.sendRaw(Array(("POST /api/v1/user/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "Content-Length: 100000\r\n\r\n").utf8))
        let refused = try client.readResponse(method: "POST")
        #expect(refused.status == 413)
        #expect(refused.json?["code"] == .string("payload_too_large"))
        #expect(refused.json?["error"]?.stringValue?.contains("1000") == true, "the configured limit is named")
        // Just above the limit, below the ceiling: the JSON 413.
        let json = try gw.client().json("POST", "/api/v1/user/login", String(repeating: " ", count: 5000))
        #expect(json.status == 413)
        #expect(json.json?["code"] == .string("payload_too_large"))
        #expect(gw.standIn.received.isEmpty)
    }
}

@Suite struct BodyCeilingTests {
    @Test(arguments: [(1_048_576, 2_097_152), (1000, 66_536), (5 * 1_048_576, 8 * 1_048_576), (8 * 1_048_576, 8 * 1_048_576)])
    func libeventsCeilingFollowsTheLimit(_ maxBody: Int, _ ceiling: Int) {
        var limits = LimitsConfig()
        limits.maxBodyBytes = maxBody
        #expect(limits.bodyCeiling == ceiling)
    }
}
