import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting
import DirectusStandIn

/// The operator's session control (docs/api.md, Session control) through live listeners: the admin
/// listener's `/admin/sessions…` routes with and without the admin token, on the memory and SQLite stores; what
/// the listing shows (client IP, user agent, never a token); a revocation ends the session at once (both tokens
/// 401, its Directus refresh token logged out) and is logged at notice level without a secret.
@Suite struct AdminSessionsLiveTests {
    static let adminToken = "sessions-admin-token-0123456789"

    /// The stores the live tests run on.
    enum Store: String, CaseIterable, CustomStringConvertible {
        case memory, sqlite
        var description: String { rawValue }

        func make(in dir: URL) throws -> any SessionStore {
            switch self {
            case .memory: return MemorySessionStore()
            case .sqlite: return try SQLiteSessionStore(path: dir.appendingPathComponent("s.db").path, secretBox: nil)
            }
        }
    }

    /// A live gateway over `store` whose admin token is `token` (empty: none), trusting 127.0.0.1 as a proxy.
    static func gateway(_ store: any SessionStore, token: String = adminToken) throws -> TestGateway {
        try TestGateway(store: store) { config in
            config.admin.token = token
            config.rateLimits.trustedProxies = ["127.0.0.1"]
        }
    }

    /// One admin call with `token` (nil: no `Authorization`).
    static func admin(_ gw: TestGateway, _ method: String, _ target: String,
                      token: String? = adminToken) throws -> RawHTTPClient.Response {
        try RawHTTPClient(port: gw.app.adminPort).json(method, target, token: token)
    }

    /// Signs in as `email` with the given extra headers; returns the access and refresh tokens.
    static func login(_ gw: TestGateway, _ email: String = "x@y.com", _ password: String = "123456",
                      headers: [String: String] = [:]) throws -> (token: String, refresh: String) {
        let r = try gw.client().json("POST", "/api/v1/user/login", #"{"email":"\#(email)","password":"\#(password)"}"#,
                                     headers: headers)
        guard r.status == 200, let token = r.json?["user"]?["token"]?.stringValue,
              let refresh = r.json?["data"]?["refreshToken"]?.stringValue else {
            throw TestFailure("login failed: \(r.status) \(r.text)")
        }
        return (token, refresh)
    }

    /// The listing of `user` (200 expected).
    static func list(_ gw: TestGateway, _ user: String) throws -> [JSONValue] {
        let r = try admin(gw, "GET", "/admin/sessions?user=" + (user.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? user))
        guard r.status == 200, case .array(let items)? = r.json?["data"] else {
            throw TestFailure("list \(user): \(r.status) \(r.text)")
        }
        return items
    }

    /// The JSON log lines whose `msg` is "sessions revoked".
    static func revocationLines(_ gw: TestGateway) -> [JSONValue] {
        gw.logLines.all.compactMap { try? JSONValue.parse(Data($0.utf8)) }.filter { $0["msg"]?.stringValue == "sessions revoked" }
    }

    @Test(arguments: Store.allCases)
    func theListingShowsWhereAndWithWhatEachSessionSignedInNewestFirst(_ kind: Store) throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let gw = try Self.gateway(try kind.make(in: dir))
        defer { gw.stop() }
        let phone = try Self.login(gw, headers: ["User-Agent": "PhoneApp/1.0", "X-Forwarded-For": "203.0.113.7"])
        let long = String(repeating: "b", count: 300)
        let browser = try Self.login(gw, headers: ["User-Agent": long])
        let other = try Self.login(gw, "second@example.com", "password2")
        let userID = try #require(gw.standIn.userID(email: "x@y.com"))

