import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternCoreTesting
import PosternHTTP

/// The admin listener's guard (docs/api.md, Operator console), through a live admin listener: every path under
/// `/admin/` needs `Authorization: Bearer <admin.token>`; none configured is 403 `admin_disabled`; `/metrics`,
/// `/healthz` and `/readyz` stay open.
@Suite struct AdminGuardTests {
    static let token = "test-admin-token-0123456789"

    /// A live gateway whose admin token is `token` (empty: none).
    static func gateway(token: String) throws -> TestGateway {
        try TestGateway { $0.admin.token = token }
    }

    @Test func withoutAConfiguredTokenEveryAdminPathIs403AdminDisabled() throws {
        let gw = try Self.gateway(token: "")
        defer { gw.stop() }
        let admin = RawHTTPClient(port: gw.app.adminPort)
        for (path, headers) in [("/admin/stats", [String: String]()), ("/admin/nope", [:]),
                                ("/admin/stats", ["Authorization": "Bearer \(Self.token)"]),
                                ("/admin/sessions?user=x@y.com", ["Authorization": "Bearer "])] {
            let r = try admin.request("GET", path, headers: headers)
            #expect(r.status == 403, "\(path): \(r.status) \(r.text)")
            #expect(r.json?["code"]?.stringValue == "admin_disabled", "\(path): \(r.text)")
            #expect(r.json?["request_id"]?.stringValue != nil)
        }
        let delete = try admin.request("DELETE", "/admin/sessions/abcdefgh")
        #expect(delete.status == 403 && delete.json?["code"]?.stringValue == "admin_disabled", "\(delete.text)")
        // The operations routes and /metrics are as they were.
        #expect(try admin.request("GET", "/healthz").status == 200)
        #expect(try admin.request("GET", "/metrics").status == 200)
        #expect(try admin.request("GET", "/readyz").status == 200)
    }

    @Test func aMissingOrWrongTokenIs401WithWWWAuthenticateBearer() throws {
        let gw = try Self.gateway(token: Self.token)
        defer { gw.stop() }
        let admin = RawHTTPClient(port: gw.app.adminPort)
        let cases: [(String, [String: String])] = [
            ("/admin/stats", [:]),
            ("/admin/stats", ["Authorization": "Bearer wrong-token-wrong-token"]),
            ("/admin/stats", ["Authorization": "Bearer \(Self.token)x"]),
            ("/admin/stats", ["Authorization": "Bearer \(Self.token.dropLast())"]),
            ("/admin/stats", ["Authorization": "Basic \(Self.token)"]),
            ("/admin/stats", ["Authorization": Self.token]),
            ("/admin/nope", [:]),  // an unknown path says nothing without the token
            ("/admin/sessions?user=x@y.com", ["Authorization": "Bearer nope"]),
        ]
        for (path, headers) in cases {
            let r = try admin.request("GET", path, headers: headers)
            #expect(r.status == 401, "\(path) \(headers): \(r.status) \(r.text)")
            #expect(r.json?["code"]?.stringValue == "unauthorized", "\(r.text)")
            #expect(r.headers["WWW-Authenticate"]?.hasPrefix("Bearer") == true, "\(r.headers)")
            #expect(!r.text.contains(Self.token), "the token is never echoed")
        }
        // Methods the route does not have, too: the guard answers first.
        #expect(try admin.request("DELETE", "/admin/stats").status == 401)
        #expect(try admin.request("POST", "/admin/users/u1/sessions").status == 401)
        #expect(!gw.logLines.all.joined().contains(Self.token), "the token is never logged")
    }

    @Test func theRightTokenPasses() throws {
        let gw = try Self.gateway(token: Self.token)
        defer { gw.stop() }
        let admin = RawHTTPClient(port: gw.app.adminPort)
        let auth = ["Authorization": "Bearer \(Self.token)"]
        let unknown = try admin.request("GET", "/admin/nope", headers: auth)
        #expect(unknown.status == 404 && unknown.json?["code"]?.stringValue == "not_found", "\(unknown.text)")
        // The scheme is case-insensitive, as on the public listener.
        #expect(try admin.request("GET", "/admin/nope", headers: ["Authorization": "bearer \(Self.token)"]).status == 404)
        // Open paths do not need it, and do not mind it.
        #expect(try admin.request("GET", "/healthz").status == 200)
        #expect(try admin.request("GET", "/metrics", headers: auth).status == 200)
        // The public listener has no /admin/ routes at all.
        #expect(try gw.client().request("GET", "/admin/nope", headers: auth).status == 404)
        #expect(!gw.logLines.all.joined().contains(Self.token), "the token is never logged")
    }
}

