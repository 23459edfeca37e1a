import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting

/// The public contract's cross-cutting rules (docs/api.md: Conventions, Errors, Tokens and sessions, Limits and defaults) through real sockets, against the stand-in.
@Suite(.serialized) struct LiveContractTests {
    static let credentials = #"{"email":"x@y.com","password":"123456"}"#

    /// Every value of `name` in `headers`.
    static func values(_ headers: HTTPHeaders, _ name: String) -> [String] {
        headers.filter { $0.name.lowercased() == name.lowercased() }.map(\.value)
    }

    // MARK: Request id and forwarding

    @Test func validRequestIDIsEchoedAndSentUpstream() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let r = try gw.client().json("POST", "/api/v1/user/login", Self.credentials, headers: ["X-Request-Id": "abc-123"])
        #expect(r.status == 200)
        #expect(r.headers["X-Request-Id"] == "abc-123")
        let upstream = try #require(gw.upstream("/auth/login").last)
        #expect(Self.values(upstream.headers, "X-Request-Id") == ["abc-123"])
        #expect(Self.values(upstream.headers, "X-Forwarded-For") == ["127.0.0.1"])
    }

    @Test func invalidRequestIDIsReplacedEverywhere() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let r = try gw.client().json("POST", "/api/v1/user/login", Self.credentials, headers: ["X-Request-Id": "bad id!"])
        #expect(r.status == 200)
        let id = try #require(r.headers["X-Request-Id"])
        #expect(id != "bad id!")
        // The generated id is one the gateway itself accepts: sent back, it is echoed unchanged.
        let again = try gw.client().json("GET", "/healthz", headers: ["X-Request-Id": id])
        #expect(again.headers["X-Request-Id"] == id)
        let upstream = try #require(gw.upstream("/auth/login").last)
        #expect(Self.values(upstream.headers, "X-Request-Id") == [id], "the same generated id reached Directus")

        // An error answer carries the replacement in the body too.
        let e = try gw.client().json("GET", "/api/v1/nope", headers: ["X-Request-Id": String(repeating: "a", count: 129)])
        #expect(e.status == 404)
        let replaced = try #require(e.headers["X-Request-Id"])
        #expect(replaced.count != 129)
        #expect(e.json?["request_id"]?.stringValue == replaced)
        #expect(try gw.client().json("GET", "/healthz", headers: ["X-Request-Id": replaced]).headers["X-Request-Id"] == replaced)
        // The longest and the most varied ids that are allowed are echoed as sent.
        for given in [String(repeating: "a", count: 128), "Az09._-"] {
            #expect(try gw.client().json("GET", "/healthz", headers: ["X-Request-Id": given]).headers["X-Request-Id"] == given)
        }
    }

    @Test func forwardedForIsSetNotAppended() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        let spoof = ["X-Forwarded-For": "6.6.6.6"]
        let login = try gw.client().json("POST", "/api/v1/user/login", Self.credentials, headers: spoof)
        #expect(login.status == 200)
        let list = try gw.client().json("GET", "/api/v1/books", token: token, headers: spoof)
        #expect(list.status == 200)
        let received = gw.standIn.received
        #expect(received.count >= 2)
        for request in received {
            #expect(Self.values(request.headers, "X-Forwarded-For") == ["127.0.0.1"], "\(request.method) \(request.path)")
        }
    }

    // MARK: Authorization never on /auth/*

    @Test func noAuthorizationHeaderOnAuthCalls() throws {
        // An access token that expires within the refresh skew makes the next item call refresh upstream.
        let gw = try TestGateway(standInOptions: DirectusStandIn.Options(accessTokenTTL: 2))
        defer { gw.stop() }
        let token = try gw.login()
        let client = gw.client()
        #expect(try client.json("GET", "/api/v1/books", token: token).status == 200)
        #expect(try client.json("POST", "/api/v1/user/logout", token: token).status == 204)
        #expect(gw.upstream("/auth/login").count == 1)
        #expect(gw.upstream("/auth/refresh").count >= 1, "the gateway refreshed the Directus token")
        #expect(gw.upstream("/auth/logout").count == 1)
        for request in gw.upstream("/auth/") {
            #expect(request.headers["Authorization"] == nil, "\(request.path) carried an Authorization header")
        }
        // The item call itself did carry the (refreshed) Directus token.
        #expect(gw.upstream("/items/").allSatisfy { $0.headers["Authorization"]?.hasPrefix("Bearer ") == true })
    }

    // MARK: Routing errors

    @Test(arguments: [("DELETE", "/api/v1/books", ["GET", "HEAD", "POST"]),
                      ("PUT", "/api/v1/books", ["GET", "HEAD", "POST"]),
                      ("POST", "/api/v1/books/1", ["GET", "HEAD", "PATCH", "PUT", "DELETE"]),
                      ("GET", "/api/v1/user/login", ["POST"]),
                      ("DELETE", "/api/v1/user/me", ["GET", "HEAD"])])
    func wrongMethodIs405WithAllow(_ method: String, _ path: String, _ allowed: [String]) throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let r = try gw.client().request(method, path)
        #expect(r.status == 405, "\(r.text)")
        #expect(r.json?["code"]?.stringValue == "method_not_allowed")
        let allow = Set((r.headers["Allow"] ?? "").split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) })
        #expect(allow == Set(allowed))
        if path.hasPrefix("/api/v1/books") {
            #expect(r.json?["books"] == .array([]))
            #expect(r.json?["total"]?.intValue == 0)
        }
        #expect(gw.standIn.received.isEmpty)
    }

    @Test(arguments: ["/api/v1/nope", "/api/v2/books", "/", "/metrics", "/api/v1/books/1/extra"])
    func unknownRouteIs404(_ path: String) throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let r = try gw.client().request("GET", path)
        #expect(r.status == 404)
        #expect(r.json?["code"]?.stringValue == "not_found")
        #expect(r.json?["error"]?.stringValue?.isEmpty == false)
        #expect(r.json?["request_id"]?.stringValue == r.headers["X-Request-Id"])
    }

    // MARK: Body limits

    @Test func bodyAboveTheLimitIs413JSONWithoutUpstreamCall() throws {
        let gw = try TestGateway { $0.limits.maxBodyBytes = 1024 }
        defer { gw.stop() }
        let token = try gw.login()
        gw.standIn.clearReceived()
        let big = #"{"email":"x@y.com","password":"\#(String(repeating: "p", count: 2000))"}"#
        let login = try gw.client().json("POST", "/api/v1/user/login", big)
        #expect(login.status == 413)
        #expect(login.json?["code"]?.stringValue == "payload_too_large")
        #expect(login.headers["Content-Type"]?.hasPrefix("application/json") == true)

        let create = try gw.client().json("POST", "/api/v1/books", #"{"title":"\#(String(repeating: "t", count: 2000))"}"#, token: token)
        #expect(create.status == 413)
        #expect(create.json?["code"]?.stringValue == "payload_too_large")
        #expect(create.json?["books"] == .array([]))
        #expect(create.json?["total"]?.intValue == 0)
        #expect(gw.standIn.received.isEmpty, "nothing reached Directus")

        // Just at the limit is fine (and reaches Directus).
        let exact = #"{"email":"x@y.com","password":"123456"}"#
        let padded = exact + String(repeating: " ", count: 1024 - exact.utf8.count)
        #expect(try gw.client().json("POST", "/api/v1/user/login", padded).status == 200)
    }

    @Test func bodyAboveTheServerCeilingIsRefusedWithTheJSON413() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let client = gw.client()
        // Announce 9 MiB, send only the start: the server refuses on the Content-Length alone.
        let head = "POST /api/v1/user/login HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
            + "Content-Length: \(9 * 1024 * 1024)\r\n\r\n"
        try client.sendRaw(Array(head.utf8) + Array(repeating: UInt8(ascii: "a"), count: 4096))
        let r = try client.readResponse(method: "POST")
        #expect(r.status == 413)
        #expect(r.json?["code"] == .string("payload_too_large"))
        #expect(r.json?["request_id"]?.stringValue == r.headers["X-Request-Id"])
        #expect(r.headers["Connection"] == "close")
        #expect(gw.standIn.received.isEmpty)
    }

    @Test func headerBlockAboveTheCeilingIsRefusedAndTheGatewayStaysUp() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let client = gw.client()
        let r = try client.request("GET", "/healthz", headers: ["X-Big": String(repeating: "h", count: 20 * 1024)])
        // The server's own 400, in the gateway's error shape, and the connection is closed.
        #expect(r.status == 400)
        #expect(r.json?["code"] == .string("invalid_request"))
        #expect(r.headers["X-Request-Id"] != nil)
        #expect(client.waitForClose(seconds: 5))
        #expect(try gw.client().request("GET", "/healthz").status == 200)
    }

    // MARK: Methods the server must not swallow

    @Test func patchAndOptionsReachTheGateway() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let patch = try gw.client().json("PATCH", "/api/v1/books/1", #"{"title":"x"}"#)
        #expect(patch.status == 401, "\(patch.text)")
        #expect(patch.json?["code"]?.stringValue == "unauthorized")
        #expect(patch.json?["total"]?.intValue == 0)
        let options = try gw.client().request("OPTIONS", "/api/v1/books")
        #expect(options.status != 501, "the server answered OPTIONS itself")
        #expect(options.headers["X-Request-Id"] != nil, "the answer came from the gateway")
    }

    @Test
    func corsPreflightIsAnsweredBeforeAuthentication() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let r = try gw.client().request("OPTIONS", "/api/v1/books/1", headers: [
            "Origin": "https://app.example", "Access-Control-Request-Method": "PATCH",
            "Access-Control-Request-Headers": "authorization, content-type",
        ])
        #expect((200...204).contains(r.status), "\(r.status) \(r.text)")
        #expect(r.headers["Access-Control-Allow-Origin"] == "*")
        let methods = (r.headers["Access-Control-Allow-Methods"] ?? "").uppercased()
        #expect(methods.contains("PATCH"))
        let headers = (r.headers["Access-Control-Allow-Headers"] ?? "").lowercased()
        #expect(headers.contains("authorization") && headers.contains("content-type"))
        // And a plain request from a browser origin gets the allow-origin header too.
        let token = try gw.login()
        let get = try gw.client().json("GET", "/api/v1/books", token: token, headers: ["Origin": "https://app.example"])
        #expect(get.headers["Access-Control-Allow-Origin"] == "*")
    }

    // MARK: Authentication answers

    @Test(arguments: [nil, "Bearer pst_not-a-real-token", "Basic eDp5"])
    func unauthorizedCarriesWWWAuthenticateAndTotal(_ authorization: String?) throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let headers = authorization.map { ["Authorization": $0] } ?? [:]
        let r = try gw.client().request("GET", "/api/v1/books", headers: headers)
        #expect(r.status == 401)
        #expect(r.headers["WWW-Authenticate"] == #"Bearer error="invalid_token""#)
        #expect(r.json?["code"]?.stringValue == "unauthorized")
        #expect(r.json?["total"]?.intValue == 0)
        #expect(r.json?["books"] == .array([]))
        #expect(gw.standIn.received.isEmpty)
    }

    // MARK: Response headers

    @Test func securityHeadersOnEveryResponse() throws {
        let gw = try TestGateway { $0.limits.maxBodyBytes = 1024 }
        defer { gw.stop() }
        let token = try gw.login()
        let client = gw.client()
        let api: [RawHTTPClient.Response] = [
            try client.json("GET", "/api/v1/books", token: token),                          // 200
            try client.json("GET", "/api/v1/books/999999", token: token),                   // 404 item
            try client.json("GET", "/api/v1/books"),                                        // 401
            try client.json("DELETE", "/api/v1/books"),                                     // 405
            try client.json("GET", "/api/v1/books?limit=0", token: token),                  // 400
            try client.json("POST", "/api/v1/user/login", String(repeating: "x", count: 2000)), // 413
            try client.json("GET", "/api/v1/unknown"),                                      // 404 route
            try client.json("GET", "/api/v1/user/me", token: token),                        // 200
        ]
        for r in api {
            #expect(r.headers["X-Content-Type-Options"] == "nosniff", "status \(r.status)")
            #expect(r.headers["Cache-Control"] == "no-store", "status \(r.status)")
        }
        for r in [try client.request("GET", "/healthz"), try client.request("GET", "/readyz"), try client.request("GET", "/nope"),
                  try RawHTTPClient(port: gw.app.adminPort).request("GET", "/healthz")] {
            #expect(r.headers["X-Content-Type-Options"] == "nosniff", "status \(r.status)")
        }
    }

    @Test
    func adminNotFoundCarriesTheCommonHeaders() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let r = try RawHTTPClient(port: gw.app.adminPort).request("GET", "/nope", headers: ["X-Request-Id": "adm-1"])
        #expect(r.status == 404)
        #expect(r.json?["code"]?.stringValue == "not_found")
        #expect(r.headers["X-Content-Type-Options"] == "nosniff")
        #expect(r.headers["X-Request-Id"] == "adm-1")
        #expect(r.json?["request_id"]?.stringValue == "adm-1")
    }

    // MARK: Connections

    @Test func fiftyRequestsOnOneKeepAliveConnection() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = try gw.login()
        let client = gw.client()
        var statuses: [Int] = []
        for i in 0..<50 {
            let r = i % 2 == 0 ? try client.json("GET", "/api/v1/books", token: token) : try client.request("GET", "/healthz")
            statuses.append(r.status)
            #expect(r.headers["Connection"]?.lowercased() != "close")
        }
        #expect(statuses.allSatisfy { $0 == 200 })
        #expect(statuses.count == 50)
    }

    @Test func slowSenderIsDisconnectedWhileOthersAreServed() throws {
        let gw = try TestGateway { $0.limits.inactivityTimeoutSeconds = 1 }
        defer { gw.stop() }
        let slow = gw.client()
        let started = Date()
        try slow.sendRaw(Array("GET /api/v1/books HTTP/1.1\r\nHost: 127.0.0.1\r\n".utf8))
        let other = try gw.client().request("GET", "/healthz")
        #expect(other.status == 200, "another client is served meanwhile")
        #expect(slow.waitForClose(seconds: 3), "the half-sent request was dropped")
        #expect(Date().timeIntervalSince(started) >= 0.9, "by the inactivity timeout, not before it")
        // And the gateway keeps serving after the drop.
        #expect(try gw.client().request("GET", "/healthz").status == 200)
    }

    @Test func idleKeepAliveConnectionIsClosedAfterInactivity() throws {
        let gw = try TestGateway { $0.limits.inactivityTimeoutSeconds = 1 }
        defer { gw.stop() }
        let client = gw.client()
        #expect(try client.request("GET", "/healthz").status == 200)
        let started = Date()
        #expect(client.waitForClose(seconds: 3))
        #expect(Date().timeIntervalSince(started) >= 0.9, "by the inactivity timeout, not before it")
    }

    /// The idle time counts from the last answer: a connection used more often than the timeout stays open
    /// however long it lives in all (the worker's inactivity sweep reads each connection's last activity).
    @Test func busyKeepAliveConnectionOutlivesTheInactivityTimeout() throws {
        let gw = try TestGateway { $0.limits.inactivityTimeoutSeconds = 1 }
        defer { gw.stop() }
        let client = gw.client()
        var lastAnswer = Date()
        // Two idle witnesses in turn, each connected once the one before it was closed: each close by the sweep shows
        // that a whole timeout passed, while the busy connection kept being used (a request every 5 ms).
        for round in 0..<2 {
            let witness = try TrickleClient(port: gw.port)
            try eventually("round \(round): the idle witness is closed by the inactivity sweep") {
                // RawHTTPClient never reconnects on its own: a closed connection throws here.
                let status = try client.request("GET", "/healthz").status
                #expect(status == 200)
                lastAnswer = Date()
                _ = witness.trickle([], interval: 0)
                return witness.closed
            }
        }
        // Then idle: closed about a second after the last answer, not before.
        #expect(client.waitForClose(seconds: 3))
        #expect(Date().timeIntervalSince(lastAnswer) >= 0.9, "not before the timeout")
    }
}