        let items = try Self.list(gw, "x@y.com")
        #expect(items.count == 2)
        // Newest first: the browser's, then the phone's.
        #expect(items.map { $0["user_agent"]?.stringValue } == [String(repeating: "b", count: 256), "PhoneApp/1.0"])
        #expect(items.map { $0["client_ip"]?.stringValue } == ["127.0.0.1", "203.0.113.7"])
        for item in items {
            let id = try #require(item["id"]?.stringValue)
            #expect(item["id_prefix"]?.stringValue == String(id.prefix(12)))
            #expect(item["user_id"]?.stringValue == userID)
            #expect(item["email"]?.stringValue == "x@y.com")
            #expect(item["created_at"]?.stringValue?.hasSuffix("Z") == true)
            #expect(item["last_seen_at"]?.stringValue?.count == 20)
        }
        // By user id and by e-mail in another case: the same sessions.
        #expect(try Self.list(gw, userID).map { $0["id"] } == items.map { $0["id"] })
        #expect(try Self.list(gw, "X@Y.COM").map { $0["id"] } == items.map { $0["id"] })
        #expect(try Self.list(gw, "nobody@example.com").isEmpty)
        // Never a token or a digest.
        let body = try Self.admin(gw, "GET", "/admin/sessions?user=x@y.com").text
        for secret in [phone.token, phone.refresh, browser.token, browser.refresh, Crypto.sha256Hex(phone.token),
                       Crypto.sha256Hex(phone.refresh), other.token] {
            #expect(!body.contains(secret))
        }
        #expect(!body.contains("directus") && !body.contains("token"))
        // A refresh keeps them.
        let r = try gw.client().json("POST", "/api/v1/user/refresh", #"{"refreshToken":"\#(phone.refresh)"}"#)
        #expect(r.status == 200)
        #expect(try Self.list(gw, "x@y.com").map { $0["client_ip"]?.stringValue } == ["127.0.0.1", "203.0.113.7"])
    }

