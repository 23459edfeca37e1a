import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternHTTP
import PosternCoreTesting
import DirectusStandIn

/// `postern sessions list|revoke` as an operator runs it (docs/api.md, Command line: sessions): the real binary
/// against a running gateway's admin listener, its output, its exit status (0 done, 1 refused or not found, 2
/// usage or configuration), and the session really ended.
@Suite(.serialized)
struct SessionsCommandProcessTests {
    static let adminToken = "cli-admin-token-0123456789"

    /// Runs `postern <arguments>` to its end; returns its exit status and output.
    static func run(_ arguments: [String], environment: [String: String]) throws -> (status: Int32?, stdout: String, stderr: String) {
        let p = try PosternProcess(arguments, environment: environment)
        defer { p.cleanUp() }
        let status = p.waitForExit(seconds: 20)
        return (status, p.stdout, p.stderr)
    }

    /// The environment that points the command at `gw`'s admin listener with the admin token.
    static func environment(_ gw: TestGateway, token: String = adminToken) -> [String: String] {
        ["POSTERN_ADMIN_LISTEN": "127.0.0.1:\(gw.app.adminPort)", "POSTERN_ADMIN_TOKEN": token]
    }

    @Test func listShowsATableOrTheJSONAndRevokeEndsTheSession() throws {
        let gw = try TestGateway { $0.admin.token = Self.adminToken }
        defer { gw.stop() }
        let r = try gw.client().json("POST", "/api/v1/user/login", #"{"email":"x@y.com","password":"123456"}"#,
                                     headers: ["User-Agent": "cli-test/1"])
        let token = try #require(r.json?["user"]?["token"]?.stringValue)
        let env = Self.environment(gw)

        let table = try Self.run(["sessions", "list", "--user", "x@y.com"], environment: env)
        #expect(table.status == 0, "\(table.stderr)")
        let lines = table.stdout.split(separator: "\n").map(String.init)
        #expect(lines.count == 2, "\(table.stdout)")
        #expect(lines.first?.hasPrefix("ID PREFIX") == true && lines.first?.contains("USER AGENT") == true)
        #expect(lines.last?.contains("cli-test/1") == true && lines.last?.contains("127.0.0.1") == true, "\(table.stdout)")
        #expect(!table.stdout.contains(token))

        let json = try Self.run(["sessions", "list", "--user=x@y.com", "--json"], environment: env)
        #expect(json.status == 0)
        let listed = try JSONValue.parse(Data(json.stdout.utf8))
        guard case .array(let items)? = listed["data"], let id = items.first?["id"]?.stringValue else {
            throw TestFailure("--json: \(json.stdout)")
        }
        #expect(items.count == 1 && lines.last?.hasPrefix(String(id.prefix(12))) == true)

        // --admin instead of POSTERN_ADMIN_LISTEN; a prefix of the id.
        let revoke = try Self.run(["sessions", "revoke", String(id.prefix(9)), "--admin", "http://127.0.0.1:\(gw.app.adminPort)"],
                                  environment: ["POSTERN_ADMIN_TOKEN": Self.adminToken])
        #expect(revoke.status == 0, "\(revoke.stderr)")
        #expect(revoke.stdout == "revoked 1 session\n")
        #expect(try gw.client().json("GET", "/api/v1/user/me", token: token).status == 401)

        // Not found: 1, with the answer's reason.
        let again = try Self.run(["sessions", "revoke", id], environment: env)
        #expect(again.status == 1)
        #expect(again.stderr.contains("not_found") && again.stderr.contains("404"), "\(again.stderr)")
        let empty = try Self.run(["sessions", "list", "--user", "x@y.com"], environment: env)
        #expect(empty.status == 0 && empty.stdout == "no live sessions for x@y.com\n", "\(empty.stdout)")
    }

    @Test func revokeUserEndsEveryOneOfTheirSessions() throws {
        let gw = try TestGateway { $0.admin.token = Self.adminToken }
        defer { gw.stop() }
        let tokens = try (0..<2).map { _ in try gw.login() }
        let userID = try #require(gw.standIn.userID(email: "x@y.com"))
        let out = try Self.run(["sessions", "revoke", "--user", userID], environment: Self.environment(gw))
        #expect(out.status == 0, "\(out.stderr)")
        #expect(out.stdout == "revoked 2 sessions\n")
        for token in tokens { #expect(try gw.client().json("GET", "/api/v1/user/me", token: token).status == 401) }
        let json = try Self.run(["sessions", "revoke", "--user", userID, "--json"], environment: Self.environment(gw))
        #expect(json.status == 0 && json.stdout == #"{"data":{"revoked":0}}"# + "\n", "\(json.stdout)")
    }

    @Test func refusalsAreExit1AndUsageErrorsExit2() throws {
        let gw = try TestGateway { $0.admin.token = Self.adminToken }
        defer { gw.stop() }
        let token = try gw.login()
        let env = Self.environment(gw)
        for arguments in [["sessions"], ["sessions", "list"], ["sessions", "list", "x@y.com"], ["sessions", "revoke"],
                          ["sessions", "revoke", "abcdefgh", "--user", "u1"], ["sessions", "frob"],
                          ["sessions", "list", "--user"], ["sessions", "list", "--user", "x", "--colour"],
                          ["sessions", "list", "--user", "x", "--admin", "https://127.0.0.1:1"]] {
            let out = try Self.run(arguments, environment: env)
            #expect(out.status == 2, "\(arguments): \(out.status.map(String.init) ?? "hung") \(out.stderr)")
            #expect(out.stderr.contains("usage: postern sessions"), "\(arguments): \(out.stderr)")
        }
        // No token configured: 2, saying which setting is missing.
        let noToken = try Self.run(["sessions", "list", "--user", "x@y.com"],
                                   environment: ["POSTERN_ADMIN_LISTEN": "127.0.0.1:\(gw.app.adminPort)"])
        #expect(noToken.status == 2 && noToken.stderr.contains("POSTERN_ADMIN_TOKEN"), "\(noToken.stderr)")
        // A wrong token: refused, 1; nothing revoked.
        let wrong = try Self.run(["sessions", "revoke", "--user", "anyone"],
                                 environment: Self.environment(gw, token: "wrong-admin-token-0123456789"))
        #expect(wrong.status == 1 && wrong.stderr.contains("unauthorized") && wrong.stderr.contains("401"), "\(wrong.stderr)")
        #expect(!wrong.stderr.contains("wrong-admin-token"))
        #expect(try gw.client().json("GET", "/api/v1/user/me", token: token).status == 200)
        // A short prefix: the gateway's 400, exit 1.
        let short = try Self.run(["sessions", "revoke", "abc"], environment: env)
        #expect(short.status == 1 && short.stderr.contains("invalid_request"), "\(short.stderr)")
        // Nothing listening: 1, saying where it called.
        let closed = try Self.run(["sessions", "list", "--user", "x@y.com", "--admin", "http://127.0.0.1:1"], environment: env)
        #expect(closed.status == 1 && closed.stderr.contains("cannot reach the admin listener at 127.0.0.1:1"), "\(closed.stderr)")
        // --help documents it.
        let help = try Self.run(["--help"], environment: [:])
        #expect(help.status == 0 && help.stdout.contains("postern sessions revoke --user <user id>"))
    }
}
