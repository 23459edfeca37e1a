import DirectusStandIn
import Foundation
import PosternCore

/// `postern demo`: the gateway on :8080 in front of the built-in Directus stand-in on :8055, in memory.
enum Demo {
    /// Serves only the stand-in (for `make bench` and `make soak-redis`), until SIGTERM/SIGINT:
    /// `postern standin [PORT [ACCESS_TOKEN_TTL_S]]`.
    static func runStandInOnly() -> Int32 {
        Application.ignoreSIGPIPE()
        let port = CommandLine.arguments.dropFirst(2).first.flatMap { UInt16($0) } ?? 8055
        var options = DirectusStandIn.Options()
        options.recordRequests = false
        if let ttl = CommandLine.arguments.dropFirst(3).first.flatMap({ TimeInterval($0) }), ttl > 0 {
            options.accessTokenTTL = ttl
        }
        let standIn = DirectusStandIn(options: options)
        let group = EventLoopGroup(count: 1, name: "standin")
        let server = HTTPServer(group: group, limits: standIn.serverLimits) { request in standIn.handle(request) }
        do {
            try server.start(host: "127.0.0.1", port: port)
        } catch {
            CLI.fail("cannot start the Directus stand-in: \(error.description)")
            return 1
        }
        print("Directus stand-in on http://127.0.0.1:\(server.port)")
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