    @Test(arguments: Store.allCases)
    func aListingWithoutAUserIs400(_ kind: Store) throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let gw = try Self.gateway(try kind.make(in: dir))
        defer { gw.stop() }
        for target in ["/admin/sessions", "/admin/sessions?user=", "/admin/sessions?other=x@y.com",
                       "/admin/sessions?user=" + String(repeating: "a", count: 300)] {
            let r = try Self.admin(gw, "GET", target)
            #expect(r.status == 400, "\(target): \(r.status) \(r.text)")
            #expect(r.json?["code"]?.stringValue == "invalid_request")
            #expect(r.json?["error"]?.stringValue?.contains("user") == true, "\(r.text)")
        }
        #expect(try Self.admin(gw, "POST", "/admin/sessions").status == 405)
    }

    @Test(arguments: Store.allCases)
    func revokingOneSessionByItsPrefixEndsItAtOnceAndIsLoggedWithoutASecret(_ kind: Store) throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let gw = try Self.gateway(try kind.make(in: dir))
        defer { gw.stop() }
        let one = try Self.login(gw, headers: ["User-Agent": "one"])
        let two = try Self.login(gw, headers: ["User-Agent": "two"])
        #expect(try gw.client().json("GET", "/api/v1/user/me", token: one.token).status == 200)
        let id = try #require(try Self.list(gw, "x@y.com").first { $0["user_agent"]?.stringValue == "one" }?["id"]?.stringValue)
        let logoutsBefore = gw.upstream("/auth/logout").count

        let r = try Self.admin(gw, "DELETE", "/admin/sessions/" + id.prefix(12), token: Self.adminToken)
        #expect(r.status == 200, "\(r.text)")
        #expect(r.json == .object([("data", .object([("revoked", .int(1))]))]))
        // Like a logout: both of its tokens are dead at once, its Directus refresh token is logged out upstream,
        // and the other session goes on.
        #expect(try gw.client().json("GET", "/api/v1/user/me", token: one.token).status == 401)
        #expect(try gw.client().json("POST", "/api/v1/user/refresh", #"{"refreshToken":"\#(one.refresh)"}"#).status == 401)
        #expect(try gw.client().json("GET", "/api/v1/user/me", token: two.token).status == 200)
        #expect(gw.upstream("/auth/logout").count == logoutsBefore + 1)
        #expect(try Self.list(gw, "x@y.com").map { $0["user_agent"]?.stringValue } == ["two"])

        // The notice line: who (the admin's address) and what, never a token or a digest.
        let lines = Self.revocationLines(gw)
        #expect(lines.count == 1)
        #expect(lines.first?["level"]?.stringValue == "notice")
        #expect(lines.first?["admin_ip"]?.stringValue == "127.0.0.1")
        #expect(lines.first?["session"]?.stringValue == String(id.prefix(12)))
        #expect(lines.first?["revoked"]?.intValue == 1)
        let log = gw.logLines.all.joined(separator: "\n")
        for secret in [one.token, one.refresh, Crypto.sha256Hex(one.token), Crypto.sha256Hex(one.refresh), Self.adminToken] {
            #expect(!log.contains(secret))
        }

        // Gone: 404; a prefix too short to name one session: 400; a full id works as well as a prefix.
        let again = try Self.admin(gw, "DELETE", "/admin/sessions/" + id)
        #expect(again.status == 404 && again.json?["code"]?.stringValue == "not_found", "\(again.text)")
        let short = try Self.admin(gw, "DELETE", "/admin/sessions/abc")
        #expect(short.status == 400 && short.json?["code"]?.stringValue == "invalid_request", "\(short.text)")
        #expect(try Self.admin(gw, "DELETE", "/admin/sessions/zzzzzzzzzzzz").status == 404)
        #expect(try Self.admin(gw, "DELETE", "/admin/sessions/%FF%FE%00abcdefgh").status == 404)
        let twoID = try #require(try Self.list(gw, "x@y.com").first?["id"]?.stringValue)
        #expect(try Self.admin(gw, "DELETE", "/admin/sessions/" + twoID).status == 200)
        #expect(try gw.client().json("GET", "/api/v1/user/me", token: two.token).status == 401)
        #expect(Self.revocationLines(gw).count == 2)
    }

    @Test(arguments: Store.allCases)
    func aPrefixThatMatchesSeveralSessionsIs409AndRevokesNothing(_ kind: Store) async throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let store = try kind.make(in: dir)
        let gw = try Self.gateway(store)
        defer { gw.stop() }
        for id in ["SAMEPREFIX-a", "SAMEPREFIX-b"] {
            try await store.insert(SessionListingStoreTests.session(id, user: "u-twin", email: "twin@example.com"))
        }
        let r = try Self.admin(gw, "DELETE", "/admin/sessions/SAMEPREF")
        #expect(r.status == 409, "\(r.text)")
        #expect(r.json?["code"]?.stringValue == "ambiguous_session_id")
        #expect(try Self.list(gw, "u-twin").count == 2)
        #expect(Self.revocationLines(gw).isEmpty)
        #expect(try Self.admin(gw, "DELETE", "/admin/sessions/SAMEPREFIX-a").status == 200)
        #expect(try Self.list(gw, "twin@example.com").map { $0["id"]?.stringValue } == ["SAMEPREFIX-b"])
    }

    @Test(arguments: Store.allCases)
    func revokingAUsersSessionsEndsEachOfThem(_ kind: Store) throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let gw = try Self.gateway(try kind.make(in: dir))
        defer { gw.stop() }
        let mine = try (0..<3).map { _ in try Self.login(gw) }
        let other = try Self.login(gw, "second@example.com", "password2")
        let userID = try #require(gw.standIn.userID(email: "x@y.com"))

        let r = try Self.admin(gw, "DELETE", "/admin/users/\(userID)/sessions")
        #expect(r.status == 200, "\(r.text)")
        #expect(r.json == .object([("data", .object([("revoked", .int(3))]))]))
        for s in mine {
            #expect(try gw.client().json("GET", "/api/v1/user/me", token: s.token).status == 401)
            #expect(try gw.client().json("POST", "/api/v1/user/refresh", #"{"refreshToken":"\#(s.refresh)"}"#).status == 401)
        }
        #expect(try gw.client().json("GET", "/api/v1/user/me", token: other.token).status == 200)
        #expect(try Self.list(gw, userID).isEmpty)
        let line = try #require(Self.revocationLines(gw).last)
        #expect(line["user_id"]?.stringValue == userID && line["revoked"]?.intValue == 3 && line["admin_ip"]?.stringValue == "127.0.0.1")
        #expect(line["level"]?.stringValue == "notice")
        // Again: nothing left, 0.
        let again = try Self.admin(gw, "DELETE", "/admin/users/\(userID)/sessions")
        #expect(again.json == .object([("data", .object([("revoked", .int(0))]))]), "\(again.text)")
        let unknown = try Self.admin(gw, "DELETE", "/admin/users/no-such-user/sessions")
        #expect(unknown.status == 200 && unknown.json?["data"]?["revoked"]?.intValue == 0)
    }

    /// Each route without the token (401), with a wrong one (401) and with none configured (403
    /// `admin_disabled`): nothing is listed or revoked.
    @Test(arguments: Store.allCases)
    func everyRouteNeedsTheAdminToken(_ kind: Store) throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        for configured in [Self.adminToken, ""] {
            let gw = try Self.gateway(try kind.make(in: configured.isEmpty ? dir.appendingPathComponent("off") : dir),
                                      token: configured)
            defer { gw.stop() }
            let session = try Self.login(gw)
            let userID = try #require(gw.standIn.userID(email: "x@y.com"))
            let routes = [("GET", "/admin/sessions?user=x@y.com"), ("DELETE", "/admin/sessions/" + String(repeating: "A", count: 15)),
                          ("DELETE", "/admin/users/\(userID)/sessions")]
            for (method, target) in routes {
                for token in [nil, "wrong-admin-token-0123456789"] as [String?] {
                    let r = try Self.admin(gw, method, target, token: token)
                    if configured.isEmpty {
                        #expect(r.status == 403 && r.json?["code"]?.stringValue == "admin_disabled", "\(target): \(r.text)")
                    } else {
                        #expect(r.status == 401 && r.json?["code"]?.stringValue == "unauthorized", "\(target): \(r.text)")
                    }
                    #expect(r.json?["data"] == nil)
                }
            }
            #expect(try gw.client().json("GET", "/api/v1/user/me", token: session.token).status == 200)
            #expect(Self.revocationLines(gw).isEmpty)
            if !configured.isEmpty {
                // The same calls with the token.
                #expect(try Self.admin(gw, "GET", "/admin/sessions?user=x@y.com").status == 200)
                #expect(try Self.admin(gw, "DELETE", "/admin/users/\(userID)/sessions").status == 200)
                #expect(try gw.client().json("GET", "/api/v1/user/me", token: session.token).status == 401)
            }
        }
    }

    /// `POSTERN_LOG_LEVEL=notice` keeps the revocation lines without the request lines; `warning` drops both.
    @Test func theNoticeLevelKeepsRevocationsWithoutRequestLines() throws {
        for (level, expected) in [("notice", 1), ("warning", 0)] {
            let gw = try TestGateway { config in
                config.admin.token = Self.adminToken
                config.logLevel = level
            }
            defer { gw.stop() }
            _ = try Self.login(gw)
            let userID = try #require(gw.standIn.userID(email: "x@y.com"))
            #expect(try Self.admin(gw, "DELETE", "/admin/users/\(userID)/sessions").status == 200)
            #expect(Self.revocationLines(gw).count == expected, "\(level)")
            #expect(!gw.logLines.all.contains { $0.contains(#""msg":"request""#) }, "\(level)")
        }
    }

    /// A session file of schema version 3 (before IP and user agent): its session authenticates, refreshes,
    /// is listed with "" for both and can be revoked; a new sign-in into the same file keeps them.
    @Test func anOldSQLiteFileKeepsWorkingThroughTheGateway() throws {
        let dir = try sessionTestDirectory()
        defer { try? FileManager.default.removeItem(at: dir) }
        let path = dir.appendingPathComponent("v3.db").path
        let oldToken = "pst_old-session-token-0123456789"
        try SessionListingStoreTests.writeVersion3File(path, rows: [("old-id-12345", Crypto.sha256Hex(oldToken), "u-old", "old@example.com")])
        let gw = try TestGateway { config in
            config.admin.token = Self.adminToken
            config.sessions.store = "sqlite:" + path
        }
        defer { gw.stop() }
        #expect(try gw.client().json("GET", "/api/v1/user/me", token: oldToken).status == 200)
        let listed = try Self.list(gw, "u-old")
        #expect(listed.map { $0["client_ip"]?.stringValue } == [""] && listed.map { $0["user_agent"]?.stringValue } == [""])
        let refreshed = try gw.client().json("POST", "/api/v1/user/refresh", #"{"refreshToken":"psr_old-old-id-12345"}"#)
        #expect(refreshed.status == 200, "\(refreshed.text)")
        let newToken = try #require(refreshed.json?["user"]?["token"]?.stringValue)
        #expect(try gw.client().json("GET", "/api/v1/user/me", token: newToken).status == 200)
        #expect(try gw.client().json("GET", "/api/v1/user/me", token: oldToken).status == 401)
        #expect(try Self.list(gw, "old@example.com").map { $0["id"]?.stringValue } == ["old-id-12345"])
        // A new sign-in into the migrated file.
        _ = try Self.login(gw, headers: ["User-Agent": "new-client"])
        #expect(try Self.list(gw, "x@y.com").map { $0["user_agent"]?.stringValue } == ["new-client"])
        #expect(try Self.admin(gw, "DELETE", "/admin/sessions/old-id-1234").status == 200)
        #expect(try gw.client().json("GET", "/api/v1/user/me", token: newToken).status == 401)
    }
}
