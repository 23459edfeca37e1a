import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternCoreTesting
import PosternHTTP

/// Inputs before work (docs/api.md, Users; Limits and defaults): an e-mail over 254 bytes or a password over
/// 1,024 bytes is 400 `invalid_request` on login and registration, before the rate limiter and before
/// Directus; through real sockets, against the live stand-in, which records every call it gets.
@Suite(.serialized) struct LoginInputBoundsTests {
    /// A well-formed e-mail of exactly `bytes` bytes (197 or more), which the stand-in (like Directus's Joi)
    /// accepts as valid: a 64-byte local part and labels of at most 63 bytes.
    static func email(bytes: Int) -> String {
        let local = String(repeating: "a", count: 64)
        let last = String(repeating: "d", count: bytes - 197)
        let email = "\(local)@\(String(repeating: "b", count: 63)).\(String(repeating: "c", count: 63)).\(last).com"
        precondition(email.utf8.count == bytes)
        return email
    }

    /// A login or registration body with the e-mail under `emailKey`.
    static func body(_ emailKey: String, _ email: String, _ password: String) -> String {
        #"{"\#(emailKey)":"\#(email)","password":"\#(password)"}"#
    }

    @Test func anEmailOver254BytesIs400WithoutAnUpstreamCall() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let long = Self.email(bytes: 255)
        for (path, key) in [("/api/v1/user/login", "email"), ("/api/v1/user/login", "username"), ("/api/v1/user", "email")] {
            let r = try gw.client().json("POST", path, Self.body(key, long, "123456"))
            #expect(r.status == 400, "\(path) \(key)")
            #expect(r.json?["code"]?.stringValue == "invalid_request")
            #expect(r.json?["error"]?.stringValue?.contains("254") == true, "\(r.text)")
        }
        // About 900 KB, as in the review: the same answer.
        let huge = String(repeating: "a", count: 900_000) + "@example.com"
        let r = try gw.client().json("POST", "/api/v1/user/login", Self.body("email", huge, "123456"))
        #expect(r.status == 400 && r.json?["code"]?.stringValue == "invalid_request")
        #expect(gw.upstream("/auth").isEmpty)
        #expect(gw.upstream("/users").isEmpty)
    }

    @Test func aPasswordOver1024BytesIs400WithoutAnUpstreamCall() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let long = String(repeating: "p", count: 1025)
        for path in ["/api/v1/user/login", "/api/v1/user"] {
            let r = try gw.client().json("POST", path, Self.body("email", "new@example.com", long))
            #expect(r.status == 400, "\(path)")
            #expect(r.json?["code"]?.stringValue == "invalid_request")
            #expect(r.json?["error"]?.stringValue?.contains("1024") == true, "\(r.text)")
        }
        #expect(gw.upstream("/auth").isEmpty)
        #expect(gw.upstream("/users").isEmpty)
    }

    @Test func anEmailOf254BytesAndAPasswordOf1024BytesGoThrough() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let email = Self.email(bytes: 254)
        let password = String(repeating: "p", count: 1024)
        let registered = try gw.client().json("POST", "/api/v1/user", Self.body("email", email, password))
        #expect(registered.status == 200, "\(registered.text)")
        let login = try gw.client().json("POST", "/api/v1/user/login", Self.body("email", email, password))
        #expect(login.status == 200, "\(login.text)")
        #expect(login.json?["user"]?["email"]?.stringValue == email)
        #expect(gw.upstream("/users").count == 1)
        #expect(gw.upstream("/auth/login").count == 2)
    }

    @Test func refusedInputsSpendNoLoginBudget() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        // More refused attempts than the per-IP failed-login budget (10 a minute): each is 400, none 429...
        let long = Self.email(bytes: 255)
        for i in 0..<12 {
            let password = i.isMultiple(of: 2) ? "wrong" : String(repeating: "p", count: 1025)
            let email = i.isMultiple(of: 2) ? long : "x@y.com"
            #expect(try gw.client().json("POST", "/api/v1/user/login", Self.body("email", email, password)).status == 400)
        }
        // ...and the client's next real attempt is not limited.
        let login = try gw.client().json("POST", "/api/v1/user/login", Self.body("email", "x@y.com", "123456"))
        #expect(login.status == 200, "\(login.text)")
        #expect(gw.upstream("/auth/login").count == 1)
    }

    @Test func theOpenAPIDocumentStatesTheLimits() {
        let document = OpenAPIDocument(config: .testing).value
        for name in ["LoginRequest", "RegisterRequest"] {
            let properties = OpenAPITests.schema(document, name)?["properties"]
            #expect(properties?["email"]?["maxLength"]?.intValue == 254, "\(name)")
            #expect(properties?["password"]?["maxLength"]?.intValue == 1024, "\(name)")
        }
        #expect(OpenAPITests.schema(document, "LoginRequest")?["properties"]?["username"]?["maxLength"]?.intValue == 254)
    }

    @Test func anOversizedRefreshTokenIs401WithoutAnUpstreamCall() throws {
        let gw = try TestGateway()
        defer { gw.stop() }
        let token = Crypto.refreshTokenPrefix + String(repeating: "A", count: 100_000)
        let r = try gw.client().json("POST", "/api/v1/user/refresh", #"{"refreshToken":"\#(token)"}"#)
        #expect(r.status == 401)
        #expect(gw.upstream("/auth").isEmpty)
    }
}
