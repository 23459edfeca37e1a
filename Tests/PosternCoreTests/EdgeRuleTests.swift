import DirectusStandIn
import Foundation
import Testing
@testable import PosternCore

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
