import DirectusStandIn
import Foundation
@testable import PosternCore
import Testing
import PosternTesting
import PosternHTTP

/// One answer of the stand-in, with its body parsed when it is JSON.
private struct Answer {
    let response: HTTPResponse
    var status: Int { response.status }
    var json: JSONValue? { try? JSONValue.parse(response.body) }
    var data: JSONValue? { json?["data"] }
    var code: String? { json?["errors"]?.arrayValue?.first?["extensions"]?["code"]?.stringValue }
    var message: String? { json?["errors"]?.arrayValue?.first?["message"]?.stringValue }
    var extensions: JSONValue? { json?["errors"]?.arrayValue?.first?["extensions"] }
}

extension DirectusStandIn {
    /// Sends one request the way a JSON client would.
    fileprivate func call(_ method: HTTPMethod, _ target: String, _ body: String? = nil, token: String? = nil,
                          headers extra: [(String, String)] = []) -> Answer {
        var headers = HTTPHeaders()
        if let body, !body.isEmpty { headers.add("Content-Type", "application/json") }
        if let token { headers.add("Authorization", "Bearer \(token)") }
        for (name, value) in extra { headers.add(name, value) }
        return Answer(response: handle(HTTPRequest(method: method, target: target, headers: headers,
                                                   body: Data((body ?? "").utf8))))
    }

    /// Logs in and returns the access and refresh tokens.
    fileprivate func login(_ email: String = "x@y.com", _ password: String = "123456") -> (access: String, refresh: String) {
        let answer = call(.post, "/auth/login", #"{"email":"\#(email)","password":"\#(password)"}"#)
        return (answer.data?["access_token"]?.stringValue ?? "", answer.data?["refresh_token"]?.stringValue ?? "")
    }
}

/// The claims of a JWT, decoded without checking it.
private func claims(_ token: String) -> JSONValue? {
    let parts = token.split(separator: ".")
    guard parts.count == 3 else { return nil }
    var text = parts[1].replacingOccurrences(of: "-", with: "+").replacingOccurrences(of: "_", with: "/")
    while text.count % 4 != 0 { text += "=" }
    return Data(base64Encoded: text).flatMap { try? JSONValue.parse($0) }
}

@Suite struct DirectusStandInTests {
    // MARK: - Login

