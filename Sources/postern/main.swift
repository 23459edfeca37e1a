import FoundationEssentials
import Glibc
import PosternCore

/// The command line (docs/api.md, Configuration): thin; everything lives in PosternCore.
enum CLI {
    static let usage = """
        usage: postern [serve|check|demo|openapi|bootstrap|healthcheck|sessions|reload|version] [--config FILE]

          serve        run the gateway (default)
          check        validate the config, print every problem, exit non-zero on any
          demo         gateway on :8080 plus a built-in Directus stand-in on :8055
                       (--standin-port N moves the stand-in; 0 picks a free port)
          openapi      print the OpenAPI 3.1 document of the configured API (as served at /api/v1/openapi.json)
          bootstrap    prepare a fresh Directus 11 for Postern (collection, role, policy, permissions,
                       registration); idempotent. Admin credentials from POSTERN_DIRECTUS_ADMIN_EMAIL and
                       POSTERN_DIRECTUS_ADMIN_PASSWORD, or POSTERN_DIRECTUS_ADMIN_TOKEN
          healthcheck  exit 0 when the local gateway's /healthz answers 200
          sessions     list or end a user's sessions through the running gateway's admin listener
                         postern sessions list --user <email or user id>
                         postern sessions revoke <session id, or 8+ first characters of one>
                         postern sessions revoke --user <user id>
                       a table by default, --json for the answer as it came; --admin http://host:port
                       overrides admin_listen (POSTERN_ADMIN_LISTEN); the token is POSTERN_ADMIN_TOKEN
                       (admin.token). Exit 0 done, 1 refused or not found, 2 usage or configuration
          reload       ask the running gateway to read its config file again (POST /admin/reload); --admin and
                       the token as for sessions. Exit 0 reloaded or unchanged, 1 refused, 2 usage or configuration
          version      print the version
        """

    static func main() async -> Int32 {
        var arguments = Array(CommandLine.arguments.dropFirst())
        var configPath: String?
        if let i = arguments.firstIndex(where: { $0 == "--config" || $0.hasPrefix("--config=") }) {
            if arguments[i].hasPrefix("--config=") {
                configPath = String(arguments[i].dropFirst("--config=".count))
                arguments.remove(at: i)
            } else if i + 1 < arguments.count {
                configPath = arguments[i + 1]
                arguments.removeSubrange(i...(i + 1))
            } else {
                fail("--config needs a file path")
                return 2
            }
        }
        var standInPort: UInt16 = 8055
        if arguments.first == "demo", let i = arguments.firstIndex(of: "--standin-port") {
            guard i + 1 < arguments.count, let port = UInt16(arguments[i + 1]) else {
                fail("--standin-port needs a port number (0 for any free port)")
                return 2
            }
            standInPort = port
            arguments.removeSubrange(i...(i + 1))
        }
        let command = arguments.first ?? "serve"
        if arguments.count > 1 && command != "standin" && command != "sessions" && command != "reload" {
            fail("unexpected argument \(arguments[1])\n\(usage)")
            return 2
        }
        switch command {
        case "version", "--version":
            print("postern \(PosternVersion.current)")
            return 0
        case "help", "--help", "-h":
            print(usage)
            return 0
        case "check":
            // Every value the environment set is named after the verdict, so that an image's ENV cannot
            // silently win over a mounted file (docs/docker.md, Configuration).
            let environment = ProcessInfo.processInfo.environment
            let origins = PosternConfig.environmentOrigins(configPath: configPath, environment: environment)
            switch PosternConfig.load(configPath: configPath, environment: environment) {
            case .success:
                let path = PosternConfig.resolvedPath(configPath: configPath, environment: environment)
                print("config OK (\(path ?? "built-in defaults"))")
                for origin in origins { print(origin.description) }
                return 0
            case .failure(let error):
                for problem in error.problems { print(problem.description) }
                for origin in origins { print(origin.description) }
                return 1
            }
        case "serve":
            return serve(configPath: configPath)
        case "demo":
            return Demo.run(configPath: configPath, standInPort: standInPort)
        case "openapi":
            guard let config = loadConfig(configPath, command: "openapi") else { return 1 }
            writeAll(STDOUT_FILENO, OpenAPIDocument(config: config).data())
            print("")
            return 0
        case "standin":
            // Only the Directus stand-in (benchmarks, soak, the compose smoke test): docs/docker.md.
            return Demo.runStandInOnly(arguments: Array(arguments.dropFirst()))
        case "bootstrap":
            return await bootstrap(configPath: configPath)
        case "healthcheck":
            guard let config = loadConfig(configPath, command: "healthcheck") else { return 1 }
            return await Application.healthcheck(config: config) ? 0 : 1
        case "sessions":
            return await SessionsCommand.run(Array(arguments.dropFirst()), configPath: configPath)
        case "reload":
            return await ReloadCommand.run(Array(arguments.dropFirst()), configPath: configPath)
        default:
            fail("unknown command \(command)\n\(usage)")
            return 2
        }
    }

    /// The validated config, or nil after printing why it is invalid.
    static func loadConfig(_ configPath: String?, command: String) -> PosternConfig? {
        switch PosternConfig.loadFromProcess(configPath: configPath) {
        case .success(let config):
            return config
        case .failure(let error):
            fail("\(command): invalid config: \(error.problems.map(\.description).joined(separator: "; "))")
            return nil
        }
    }

    static func serve(configPath: String?) -> Int32 {
        // Before anything else: SIGHUP reloads the config once serving, and must not end the process before.
        Application.ignoreHangUp()
        guard let config = loadConfig(configPath, command: "serve") else { return 1 }
        Application.ignoreSIGPIPE()
        do {
            let source = ConfigSource.file(configPath: configPath, environment: ProcessInfo.processInfo.environment)
            let app = try Application.build(config: config, source: source)
            try app.start()
            app.runUntilSignal()
            return 0
        } catch {
            fail("cannot start: \(error.description)")
            return 1
        }
    }

    static func bootstrap(configPath: String?) async -> Int32 {
        guard let config = loadConfig(configPath, command: "bootstrap") else { return 1 }
        let credentials: BootstrapCredentials
        switch PosternConfig.bootstrapCredentials() {
        case .success(let found): credentials = found
        case .failure(let error):
            fail("bootstrap: \(error.problems.map(\.description).joined(separator: "; "))")
            return 1
        }
        do {
            _ = try await DirectusBootstrap.runLive(config: config, credentials: credentials) { line in
                print("postern bootstrap: \(line)")
            }
            return 0
        } catch {
            fail("bootstrap: \(error.description)")
            return 1
        }
    }

    static func fail(_ message: String) {
        writeAll(STDERR_FILENO, Data("postern: \(message)\n".utf8))
    }

    /// Writes all of `data` to `fd` unbuffered (ahead of anything `print` holds in stdio's buffer), retrying
    /// short writes and EINTR; gives up silently on any other error (a closed pipe).
    static func writeAll(_ fd: Int32, _ data: Data) {
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            guard var next = raw.baseAddress else { return }
            var left = raw.count
            while left > 0 {
                let n = write(fd, next, left)
                if n < 0 && errno == EINTR { continue }
                guard n > 0 else { return }
                next += n
                left -= n
            }
        }
    }
}

exit(await CLI.main())
