import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP

@Suite struct UserRouteTests {
    @Test func loginAcceptsUsernameForEmail() async throws {
        let gw = InProcessGateway()
        let a = await gw.send(.post, "/api/v1/user/login", #"{"username":"x@y.com","password":"123456"}"#)
        #expect(a.status == 200)
        #expect(a.json?["user"]?["email"] == .string("x@y.com"))
    }

    @Test(arguments: [
        (#"{"email":"x@y.com","password":"nope"}"#, 401, "invalid_credentials"),
        (#"{"email":"nobody@example.com","password":"123456"}"#, 401, "invalid_credentials"),
        (#"{"email":"x@y.com"}"#, 400, "invalid_request"),
        (#"{"password":"123456"}"#, 400, "invalid_request"),
        (#"{"email":5,"password":"123456"}"#, 400, "invalid_request"),
        (#"["x@y.com"]"#, 400, "invalid_request"),
        ("not json", 400, "invalid_request"),
        ("", 400, "invalid_request"),
    ])
    func loginErrors(body: String, status: Int, code: String) async {
        let gw = InProcessGateway()
        let a = await gw.send(.post, "/api/v1/user/login", body)
        #expect(a.status == status)
        #expect(a.code == code)
        #expect(a.json?["request_id"]?.stringValue?.isEmpty == false)
        if status == 400 {
            // Rejected before any call to Directus.
            #expect(gw.standIn.received.filter { $0.path == "/auth/login" }.isEmpty)
        }
    }

    @Test func meAnswersTheSignedInUser() async throws {
        let gw = InProcessGateway()
        let token = try await gw.login()
        let a = await gw.send(.get, "/api/v1/user/me", token: token)
        #expect(a.status == 200)
        #expect(a.json?["user"]?["email"] == .string("x@y.com"))
        #expect(a.json?["user"]?["id"]?.stringValue == gw.standIn.userID(email: "x@y.com"))
    }

    @Test func logoutKillsTheTokenAndLogsOutUpstream() async throws {
        let gw = InProcessGateway()
        let token = try await gw.login()
        let out = await gw.send(.post, "/api/v1/user/logout", token: token)
        #expect(out.status == 204)
        #expect(out.response.body.isEmpty)
        let after = await gw.send(.get, "/api/v1/books", token: token)
        #expect(after.status == 401)
        #expect(after.response.headers["WWW-Authenticate"] == #"Bearer error="invalid_token""#)
        let logout = gw.standIn.received.filter { $0.path == "/auth/logout" }
        #expect(logout.count == 1)
        #expect(logout.first?.headers["Authorization"] == nil)
        let logoutBody = String(decoding: logout.first?.body ?? Data(), as: UTF8.self)
        #expect(logoutBody.contains("refresh_token"))
    }

    @Test func refreshRotatesAndReuseRevokesTheSession() async throws {
        let gw = InProcessGateway()
        let login = await gw.send(.post, "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#)
        let token1 = try #require(login.json?["user"]?["token"]?.stringValue)
        let refresh1 = try #require(login.json?["data"]?["refreshToken"]?.stringValue)

        let r = await gw.send(.post, "/api/v1/user/refresh", #"{"refreshToken":"\#(refresh1)"}"#)
        #expect(r.status == 200)
        let token2 = try #require(r.json?["user"]?["token"]?.stringValue)
        let refresh2 = try #require(r.json?["data"]?["refreshToken"]?.stringValue)
        #expect(token2 != token1 && refresh2 != refresh1)
        #expect(await gw.send(.get, "/api/v1/books", token: token1).status == 401)
        #expect(await gw.send(.get, "/api/v1/books", token: token2).status == 200)

        // Reusing the first refresh token means it was stolen: the whole session dies.
        let reuse = await gw.send(.post, "/api/v1/user/refresh", #"{"refresh_token":"\#(refresh1)"}"#)
        #expect(reuse.status == 401)
        #expect(await gw.send(.get, "/api/v1/books", token: token2).status == 401)
        let again = await gw.send(.post, "/api/v1/user/refresh", #"{"refreshToken":"\#(refresh2)"}"#)
        #expect(again.status == 401)
    }

    @Test(arguments: [#"{"refreshToken":"psr_unknown"}"#, #"{"refreshToken":"garbage"}"#, "{}", "x"])
    func refreshRejectsBadTokens(body: String) async {
        let gw = InProcessGateway()
        let a = await gw.send(.post, "/api/v1/user/refresh", body)
        #expect(a.status == (body.contains("psr_") || body.contains("garbage") ? 401 : 400))
    }

    @Test func registerSignsInAndDuplicateIsConflict() async throws {
        let gw = InProcessGateway()
        let a = await gw.send(.post, "/api/v1/user", #"{"email":"new@example.com","password":"secret-pw"}"#)
        #expect(a.status == 200)
        #expect(a.json?["user"]?["token"]?.stringValue?.hasPrefix("pst_") == true)
        let dup = await gw.send(.post, "/api/v1/user", #"{"email":"NEW@example.com","password":"other"}"#)
        #expect(dup.status == 409)
        #expect(dup.code == "conflict")
        let created = gw.standIn.received.filter { $0.path == "/users" && $0.method == .post }
        #expect(created.count == 2)
        #expect(created.allSatisfy { $0.headers["Authorization"] == nil })
    }

    @Test func registerThroughRegisterEndpointDetectsDuplicatesAtSignIn() async {
        let gw = InProcessGateway { $0.directus.registration = "register" }
        let dup = await gw.send(.post, "/api/v1/user", #"{"email":"x@y.com","password":"not-the-password"}"#)
        #expect(dup.status == 409)
        #expect(gw.standIn.received.contains { $0.path == "/users/register" })
        let fresh = await gw.send(.post, "/api/v1/user", #"{"email":"fresh@example.com","password":"pw-123456"}"#)
        #expect(fresh.status == 200)
    }

    @Test func registrationDisabledIsForbidden() async {
        var options = DirectusStandIn.Options()
        options.publicUserCreate = false
        let gw = InProcessGateway(standInOptions: options)
        let a = await gw.send(.post, "/api/v1/user", #"{"email":"n@example.com","password":"pw"}"#)
        #expect(a.status == 403)
        #expect(a.code == "forbidden")
    }
}

@Suite struct ResourceRouteTests {
    @Test func listHasTheClientShapeAndTotal() async throws {
        let gw = InProcessGateway()
        let token = try await gw.login()
        let a = await gw.send(.get, "/api/v1/books?limit=2", token: token)
        #expect(a.status == 200)
        let books = try #require(a.json?["books"]?.arrayValue)
        #expect(books.count == 2)
        #expect(a.json?["total"] == .int(Int64(gw.standIn.posts().count)))
        for book in books {
            #expect(book["id"]?.stringValue != nil)
            #expect(book["title"]?.stringValue != nil)
        }
    }

    @Test func forbiddenQueryParametersNeverReachDirectus() async throws {
        let gw = InProcessGateway()
        let token = try await gw.login()
        gw.standIn.clearReceived()
        let a = await gw.send(.get, "/api/v1/books?filter[user_created][_eq]=x&fields=password&deep=1&access_token=t&meta=*&sort=-subtitle&search=Swift",
                              token: token)
        #expect(a.status == 200)
        let list = try #require(gw.standIn.received.first { $0.path == "/items/posts" })
        let names = Set(list.queryItems.map(\.name))
        // The only filter is the gateway's own translation of `search` (docs/api.md, Upstream and edge rules).
        let filters = list.queryItems.filter { $0.name.hasPrefix("filter") }
        #expect(filters.map(\.name) == ["filter[_or][0][title][_icontains]", "filter[_or][1][content][_icontains]"])
        #expect(filters.allSatisfy { $0.value == "swift" })
        #expect(!names.contains { $0 == "deep" || $0 == "access_token" || $0 == "search" })
        #expect(list.queryItems.first { $0.name == "fields" }?.value.contains("password") == false)
        #expect(list.queryItems.first { $0.name == "sort" }?.value == "-content")
    }

    @Test(arguments: ["limit=0", "limit=101", "limit=x", "offset=-1", "page=0", "page=1&offset=2", "sort=password", "sort=-nope"])
    func badListQueryIs400WithoutUpstreamCall(query: String) async throws {
        let gw = InProcessGateway()
        let token = try await gw.login()
        gw.standIn.clearReceived()
        let a = await gw.send(.get, "/api/v1/books?\(query)", token: token)
        #expect(a.status == 400)
        #expect(a.code == "invalid_request")
        #expect(a.json?["books"] == .array([]))
        #expect(a.json?["total"] == .int(0))
        #expect(gw.standIn.received.isEmpty)
    }

    @Test func ownerMayUpdateAndDelete() async throws {
        let gw = InProcessGateway()
        let token = try await gw.login()
        let id = try #require(gw.postIDs(ownedBy: "x@y.com").first)
        let patch = await gw.send(.patch, "/api/v1/books/\(id)", #"{"title":"Renamed"}"#, token: token)
        #expect(patch.status == 200)
        #expect(patch.json?["books"]?.arrayValue?.first?["title"] == .string("Renamed"))
        #expect(patch.json?["total"] == .int(1))
        let put = await gw.send(.put, "/api/v1/books/\(id)", #"{"subtitle":"Via PUT"}"#, token: token)
        #expect(put.status == 200)
        let del = await gw.send(.delete, "/api/v1/books/\(id)", token: token)
        #expect(del.status == 204)
        #expect(await gw.send(.get, "/api/v1/books/\(id)", token: token).status == 404)
    }

    @Test(arguments: [HTTPMethod.patch, .put, .delete])
    func anotherUserGets403AndNothingIsWritten(method: HTTPMethod) async throws {
        let gw = InProcessGateway()
        let token = try await gw.login("second@example.com", "password2")
        let id = try #require(gw.postIDs(ownedBy: "x@y.com").first)
        let before = gw.standIn.posts()
        let a = await gw.send(method, "/api/v1/books/\(id)", method == .delete ? nil : #"{"title":"hijack"}"#, token: token)
        #expect(a.status == 403)
        #expect(a.code == "forbidden")
        #expect(a.json?["books"] == .array([]))
        #expect(gw.upstreamWrites.isEmpty)
        #expect(gw.standIn.posts() == before)
    }

    @Test func postWithIDUpdatesUnderTheUpdateRule() async throws {
        let gw = InProcessGateway()
        let mine = try #require(gw.postIDs(ownedBy: "x@y.com").first)
        let theirs = try #require(gw.postIDs(ownedBy: "second@example.com").first)
        let token = try await gw.login()
        let ok = await gw.send(.post, "/api/v1/books", #"{"id":"\#(mine)","title":"Compat"}"#, token: token)
        #expect(ok.status == 200)
        #expect(ok.json?["books"]?.arrayValue?.first?["title"] == .string("Compat"))
        let denied = await gw.send(.post, "/api/v1/books", #"{"id":\#(theirs),"title":"Compat"}"#, token: token)
        #expect(denied.status == 403)
        #expect(gw.upstreamWrites.count == 1)
    }

    @Test func createSetsOwnerFromTheCaller() async throws {
        let gw = InProcessGateway()
        let token = try await gw.login()
        let a = await gw.send(.post, "/api/v1/posts", #"{"title":"New","content":"Body"}"#, token: token)
        #expect(a.status == 201)
        let post = try #require(a.json?["posts"]?.arrayValue?.first)
        #expect(post["user_created"]?.stringValue == gw.standIn.userID(email: "x@y.com"))
        #expect(post["date_created"]?.stringValue != nil)
        #expect(post["id"]?.stringValue != nil)
    }

    @Test(arguments: [
        #"{"title":"x","user":"someone"}"#, #"{"title":"x","nope":1}"#, #"{"title":5}"#, #"{"subtitle":"no title"}"#,
        #"{"title":null}"#, "[1]", "{", "",
    ])
    func badWriteBodiesAre400AndNothingIsWritten(body: String) async throws {
        let gw = InProcessGateway()
        let token = try await gw.login()
        let a = await gw.send(.post, "/api/v1/books", body, token: token)
        #expect(a.status == 400)
        #expect(a.code == "invalid_request")
        #expect(a.json?["total"] == .int(0))
        #expect(gw.upstreamWrites.isEmpty)
    }

    @Test(arguments: ["999999", "abc", "..%2F..%2Fusers", "1%2F..", "-1", "%00", "1.5"])
    func invalidOrMissingIDsAre404(id: String) async throws {
        let gw = InProcessGateway()
        let token = try await gw.login()
        gw.standIn.clearReceived()
        for method in [HTTPMethod.get, .patch, .delete] {
            let a = await gw.send(method, "/api/v1/books/\(id)", method == .patch ? #"{"title":"x"}"# : nil, token: token)
            #expect(a.status == 404, "\(method) \(id)")
            #expect(a.code == "not_found")
        }
        // Only well-formed keys go upstream, and only to the posts item path.
        for request in gw.standIn.received {
            #expect(request.path.hasPrefix("/items/posts/"))
            #expect(request.path.split(separator: "/").count == 3)
        }
        #expect(gw.upstreamWrites.isEmpty)
    }

    @Test func everyResourceRouteNeedsAToken() async {
        let gw = InProcessGateway()
        for (method, path) in [(HTTPMethod.get, "/api/v1/books"), (.get, "/api/v1/books/1"), (.post, "/api/v1/books"),
                               (.patch, "/api/v1/posts/1"), (.delete, "/api/v1/posts/1")] {
            let a = await gw.send(method, path, method == .post || method == .patch ? #"{"title":"x"}"# : nil)
            #expect(a.status == 401)
            #expect(a.code == "unauthorized")
            #expect(a.json?["total"] == .int(0))
        }
        let bogus = await gw.send(.get, "/api/v1/books", token: "pst_forged")
        #expect(bogus.status == 401)
        #expect(gw.standIn.received.isEmpty)
    }

    @Test func unknownRouteAndWrongMethod() async {
        let gw = InProcessGateway()
        let missing = await gw.send(.get, "/api/v1/nope")
        #expect(missing.status == 404)
        #expect(missing.code == "not_found")
        let wrong = await gw.send(.delete, "/api/v1/books")
        #expect(wrong.status == 405)
        #expect(wrong.response.headers["Allow"] == "GET, HEAD, POST")
        #expect(wrong.json?["books"] == .array([]))
    }
}

@Suite struct CORSTests {
    @Test func onlyConfiguredOriginsAreAllowed() async {
        let gw = InProcessGateway { $0.cors.allowedOrigins = ["https://app.example"] }
        let preflight: HTTPHeaders = ["Origin": "https://app.example", "Access-Control-Request-Method": "DELETE"]
        let ok = await gw.send(.options, "/api/v1/books/1", headers: preflight)
        #expect(ok.status == 204)
        #expect(ok.response.headers["Access-Control-Allow-Origin"] == "https://app.example")
        #expect(ok.response.headers["Vary"] == "Origin")
        let evil = await gw.send(.options, "/api/v1/books/1", headers: ["Origin": "https://evil.example", "Access-Control-Request-Method": "DELETE"])
        #expect(evil.status == 403)
        #expect(evil.response.headers["Access-Control-Allow-Origin"] == nil)
        let plain = await gw.send(.get, "/healthz", headers: ["Origin": "https://evil.example"])
        #expect(plain.status == 200)
        #expect(plain.response.headers["Access-Control-Allow-Origin"] == nil)
        #expect(gw.standIn.received.isEmpty)
    }
}
