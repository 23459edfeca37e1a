import DirectusStandIn
import FoundationEssentials
import Glibc
import PosternCore
import PosternIO
import PosternHTTP

/// `postern demo`: the gateway on :8080 in front of the built-in Directus stand-in on :8055, in memory.
enum Demo {
    /// Serves only the stand-in until SIGTERM/SIGINT (`make bench`, `make soak-redis`, and the compose stand-in of
    /// `make docker-smoke`), with the arguments of `postern standin` (`CommandUsage` "standin"). `--unbootstrapped` starts it as a fresh Directus install
    /// (only the admin: no `posts` collection, role, policy, permissions, users or posts), for `postern bootstrap`.
    static func runStandInOnly(_ arguments: ParsedArguments) -> Int32 {
        let positional = arguments.arguments
        let host = arguments["--host"] ?? "127.0.0.1"
        var options = DirectusStandIn.Options()
        options.recordRequests = false
        if arguments["--unbootstrapped"] != nil { options.seedSchema = false }
        if let email = arguments["--admin-email"] { options.adminEmail = email }
        if let password = arguments["--admin-password"] { options.adminPassword = password }
        guard let port = positional.first.map({ UInt16($0) }) ?? 8055 else {
            return CLI.usageError("standin", "the port must be a number from 0 to 65535 (got \(positional[0]))")
        }
        if positional.count > 1 {
            guard let ttl = TimeInterval(positional[1]), ttl > 0 else {
                return CLI.usageError("standin", "the access token TTL must be a positive number of seconds (got \(positional[1]))")
            }
            options.accessTokenTTL = ttl
        }
        Application.ignoreSIGPIPE()
        let standIn = DirectusStandIn(options: options)
        let group = EventLoopGroup(count: 1, name: "standin")
        let server = HTTPServer(group: group, limits: standIn.serverLimits) { request in standIn.handle(request) }
        do {
            try server.start(host: host, port: port)
        } catch {
            CLI.fail("cannot start the Directus stand-in: \(error.description)")
            return 1
        }
        let shown = host.contains(":") ? "[\(host)]" : host
        let state = options.seedSchema ? "seeded" : "unbootstrapped: only the admin \(options.adminEmail)"
        print("Directus stand-in on http://\(shown):\(server.port) (\(state))")
        fflush(nil)  // seen at once when stdout is a pipe (scripts and tests read the port from it)
        Application.waitForTerminationSignal()
        server.shutdown(grace: 1)
        group.shutdown()
        return 0
    }

    /// Runs the demo; `standInPort` 0 lets the system pick a free port for the stand-in.
    static func run(configPath: String?, standInPort: UInt16 = 8055) -> Int32 {
        guard var config = CLI.loadConfig(configPath, command: "demo") else { return 1 }
        config.sessions.store = "memory"
        Application.ignoreSIGPIPE()
        var options = DirectusStandIn.Options()
        options.recordRequests = false  // a long-running demo must not grow without bound
        let standIn = DirectusStandIn(options: options)
        let group = EventLoopGroup(count: 1, name: "standin")
        let server = HTTPServer(group: group, limits: standIn.serverLimits) { request in standIn.handle(request) }
        do {
            try server.start(host: "127.0.0.1", port: standInPort)
        } catch {
            CLI.fail("cannot start the Directus stand-in: \(error.description)")
            return 1
        }
        config.directus.url = "http://127.0.0.1:\(server.port)"
        do {
            let app = try Application.build(config: config)
            try app.start()
            print("""
                postern demo: gateway on http://127.0.0.1:\(app.port), Directus stand-in on http://127.0.0.1:\(server.port)
                sign in with x@y.com / 123456:
                  curl -s -X POST localhost:\(app.port)/api/v1/user/login -H 'Content-Type: application/json' -d '{"email":"x@y.com","password":"123456"}'
                """)
            // The composite endpoints of the config (docs/api.md, Composite endpoints): one call per screen.
            for composite in config.composites {
                print("postern demo: composite \(composite.name) on http://127.0.0.1:\(app.port)\(composite.path) "
                      + "(\(composite.parts.map(\.key).joined(separator: ", ")))")
            }
            // The operator console (docs/api.md, Operator console): its address, and whether a token turns it on.
            let console = config.admin.token.isEmpty ? "off until POSTERN_ADMIN_TOKEN is set" : "token from POSTERN_ADMIN_TOKEN"
            print("postern demo: operator console on http://127.0.0.1:\(app.adminPort)/ (\(console))")
            fflush(nil)  // flushes stdout: seen at once when stdout is a pipe (scripts read the address from it)
            app.runUntilSignal()
        } catch {
            CLI.fail("cannot start: \(error.description)")
            server.shutdown(grace: 0)
            group.shutdown()
            return 1
        }
        server.shutdown(grace: 1)
        group.shutdown()
        return 0
    }
}
