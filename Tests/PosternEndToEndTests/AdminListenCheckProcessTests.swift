import Foundation
import Testing
import PosternTesting

/// `postern check` on the admin listener's address (docs/api.md, Operator console; issue 34): a wildcard
/// `admin_listen` is valid, but warned about, louder when no admin token is set; the exit status stays 0.
@Suite struct AdminListenCheckProcessTests {
    static func check(_ environment: [String: String]) throws -> (status: Int32?, lines: [String]) {
        let p = try PosternProcess(["check"], environment: ["POSTERN_SESSION_STORE": "memory"].merging(environment) { $1 })
        defer { p.cleanUp() }
        let status = p.waitForExit(seconds: 10)
        return (status, (p.stdout + p.stderr).split(separator: "\n").map(String.init))
    }

    @Test func aWildcardAdminListenIsWarnedAboutLouderWithoutAToken() throws {
        let loopback = try Self.check([:])
        #expect(loopback.status == 0 && !loopback.lines.contains { $0.lowercased().hasPrefix("warning") }, "\(loopback.lines)")
        let open = try Self.check(["POSTERN_ADMIN_LISTEN": "0.0.0.0:9180"])
        #expect(open.status == 0, "\(open.lines)")
        #expect(open.lines.contains { $0.hasPrefix("WARNING: admin_listen 0.0.0.0:9180") && $0.contains("admin.token is not set") },
                "\(open.lines)")
        let token = "check-admin-token-0123456789"
        let guarded = try Self.check(["POSTERN_ADMIN_LISTEN": "[::]:9180", "POSTERN_ADMIN_TOKEN": token])
        #expect(guarded.status == 0, "\(guarded.lines)")
        #expect(guarded.lines.contains { $0.hasPrefix("warning: admin_listen [::]:9180") }, "\(guarded.lines)")
        #expect(!guarded.lines.joined().contains(token))
    }
}
