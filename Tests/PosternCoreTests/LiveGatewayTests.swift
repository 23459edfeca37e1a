import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore

@Suite(.serialized) struct LiveGatewayTests {
    @Test func loginAnswers200WithTheClientShape() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let r = try gw.client().json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
        #expect(r.status == 200)
        let user = try #require(r.json?["user"])
        let token = try #require(user["token"]?.stringValue)
        #expect(token.hasPrefix("pst_"))
        #expect(user["email"] == .string("x@y.com"))
        #expect(user["id"]?.stringValue == gw.standIn.userID(email: "x@y.com"))
        #expect(user["expires_at"]?.stringValue?.hasSuffix("Z") == true)
        #expect(r.json?["data"]?["accessToken"]?.stringValue == token)
        #expect(r.json?["data"]?["refreshToken"]?.stringValue?.hasPrefix("psr_") == true)
        #expect(r.headers["Cache-Control"] == "no-store")
        // No Directus token leaves the gateway.
        #expect(!r.text.contains("eyJ"))
    }
}
