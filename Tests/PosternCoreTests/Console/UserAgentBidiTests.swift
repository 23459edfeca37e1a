import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternCoreTesting
import PosternHTTP

/// A user agent is shown as it could not mislead (issue 34): the Unicode bidi controls (U+202A–U+202E,
/// U+2066–U+2069), which can reverse what the console and `postern sessions list` show, are left out of the stored
/// user agent as C0 and C1 controls are; everything else stays.
@Suite struct UserAgentBidiTests {
    static let token = "bidi-admin-token-0123456789"
    static let bidi: [Unicode.Scalar] = [0x202A, 0x202B, 0x202C, 0x202D, 0x202E, 0x2066, 0x2067, 0x2068, 0x2069]
        .map { Unicode.Scalar($0)! }  // all valid scalars

    @Test func bidiControlsAreLeftOutOfAStoredUserAgentThroughTheWire() throws {
        let gw = try TestGateway { $0.admin.token = Self.token }
        defer { gw.stop() }
        var agent = "Mozilla/5.0 "
        for scalar in Self.bidi { agent.unicodeScalars.append(scalar); agent += "x" }
        agent += " (café ✓)"
        let login = try gw.client().request("POST", "/api/v1/user/login",
                                            headers: ["Content-Type": "application/json", "User-Agent": agent],
                                            body: Data(#"{"email":"x@y.com","password":"123456"}"#.utf8))
        #expect(login.status == 200, "\(login.text)")
        let list = try RawHTTPClient(port: gw.app.adminPort).request("GET", "/admin/sessions?user=x@y.com",
                                                                   headers: ["Authorization": "Bearer \(Self.token)"])
        let shown = try #require(list.json?["data"]?.arrayValue?.first?["user_agent"]?.stringValue, "\(list.text)")
        #expect(shown == "Mozilla/5.0 xxxxxxxxx (café ✓)", "\(shown.unicodeScalars.map { String($0.value, radix: 16) })")
        #expect(!shown.unicodeScalars.contains { Self.bidi.contains($0) })
    }

    @Test func theNeighboursOfTheBidiRangesStay() {
        // U+2029 and U+202F, U+2065 and U+206A are not bidi controls.
        let kept = "a\u{2029}b\u{202F}c\u{2065}d\u{206A}e"
        #expect(Session.userAgent(kept) == kept)
        #expect(Session.userAgent("a\u{202E}b\u{2066}c") == "abc")
    }
}