/// `admin.token` and `POSTERN_ADMIN_TOKEN` (docs/api.md, Configuration).
@Suite struct AdminTokenConfigTests {
    @Test func theTokenComesFromTheFileOrTheEnvironment() throws {
        let fromFile = try PosternConfig.load(json: Data(#"{"admin": {"token": "0123456789abcdef"}}"#.utf8), environment: [:]).get()
        #expect(fromFile.admin.token == "0123456789abcdef")
        let fromEnv = try PosternConfig.load(json: Data(#"{"admin": {"token": ""}}"#.utf8),
                                             environment: ["POSTERN_ADMIN_TOKEN": "fedcba9876543210"]).get()
        #expect(fromEnv.admin.token == "fedcba9876543210")
        #expect(try PosternConfig.load(json: nil, environment: [:]).get().admin.token == "")
        let origins = PosternConfig.environmentOrigins(json: Data(#"{"admin": {"token": ""}}"#.utf8),
                                                       environment: ["POSTERN_ADMIN_TOKEN": "fedcba9876543210"])
        #expect(origins == [ConfigOrigin(key: "admin.token", variable: "POSTERN_ADMIN_TOKEN", overridesFile: true)])
        #expect(!origins.map(\.description).joined().contains("fedcba"))
    }

    @Test func aShortOrUnprintableTokenIsAProblemNamedByItsOrigin() {
        func problems(_ json: String, _ environment: [String: String] = [:]) -> [String] {
            guard case .failure(let error) = PosternConfig.load(json: Data(json.utf8), environment: environment) else { return [] }
            return error.problems.map(\.description)
        }
        let short = problems(#"{"admin": {"token": "short"}}"#)
        #expect(short.count == 1 && short[0].hasPrefix("admin.token: must be at least 16 characters"), "\(short)")
        #expect(!short.joined().contains("short\""), "the value is not echoed")
        let spaced = problems("{}", ["POSTERN_ADMIN_TOKEN": "has a space inside it"])
        #expect(spaced.count == 1 && spaced[0].hasPrefix("POSTERN_ADMIN_TOKEN: must be printable ASCII"), "\(spaced)")
        let wrongType = problems(#"{"admin": {"token": 5}}"#)
        #expect(wrongType.count == 1 && wrongType[0].hasPrefix("admin.token: must be a string"), "\(wrongType)")
        let unknownKey = problems(#"{"admin": {"tokn": "0123456789abcdef"}}"#)
        #expect(unknownKey.count == 1 && unknownKey[0].hasPrefix("admin.tokn"), "\(unknownKey)")
    }

    @Test func theRedactedConfigHidesEverySecret() {
        var config = PosternConfig()
        config.admin.token = "admin-secret-0123456789"
        config.secretKey = "c2VjcmV0LWtleS1ieXRlcy0wMTIzNDU2Nzg5YWJjZGU="
        config.sessions.store = "redis://:redis-pass-word@cache:6379/2"
        config.directus.url = "http://user:directus-pw@cms:8055"
        let text = config.redactedJSON().text
        for secret in ["admin-secret", "c2VjcmV0", "redis-pass-word", "directus-pw", "user:"] {
            #expect(!text.contains(secret), "\(secret) leaked: \(text)")
        }
        #expect(text.contains(#""store":"redis://<redacted>@cache:6379/2""#), "\(text)")
        #expect(text.contains(#""token":"<redacted>""#) && text.contains(#""secret_key":"<redacted>""#))
        #expect(text.contains(#""url":"http://<redacted>@cms:8055""#))
        // Unset secrets show as unset; the rest is as configured.
        let plain = PosternConfig().redactedJSON()
        #expect(plain["admin"]?["token"]?.stringValue == "" && plain["secret_key"]?.isNull == true)
        #expect(plain["sessions"]?["store"]?.stringValue == "sqlite:data/sessions.db")
        #expect(plain["resources"]?.arrayValue?.count == 3)
    }
}
