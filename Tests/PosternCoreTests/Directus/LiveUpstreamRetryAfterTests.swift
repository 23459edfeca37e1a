import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternCoreTesting
import PosternHTTP

/// A Directus that says "not now" (docs/api.md, Upstream and edge rules): its 503 (`SERVICE_UNAVAILABLE`
/// from the pressure limiter, or `/server/health` in error) is 503 `upstream_unavailable`, and the
/// `Retry-After` of a Directus 429 or 503 reaches the client as it came.
@Suite(.serialized) struct LiveUpstreamRetryAfterTests {
    struct Case: Sendable, CustomTestStringConvertible {
        let name: String
        let status: Int
        let headers: [String]
        let body: String
        let expectedStatus: Int
        let expectedCode: String
        let expectedRetryAfter: String?
        var testDescription: String { name }
    }

    static let pressure = #"{"errors":[{"message":"Service \"api\" is unavailable. Under pressure.","extensions":{"code":"SERVICE_UNAVAILABLE"}}]}"#
    static let exceeded = #"{"errors":[{"message":"Too many requests, retry after 17s.","extensions":{"limit":50,"reset":"2026-01-01T00:00:17.000Z","code":"REQUESTS_EXCEEDED"}}]}"#

    static let cases: [Case] = [
        Case(name: "503 pressure limiter with Retry-After", status: 503, headers: ["Retry-After: 17"], body: pressure,
             expectedStatus: 503, expectedCode: "upstream_unavailable", expectedRetryAfter: "17"),
        Case(name: "503 without Retry-After", status: 503, headers: [], body: pressure,
             expectedStatus: 503, expectedCode: "upstream_unavailable", expectedRetryAfter: nil),
        Case(name: "503 health body without envelope", status: 503, headers: ["Retry-After: 17"], body: #"{"status":"error"}"#,
             expectedStatus: 503, expectedCode: "upstream_unavailable", expectedRetryAfter: "17"),
        Case(name: "429 with Retry-After", status: 429, headers: ["Retry-After: 17"], body: exceeded,
             expectedStatus: 429, expectedCode: "rate_limited", expectedRetryAfter: "17"),
        Case(name: "429 with an HTTP-date Retry-After", status: 429, headers: ["Retry-After: Fri, 01 Jan 2027 00:00:17 GMT"],
             body: exceeded, expectedStatus: 429, expectedCode: "rate_limited", expectedRetryAfter: "Fri, 01 Jan 2027 00:00:17 GMT"),
        Case(name: "429 without Retry-After", status: 429, headers: [], body: exceeded,
             expectedStatus: 429, expectedCode: "rate_limited", expectedRetryAfter: "60"),
    ]

    @Test(arguments: cases) func directusNotNowReachesTheClient(_ c: Case) throws {
        let fake = try ScriptedUpstream(every: ScriptedUpstream.Misbehaviour.status(c.status, c.body, headers: c.headers))
        defer { fake.stop() }
        let gw = try TestGateway { config in
            config.directus.url = fake.url
            config.directus.timeoutMs = 2000
        }
        defer { gw.stop() }
        let r = try gw.client().json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
        #expect(r.status == c.expectedStatus, "\(r.text)")
        #expect(r.json?["code"]?.stringValue == c.expectedCode)
        #expect(r.headers["Retry-After"] == c.expectedRetryAfter)
        #expect(fake.requests.count == 1, "one call, no retry")
    }
}
