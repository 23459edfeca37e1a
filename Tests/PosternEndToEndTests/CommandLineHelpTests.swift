import Foundation
import Testing
import PosternTesting

/// `postern <command> --help` and a wrong option, through the built executable (docs/api.md, Command line;
/// docs/api.md, Command line): help on stdout with exit 0 and nothing started; an unknown option exits 2 with the usage on stderr.
@Suite
struct CommandLineHelpTests {
    /// Every command `postern` has, with its subcommands and the unlisted `standin`.
    static let commands = ["serve", "check", "demo", "openapi", "bootstrap", "healthcheck", "version",
                           "sessions", "sessions list", "sessions revoke", "standin"]

    /// Runs `postern <arguments>` with `environment`; the status is nil when it had to be killed.
    static func run(_ arguments: [String], environment: [String: String] = [:]) throws
        -> (status: Int32?, stdout: String, stderr: String) {
        let p = try PosternProcess(arguments, environment: environment)
        defer { p.cleanUp() }
        let status = p.waitForExit(seconds: 10)
        return (status, p.stdout, p.stderr)
    }

    @Test(arguments: commands, ["--help", "-h"])
    func helpPrintsTheCommandsUsageAndExits0(_ command: String, _ flag: String) throws {
        // A config that could not even be read: help must not load it, start a listener or call anything.
        let out = try Self.run(command.split(separator: " ").map(String.init) + [flag],
                               environment: ["POSTERN_CONFIG": "/nonexistent/postern.json"])
        #expect(out.status == 0, "\(command) \(flag): \(out.status.map(String.init) ?? "killed") \(out.stderr)")
        #expect(out.stdout.hasPrefix("usage: postern \(command)"), "\(command) \(flag): \(out.stdout)")
        #expect(out.stderr.isEmpty, "\(command) \(flag): \(out.stderr)")
    }

    @Test(arguments: commands)
    func anUnknownOptionExits2WithTheUsageOnStderr(_ command: String) throws {
        let out = try Self.run(command.split(separator: " ").map(String.init) + ["--no-such-option"])
        #expect(out.status == 2, "\(command): \(out.status.map(String.init) ?? "killed") \(out.stderr)")
        #expect(out.stdout.isEmpty, "\(command): \(out.stdout)")
        #expect(out.stderr.contains("unknown option --no-such-option"), "\(command): \(out.stderr)")
        #expect(out.stderr.contains("usage: postern \(command.split(separator: " ")[0])"), "\(command): \(out.stderr)")
    }

    @Test func theOverviewListsEveryCommandAndEachAnswersHelp() throws {
        for arguments in [["--help"], ["-h"], ["help"]] {
            let out = try Self.run(arguments)
            #expect(out.status == 0 && out.stdout.hasPrefix("usage: postern"), "\(arguments): \(out.stdout)\(out.stderr)")
        }
        let overview = try Self.run(["--help"]).stdout
        // Every command the overview shows has help of its own (a command added later is covered too).
        let listed = Set(overview.split(separator: "\n").compactMap { line -> String? in
            let words = line.split(separator: " ")
            guard words.count > 1, words[0] == "postern", !words[1].hasPrefix("<") else { return nil }
            return String(words[1])
        })
        #expect(listed.isSuperset(of: ["serve", "check", "demo", "openapi", "bootstrap", "healthcheck", "sessions", "version"]),
                "\(listed.sorted())")
        for command in listed.sorted() {
            let out = try Self.run([command, "--help"])
            #expect(out.status == 0 && out.stdout.hasPrefix("usage: postern \(command)"), "\(command): \(out.stdout)\(out.stderr)")
        }
        // `postern help demo` is `postern demo --help`.
        #expect(try Self.run(["help", "demo"]).stdout == Self.run(["demo", "--help"]).stdout)
    }

    @Test func demoHelpNoLongerSaysUnexpectedArgument() throws {
        let out = try Self.run(["demo", "--help"])
        #expect(out.status == 0)
        #expect(out.stdout.contains("--standin-port N"), "\(out.stdout)")
        #expect(!(out.stdout + out.stderr).contains("unexpected argument"))
    }

    @Test(arguments: [
        (["check", "--config"], "--config needs a value"),
        (["demo", "--standin-port", "many"], "--standin-port needs a port number"),
        (["check", "extra"], "unexpected argument extra"),
        (["version", "--json"], "unknown option --json"),
        (["sessions", "list", "--json=yes", "--user", "x"], "--json takes no value"),
        (["frobnicate"], "unknown command frobnicate"),
        (["--frobnicate"], "unknown option --frobnicate"),
    ])
    func usageErrorsExit2NamingTheProblem(_ arguments: [String], _ message: String) throws {
        let out = try Self.run(arguments)
        #expect(out.status == 2, "\(arguments): \(out.status.map(String.init) ?? "killed") \(out.stderr)")
        #expect(out.stderr.contains(message) && out.stderr.contains("usage: postern"), "\(arguments): \(out.stderr)")
    }

    @Test func optionsBeforeTheCommandAndAfterDoubleDashAreTaken() throws {
        let config = try PosternProcess.scratchFile("cli.json", #"{"listen": "127.0.0.1:8081"}"#)
        defer { try? FileManager.default.removeItem(atPath: config) }
        // `postern --config FILE check` and `postern check --config=FILE` read FILE.
        for arguments in [["--config", config, "check"], ["check", "--config=\(config)"]] {
            let out = try Self.run(arguments)
            #expect(out.status == 0 && out.stdout.contains("config OK (\(config))"), "\(arguments): \(out.stdout)\(out.stderr)")
        }
        // After `--`, a session id starting with `-` is an argument, not an option: the command gets as far as
        // the missing admin token.
        let out = try Self.run(["sessions", "revoke", "--", "-abcdefgh"])
        #expect(out.status == 2 && out.stderr.contains("no admin token"), "\(out.stderr)")
    }
}