    @Test func loginReturnsDirectusTokenShape() throws {
        let standIn = DirectusStandIn()
        let answer = standIn.call(.post, "/auth/login", #"{"email":"X@Y.com","password":"123456"}"#)
        #expect(answer.status == 200)
        #expect(answer.response.headers["Content-Type"] == "application/json; charset=utf-8")
        let data = try #require(answer.data)
        #expect(data["expires"] == .int(900_000))
        let refresh = try #require(data["refresh_token"]?.stringValue)
        #expect(refresh.count == 64)
        #expect(refresh.allSatisfy { $0.isASCII && ($0.isLetter || $0.isNumber || $0 == "_" || $0 == "-") })
        let access = try #require(data["access_token"]?.stringValue)
        let payload = try #require(claims(access))
        #expect(payload["id"]?.stringValue == standIn.userID(email: "x@y.com"))
        #expect(payload["role"]?.stringValue == DirectusStandIn.appUserRoleID)
        #expect(payload["app_access"] == .bool(false))
        #expect(payload["admin_access"] == .bool(false))
        #expect(payload["iss"]?.stringValue == "directus")
        let iat = try #require(payload["iat"]?.intValue)
        #expect(payload["exp"]?.intValue == iat + 900)
    }

    @Test func adminTokenHasAdminAccess() throws {
        let standIn = DirectusStandIn()
        let token = standIn.login("admin@example.com", "admin-password").access
        #expect(claims(token)?["admin_access"] == .bool(true))
    }

    @Test(arguments: [
        (#"{"password":"123456"}"#, 400, "INVALID_PAYLOAD", #"Invalid payload. "email" is required."#),
        (#"{"email":"x@app.test","password":"123456"}"#, 400, "INVALID_PAYLOAD", #"Invalid payload. "email" must be a valid email."#),
        (#"{"email":"x@y.com"}"#, 400, "INVALID_PAYLOAD", #"Invalid payload. "password" is required."#),
        (#"{"email":"x@y.com","password":"123456","mode":"jwt"}"#, 400, "INVALID_PAYLOAD",
         #"Invalid payload. "mode" must be one of [cookie, json, session]."#),
        (#"{"email":"x@y.com","password":"wrong"}"#, 401, "INVALID_CREDENTIALS", "Invalid user credentials."),
        (#"{"email":"nobody@y.com","password":"123456"}"#, 401, "INVALID_CREDENTIALS", "Invalid user credentials."),
    ])
    func loginErrors(body: String, status: Int, code: String, message: String) {
        let answer = DirectusStandIn().call(.post, "/auth/login", body)
        #expect(answer.status == status)
        #expect(answer.code == code)
        #expect(answer.message == message)
    }

    @Test func loginErrorCarriesJoiReason() {
        let answer = DirectusStandIn().call(.post, "/auth/login", #"{"password":"x"}"#)
        #expect(answer.extensions?["reason"]?.stringValue == #""email" is required"#)
    }

    @Test(arguments: ["{not json", "42", "[1,2]"])
    func malformedLoginBodyIsInvalidPayload(body: String) {
        let answer = DirectusStandIn().call(.post, "/auth/login", body)
        #expect(answer.status == 400)
        #expect(answer.code == "INVALID_PAYLOAD")
    }

    @Test func suspendedUserGetsInvalidCredentials() {
        let standIn = DirectusStandIn()
        standIn.setStatus(email: "x@y.com", "suspended")
        #expect(standIn.call(.post, "/auth/login", #"{"email":"x@y.com","password":"123456"}"#).code == "INVALID_CREDENTIALS")
    }

    // MARK: - Token checks

    @Test func expiredAccessTokenIsRefusedEverywhereButPing() {
        let standIn = DirectusStandIn()
        let (access, refresh) = standIn.login()
        #expect(standIn.call(.get, "/users/me", token: access).status == 200)
        standIn.expireAllAccessTokens()
        let me = standIn.call(.get, "/users/me", token: access)
        #expect(me.status == 401)
        #expect(me.code == "TOKEN_EXPIRED")
        #expect(me.message == "Token expired.")
        #expect(standIn.call(.get, "/items/posts", token: access).code == "TOKEN_EXPIRED")
        #expect(standIn.call(.get, "/server/ping", token: access).status == 200)
        // A stale bearer sent along with /auth/refresh makes the refresh fail.
        let stale = standIn.call(.post, "/auth/refresh", #"{"refresh_token":"\#(refresh)"}"#, token: access)
        #expect(stale.status == 401)
        #expect(stale.code == "TOKEN_EXPIRED")
        #expect(standIn.refreshCount == 0)
        let fresh = standIn.call(.post, "/auth/refresh", #"{"refresh_token":"\#(refresh)"}"#)
        #expect(fresh.status == 200)
        let newAccess = fresh.data?["access_token"]?.stringValue ?? ""
        #expect(standIn.call(.get, "/users/me", token: newAccess).status == 200)
    }

    @Test func injectedClockExpiresTokens() {
        let standIn = DirectusStandIn()
        let clock = TestClock(date: Date(timeIntervalSince1970: 1_746_094_830))  // 2025-05-01T10:20:30Z
        standIn.now = { clock.now }
        let access = standIn.login().access
        clock.advance(899)
        #expect(standIn.call(.get, "/users/me", token: access).status == 200)
        clock.advance(2)
        #expect(standIn.call(.get, "/users/me", token: access).code == "TOKEN_EXPIRED")
    }

    @Test func badTokensAreRefusedWithDirectusCodes() {
        let standIn = DirectusStandIn()
        let access = standIn.login().access
        let tampered = String(access.dropLast(2)) + (access.hasSuffix("AA") ? "BB" : "AA")
        #expect(standIn.call(.get, "/users/me", token: tampered).status == 403)
        #expect(standIn.call(.get, "/users/me", token: tampered).code == "INVALID_TOKEN")
        let foreign = DirectusStandIn(options: .init(secret: "another secret")).login().access
        #expect(standIn.call(.get, "/items/posts", token: foreign).code == "INVALID_TOKEN")
        let random = standIn.call(.get, "/items/posts", token: "not-a-jwt")
        #expect(random.status == 401)
        #expect(random.code == "INVALID_CREDENTIALS")
    }

    @Test func tokenTransportRules() {
        let standIn = DirectusStandIn()
        let access = standIn.login().access
        #expect(standIn.call(.get, "/users/me", headers: [("Authorization", "bEaReR \(access)")]).status == 200)
        #expect(standIn.call(.get, "/users/me?access_token=\(access)").status == 200)
        // Three parts: the header is ignored and the caller is anonymous.
        let ignored = standIn.call(.get, "/users/me", headers: [("Authorization", "Bearer \(access) extra")])
        #expect(ignored.status == 401)
        #expect(ignored.code == "INVALID_CREDENTIALS")
        let both = standIn.call(.get, "/users/me?access_token=\(access)", token: access)
        #expect(both.status == 400)
        #expect(both.code == "INVALID_PAYLOAD")
    }

    // MARK: - Refresh and logout

    @Test func refreshRotatesAndRefusesReuse() throws {
        let standIn = DirectusStandIn()
        let (_, refresh) = standIn.login()
        let first = standIn.call(.post, "/auth/refresh", #"{"refresh_token":"\#(refresh)","mode":"json"}"#)
        #expect(first.status == 200)
        #expect(first.data?["expires"] == .int(900_000))
        let rotated = try #require(first.data?["refresh_token"]?.stringValue)
        #expect(rotated != refresh)
        #expect(rotated.count == 64)
        let reuse = standIn.call(.post, "/auth/refresh", #"{"refresh_token":"\#(refresh)"}"#)
        #expect(reuse.status == 401)
        #expect(reuse.code == "INVALID_CREDENTIALS")
        #expect(standIn.call(.post, "/auth/refresh", #"{"refresh_token":"\#(rotated)"}"#).status == 200)
        #expect(standIn.refreshCount == 2)
    }

    @Test func refreshErrors() {
        let standIn = DirectusStandIn()
        let missing = standIn.call(.post, "/auth/refresh", "{}")
        #expect(missing.status == 400)
        #expect(missing.code == "INVALID_PAYLOAD")
        #expect(standIn.call(.post, "/auth/refresh").status == 400)
        #expect(standIn.call(.post, "/auth/refresh", #"{"refresh_token":"unknown"}"#).code == "INVALID_CREDENTIALS")
        #expect(standIn.refreshCount == 0)
    }

    @Test func refreshTokenExpires() {
        let standIn = DirectusStandIn()
        let clock = TestClock(date: Date(timeIntervalSince1970: 1_746_094_830))  // 2025-05-01T10:20:30Z
        standIn.now = { clock.now }
        let refresh = standIn.login().refresh
        clock.advance(7 * 24 * 3600 + 1)
        #expect(standIn.call(.post, "/auth/refresh", #"{"refresh_token":"\#(refresh)"}"#).status == 401)
    }

    @Test func logoutKillsTheRefreshTokenButNotTheAccessToken() {
        let standIn = DirectusStandIn()
        let (access, refresh) = standIn.login()
        let logout = standIn.call(.post, "/auth/logout", #"{"refresh_token":"\#(refresh)"}"#)
        #expect(logout.status == 204)
        #expect(logout.response.body.isEmpty)
        #expect(standIn.call(.post, "/auth/refresh", #"{"refresh_token":"\#(refresh)"}"#).code == "INVALID_CREDENTIALS")
        #expect(standIn.call(.get, "/users/me", token: access).status == 200)
        #expect(standIn.call(.post, "/auth/logout", #"{"refresh_token":"unknown"}"#).status == 204)
        #expect(standIn.call(.post, "/auth/logout", "{}").code == "INVALID_PAYLOAD")
    }

    @Test func cookieModeSetsTheRefreshCookie() throws {
        let standIn = DirectusStandIn()
        let answer = standIn.call(.post, "/auth/login", #"{"email":"x@y.com","password":"123456","mode":"cookie"}"#)
        #expect(answer.status == 200)
        #expect(answer.data?["refresh_token"] == nil)
        let cookie = try #require(answer.response.headers["Set-Cookie"])
        #expect(cookie.hasPrefix("directus_refresh_token="))
        let token = String(cookie.dropFirst("directus_refresh_token=".count).prefix { $0 != ";" })
        let refreshed = standIn.call(.post, "/auth/refresh", "{}", headers: [("Cookie", "directus_refresh_token=\(token)")])
        #expect(refreshed.status == 200)
    }

    // MARK: - Users

    @Test func publicCreateUserThenLogin() {
        let standIn = DirectusStandIn()
        let created = standIn.call(.post, "/users", #"{"email":"new@example.com","password":"pw123456"}"#)
        #expect(created.status == 204)
        #expect(standIn.userID(email: "NEW@example.com") != nil)
        let access = standIn.login("new@example.com", "pw123456").access
        let me = standIn.call(.get, "/users/me", token: access)
        #expect(me.data?["email"]?.stringValue == "new@example.com")
        #expect(me.data?["role"]?.stringValue == DirectusStandIn.appUserRoleID)
    }

    @Test func publicCreateUserErrors() {
        let standIn = DirectusStandIn()
        let duplicate = standIn.call(.post, "/users", #"{"email":"X@Y.com","password":"pw"}"#)
        #expect(duplicate.status == 400)
        #expect(duplicate.code == "RECORD_NOT_UNIQUE")
        #expect(duplicate.extensions?["collection"]?.stringValue == "directus_users")
        #expect(duplicate.extensions?["field"]?.stringValue == "email")
        #expect(duplicate.extensions?["value"]?.stringValue == "[X@Y.com]")
        let role = standIn.call(.post, "/users", #"{"email":"r@example.com","password":"pw","role":"x"}"#)
        #expect(role.status == 403)
        #expect(role.code == "FORBIDDEN")
        let invalid = standIn.call(.post, "/users", #"{"email":"not-an-email","password":"pw"}"#)
        #expect(invalid.status == 400)
        #expect(invalid.code == "FAILED_VALIDATION")
        let closed = DirectusStandIn(options: .init(publicUserCreate: false))
        #expect(closed.call(.post, "/users", #"{"email":"c@example.com","password":"pw"}"#).code == "FORBIDDEN")
    }

    @Test func registerIsSilentForTakenEmails() {
        let standIn = DirectusStandIn()
        #expect(standIn.call(.post, "/users/register", #"{"email":"reg@example.com","password":"pw1","first_name":"R"}"#).status == 204)
        #expect(!standIn.login("reg@example.com", "pw1").access.isEmpty)
        // Taken: still 204, and nothing changes.
        #expect(standIn.call(.post, "/users/register", #"{"email":"x@y.com","password":"other"}"#).status == 204)
        #expect(standIn.login("x@y.com", "other").access.isEmpty)
        #expect(!standIn.login().access.isEmpty)
    }

    @Test(arguments: [
        (#"{"email":"a@example.com","password":"pw","role":"x"}"#, 400, "INVALID_PAYLOAD"),
        (#"{"email":"a@example.com"}"#, 400, "INVALID_PAYLOAD"),
        (#"{"password":"pw"}"#, 400, "INVALID_PAYLOAD"),
    ])
    func registerValidation(body: String, status: Int, code: String) {
        let answer = DirectusStandIn().call(.post, "/users/register", body)
        #expect(answer.status == status)
        #expect(answer.code == code)
    }

    @Test func registerClosedIsForbidden() {
        let standIn = DirectusStandIn(options: .init(publicRegistration: false))
        let answer = standIn.call(.post, "/users/register", #"{"email":"a@example.com","password":"pw"}"#)
        #expect(answer.status == 403)
        #expect(answer.code == "FORBIDDEN")
    }

    @Test func meNeedsAUser() throws {
        let standIn = DirectusStandIn()
        let anonymous = standIn.call(.get, "/users/me")
        #expect(anonymous.status == 401)
        #expect(anonymous.code == "INVALID_CREDENTIALS")
        let me = try #require(standIn.call(.get, "/users/me", token: standIn.login().access).data)
        #expect(me["id"]?.stringValue == standIn.userID(email: "x@y.com"))
        #expect(me["email"]?.stringValue == "x@y.com")
        #expect(me["first_name"] == .string("Ada"))
        #expect(me["last_name"] == .string("Lovelace"))
    }

    // MARK: - Items

    @Test(arguments: [
        (HTTPMethod.get, "/items/posts"), (.get, "/items/posts/1"), (.post, "/items/posts"),
        (.patch, "/items/posts/1"), (.delete, "/items/posts/1"),
    ])
    func anonymousIsForbiddenOnPosts(method: HTTPMethod, path: String) {
        let answer = DirectusStandIn().call(method, path, #"{"title":"x"}"#)
        #expect(answer.status == 403)
        #expect(answer.code == "FORBIDDEN")
    }

    @Test func createSetsSystemFields() throws {
        let standIn = DirectusStandIn()
        let clock = TestClock(date: Date(timeIntervalSince1970: 1_746_094_830))  // 2025-05-01T10:20:30Z
        standIn.now = { clock.now }
        let access = standIn.login("second@example.com", "password2").access
        let answer = standIn.call(.post, "/items/posts", #"{"title":"New","content":"Body"}"#, token: access)
        #expect(answer.status == 200)
        let item = try #require(answer.data)
        #expect(item["title"]?.stringValue == "New")
        #expect(item["content"]?.stringValue == "Body")
        #expect(item["id"]?.intValue == 6)
        #expect(item["user_created"]?.stringValue == standIn.userID(email: "second@example.com"))
        #expect(item["date_created"]?.stringValue == "2025-05-01T10:20:30.000Z")
        #expect(item["user_updated"] == .null)
        #expect(item["date_updated"] == .null)
        #expect(standIn.posts().count == 6)
    }

    @Test func createValidation() {
        let standIn = DirectusStandIn()
        let access = standIn.login().access
        let missing = standIn.call(.post, "/items/posts", #"{"content":"no title"}"#, token: access)
        #expect(missing.status == 400)
        #expect(missing.code == "FAILED_VALIDATION")
        #expect(missing.extensions?["field"]?.stringValue == "title")
        #expect(missing.extensions?["type"]?.stringValue == "required")
        #expect(missing.extensions?["path"] == .array([]))
        let null = standIn.call(.post, "/items/posts", #"{"title":null}"#, token: access)
        #expect(null.extensions?["type"]?.stringValue == "nnull")
        let owner = standIn.call(.post, "/items/posts", #"{"title":"t","user_created":"someone"}"#, token: access)
        #expect(owner.status == 403)
        #expect(owner.code == "FORBIDDEN")
        #expect(standIn.posts().count == 5)
    }

    @Test func createManyReturnsAnArray() {
        let standIn = DirectusStandIn()
        let answer = standIn.call(.post, "/items/posts", #"[{"title":"a"},{"title":"b"}]"#, token: standIn.login().access)
        #expect(answer.status == 200)
        #expect(answer.data?.arrayValue?.count == 2)
    }

    @Test func adminCreateOverwritesSystemFields() {
        let standIn = DirectusStandIn()
        let answer = standIn.call(.post, "/items/posts", #"{"title":"t","user_created":"someone"}"#,
                                  token: standIn.login("admin@example.com", "admin-password").access)
        #expect(answer.status == 200)
        #expect(answer.data?["user_created"]?.stringValue == standIn.userID(email: "admin@example.com"))
    }

    @Test func ownerMayUpdateAndDelete() throws {
        let standIn = DirectusStandIn()
        let access = standIn.login().access
        let patched = standIn.call(.patch, "/items/posts/1", #"{"title":"Edited"}"#, token: access)
        #expect(patched.status == 200)
        #expect(patched.data?["title"]?.stringValue == "Edited")
        #expect(patched.data?["content"]?.stringValue == "The first post of the tutorial.")
        #expect(patched.data?["user_updated"]?.stringValue == standIn.userID(email: "x@y.com"))
        #expect(patched.data?["date_updated"]?.stringValue != nil)
        let deleted = standIn.call(.delete, "/items/posts/1", token: access)
        #expect(deleted.status == 204)
        #expect(deleted.response.body.isEmpty)
        #expect(!standIn.posts().contains { $0["id"] == .int(1) })
        #expect(standIn.call(.get, "/items/posts/1", token: access).status == 403)
    }

    @Test(arguments: ["4", "999", "abc"])
    func foreignAndMissingItemsAreForbidden(id: String) {
        let standIn = DirectusStandIn()
        let access = standIn.login().access
        let patch = standIn.call(.patch, "/items/posts/\(id)", #"{"title":"Mine now"}"#, token: access)
        #expect(patch.status == 403)
        #expect(patch.code == "FORBIDDEN")
        #expect(patch.message == #"You don't have permissions to perform "update" for the field(s) "title" in collection "posts" or it does not exist."#)
        let delete = standIn.call(.delete, "/items/posts/\(id)", token: access)
        #expect(delete.status == 403)
        #expect(delete.message == #"You don't have permission to perform "delete" for collection "posts" or it does not exist."#)
        #expect(standIn.posts().count == 5)
        #expect(standIn.posts().first { $0["id"] == .int(4) }?["title"]?.stringValue == "A post by someone else")
    }

    @Test func readOneAndMissingOne() {
        let standIn = DirectusStandIn()
        let access = standIn.login().access
        let found = standIn.call(.get, "/items/posts/4", token: access)
        #expect(found.status == 200)
        #expect(found.data?["user_created"]?.stringValue == standIn.userID(email: "second@example.com"))
        for id in ["999", "abc"] {
            let missing = standIn.call(.get, "/items/posts/\(id)", token: access)
            #expect(missing.status == 403)
            #expect(missing.message == "You don't have permission to access this.")
        }
    }

    @Test func ownPatchWithForeignFieldIsForbidden() {
        let standIn = DirectusStandIn()
        let answer = standIn.call(.patch, "/items/posts/1", #"{"user_created":"x"}"#, token: standIn.login().access)
        #expect(answer.status == 403)
        #expect(answer.code == "FORBIDDEN")
    }

    @Test func adminPatchOfMissingIdIs204() {
        let standIn = DirectusStandIn()
        let admin = standIn.login("admin@example.com", "admin-password").access
        #expect(standIn.call(.patch, "/items/posts/999", #"{"title":"x"}"#, token: admin).status == 204)
        #expect(standIn.call(.patch, "/items/posts/4", #"{"title":"x"}"#, token: admin).status == 200)
    }

    @Test func routeQuirks() {
        let standIn = DirectusStandIn()
        let access = standIn.login().access
        let put = standIn.call(.put, "/items/posts/1", #"{"title":"x"}"#, token: access)
        #expect(put.status == 404)
        #expect(put.code == "ROUTE_NOT_FOUND")
        #expect(standIn.call(.get, "/items/secrets", token: access).status == 403)
        #expect(standIn.call(.get, "/items/directus_users", token: access).code == "FORBIDDEN")
        #expect(standIn.call(.get, "/items/posts/", token: access).status == 200)
        let unknown = standIn.call(.get, "/nope/here")
        #expect(unknown.status == 404)
        #expect(unknown.message == "Route /nope/here doesn't exist.")
        #expect(unknown.extensions?["path"]?.stringValue == "/nope/here")
    }

    // MARK: - List queries

    private func ids(_ answer: Answer) -> [Int64] {
        answer.data?.arrayValue?.compactMap { $0["id"]?.intValue } ?? []
    }

    @Test func listDefaultsAndPaging() {
        let standIn = DirectusStandIn()
        let access = standIn.login().access
        let all = standIn.call(.get, "/items/posts", token: access)
        #expect(all.status == 200)
        #expect(ids(all) == [1, 2, 3, 4, 5])
        #expect(all.json?["meta"] == nil)
        #expect(ids(standIn.call(.get, "/items/posts?limit=2", token: access)) == [1, 2])
        #expect(ids(standIn.call(.get, "/items/posts?limit=2&page=2", token: access)) == [3, 4])
        #expect(ids(standIn.call(.get, "/items/posts?limit=2&offset=3", token: access)) == [4, 5])
        #expect(ids(standIn.call(.get, "/items/posts?limit=-1", token: access)).count == 5)
        #expect(ids(standIn.call(.get, "/items/posts?sort=-id", token: access)) == [5, 4, 3, 2, 1])
        #expect(ids(standIn.call(.get, "/items/posts?sort=user_created,-date_created&limit=-1", token: access)).count == 5)
    }

    @Test func defaultLimitIsOneHundred() {
        let standIn = DirectusStandIn(options: .init(seed: false))
        let admin = standIn.login("admin@example.com", "admin-password").access
        let many = (1...150).map { #"{"title":"p\#($0)"}"# }.joined(separator: ",")
        #expect(standIn.call(.post, "/items/posts", "[\(many)]", token: admin).status == 200)
        #expect(ids(standIn.call(.get, "/items/posts", token: admin)).count == 100)
        #expect(ids(standIn.call(.get, "/items/posts?limit=-1", token: admin)).count == 150)
    }

    @Test(arguments: ["limit=abc", "limit=1.5", "limit=-2", "offset=-1", "page=x", "meta=everything",
                      "filter=%7Bbroken"])
    func badQueryValuesAreInvalidQuery(query: String) {
        let standIn = DirectusStandIn()
        let answer = standIn.call(.get, "/items/posts?\(query)", token: standIn.login().access)
        #expect(answer.status == 400)
        #expect(answer.code == "INVALID_QUERY")
    }

    @Test(arguments: ["fields=id,secret", "sort=-secret", "filter[secret][_eq]=1",
                      "filter=%7B%22secret%22%3A%7B%22_eq%22%3A1%7D%7D", "fields=user_created.password"])
    func unknownFieldsAreForbidden(query: String) {
        let standIn = DirectusStandIn()
        let answer = standIn.call(.get, "/items/posts?\(query)", token: standIn.login().access)
        #expect(answer.status == 403)
        #expect(answer.code == "FORBIDDEN")
    }

    @Test func fieldsSelectKeys() throws {
        let standIn = DirectusStandIn()
        let answer = standIn.call(.get, "/items/posts?fields=title,id&limit=1", token: standIn.login().access)
        let first = try #require(answer.data?.arrayValue?.first)
        #expect(first.objectValue?.map(\.0) == ["title", "id"])
        #expect(first == .object([("title", .string("Hello, world")), ("id", .int(1))]))
        let null = standIn.call(.get, "/items/posts/3?fields=content", token: standIn.login().access)
        #expect(null.data == .object([("content", .null)]))
    }

    @Test func adminMayExpandTheCreator() throws {
        let standIn = DirectusStandIn()
        let admin = standIn.login("admin@example.com", "admin-password").access
        let answer = standIn.call(.get, "/items/posts/1?fields=id,user_created.email", token: admin)
        #expect(answer.data?["user_created"]?["email"]?.stringValue == "x@y.com")
    }

    @Test(arguments: [
        ("filter[title][_eq]=Another%20one", [Int64(5)]),
        ("filter=%7B%22title%22%3A%7B%22_contains%22%3A%22post%22%7D%7D", [4]),
        ("filter[content][_icontains]=DIRECTUS", [5]),
        ("filter[id][_in]=2,4", [2, 4]),
        ("filter[id][_neq]=1&limit=2", [2, 3]),
        ("filter[content][_null]=true", [3]),
        ("filter[_or][0][id][_eq]=1&filter[_or][1][id][_gte]=5", [1, 5]),
        ("search=SWIFT", [2]),
        ("search=3", [3]),
    ])
    func filtersAndSearch(query: String, expected: [Int64]) {
        let standIn = DirectusStandIn()
        #expect(ids(standIn.call(.get, "/items/posts?\(query)", token: standIn.login().access)) == expected)
    }

    @Test func filterByCurrentUser() {
        let standIn = DirectusStandIn()
        let access = standIn.login("second@example.com", "password2").access
        #expect(ids(standIn.call(.get, "/items/posts?filter[user_created][_eq]=$CURRENT_USER", token: access)) == [4, 5])
    }

    @Test func emptyStringFilterIsInvalidQuery() {
        let standIn = DirectusStandIn()
        let answer = standIn.call(.get, "/items/posts?filter[title][_eq]=", token: standIn.login().access)
        #expect(answer.code == "INVALID_QUERY")
    }

    @Test(arguments: [
        ("meta=*", Int64?(5), Int64?(2)),
        ("meta=filter_count", nil, 2),
        ("meta=total_count,filter_count", 5, 2),
        ("meta[]=total_count", 5, nil),
    ])
    func metaCounts(meta: String, total: Int64?, filtered: Int64?) throws {
        let standIn = DirectusStandIn()
        let answer = standIn.call(.get, "/items/posts?\(meta)&filter[user_created][_eq]=\(standIn.userID(email: "second@example.com") ?? "")&limit=1",
                                  token: standIn.login().access)
        #expect(answer.status == 200)
        let json = try #require(answer.json?["meta"])
        #expect(json["total_count"]?.intValue == total)
        #expect(json["filter_count"]?.intValue == filtered)
        #expect(ids(answer).count == 1)
    }

    // MARK: - Server routes and bookkeeping

    @Test func pingAndHealth() {
        let standIn = DirectusStandIn()
        let ping = standIn.call(.get, "/server/ping", token: "garbage")
        #expect(ping.status == 200)
        #expect(String(decoding: ping.response.body, as: UTF8.self) == "pong")
        #expect(ping.response.headers["Content-Type"]?.hasPrefix("text/html") == true)
        let health = standIn.call(.get, "/server/health")
        #expect(health.status == 200)
        #expect(health.response.headers["Content-Type"] == "application/health+json; charset=utf-8")
        #expect(health.json == .object([("status", .string("ok"))]))
        #expect(standIn.call(.get, "/server/health", token: "garbage").code == "INVALID_CREDENTIALS")
        #expect(standIn.call(.get, "/server/info").data?["version"]?.stringValue == "11.14.1")
    }

    @Test func recordsEveryRequest() {
        let standIn = DirectusStandIn()
        _ = standIn.call(.get, "/server/ping")
        _ = standIn.call(.post, "/auth/login", #"{"email":"x@y.com","password":"123456"}"#)
        #expect(standIn.received.map(\.path) == ["/server/ping", "/auth/login"])
        #expect(standIn.received.last?.headers["Content-Type"] == "application/json")
        standIn.clearReceived()
        #expect(standIn.received.isEmpty)
    }

    @Test func concurrentCreatesGetDistinctIDs() {
        let standIn = DirectusStandIn()
        let access = standIn.login().access
        DispatchQueue.concurrentPerform(iterations: 200) { i in
            _ = standIn.call(.post, "/items/posts", #"{"title":"c\#(i)"}"#, token: access)
            _ = standIn.call(.get, "/items/posts?limit=5", token: access)
        }
        let ids = standIn.posts().compactMap { $0["id"]?.intValue }
        #expect(ids.count == 205)
        #expect(Set(ids).count == 205)
        #expect(ids == ids.sorted())
    }
}
