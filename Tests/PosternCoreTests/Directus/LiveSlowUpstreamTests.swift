import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternCoreTesting

/// A slow Directus against the client connection's inactivity timer (docs/api.md, Limits and defaults): a client waiting for
/// its answer is not "inactive", so the answer must arrive even when Directus takes longer than that timer.
@Suite(.serialized) struct LiveSlowUpstreamTests {
    @Test func slowUpstreamAnswerOutlivesTheInactivityTimeout() throws {
        let fake = try ScriptedUpstream(every: [.wait(1.6)] + ScriptedUpstream.Misbehaviour.notJSON)
        defer { fake.stop() }
        let gw = try TestGateway { config in
            config.directus.url = fake.url
            config.directus.timeoutMs = 3000
            config.limits.inactivityTimeoutSeconds = 1
        }
        defer { gw.stop() }
        let r = try gw.client().json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
        // 502 (Directus's answer was not JSON) and not 504: the gateway waited for Directus's late answer.
        #expect(r.status == 502, "\(r.text)")
    }

    @Test func upstreamTimeoutLongerThanInactivityStillAnswers504() throws {
        let fake = try ScriptedUpstream(every: [.silent])
        defer { fake.stop() }
        let gw = try TestGateway { config in
            config.directus.url = fake.url
            config.directus.timeoutMs = 1500
            config.limits.inactivityTimeoutSeconds = 1
        }
        defer { gw.stop() }
        let r = try gw.client().json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
        #expect(r.status == 504, "\(r.text)")
    }
}

extension LiveSlowUpstreamTests {
    @Test func clientHangingUpWhileWaitingDoesNotHurtTheGateway() throws {
        let fake = try ScriptedUpstream(every: [.wait(0.3)] + ScriptedUpstream.Misbehaviour.notJSON)
        defer { fake.stop() }
        let gw = try TestGateway { config in
            config.directus.url = fake.url
        }
        defer { gw.stop() }
        for _ in 0..<5 {
            let client = gw.client()
            let body = #"{"email":"x@y.com","password":"123456"}"#
            try client.sendRaw(Array("POST /api/v1/user/login HTTP/1.1\r\nHost: x\r\nContent-Length: \(body.utf8.count)\r\n\r\n\(body)".utf8))
            client.close()
        }
        // Each request ends (its access-log line is written) when its delayed answer arrives, client gone or not.
        try eventually("five logins ended") { gw.finishedRequests(route: "/api/v1/user/login").count >= 5 }
        #expect(gw.finishedRequests(route: "/api/v1/user/login").map(\.status) == [502, 502, 502, 502, 502])
        #expect(try gw.client().json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#).status == 502)
    }
}
