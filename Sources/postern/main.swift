import FoundationEssentials
import Glibc
import PosternCore

/// The command line (docs/api.md, Command line): thin; everything lives in PosternCore. The commands, their usage
/// and their options are `CommandUsage.all`.
enum CLI {
    /// Runs `postern [options] [command] [arguments]`: options before the command word belong to it
    /// (`postern --config FILE check`); no command is `serve`. Every command's arguments are parsed against its
    /// `CommandUsage`, which also answers `--help` and `-h` (stdout, exit 0) and a wrong option (stderr, exit 2).
    static func main() async -> Int32 {
        var rest = CommandLine.arguments.dropFirst()
        var leading: [String] = []
        while let first = rest.first, first.hasPrefix("-") {
            rest.removeFirst()
            switch first {
            case "--help", "-h":
                print(CommandUsage.overview)
                return 0
            case "--version":
                return await run("version", ParsedArguments())
            case "--config":
                leading.append(first)
                if let value = rest.popFirst() { leading.append(value) }
            case _ where first.hasPrefix("--config="):
                leading.append(first)
            default:
                fail("unknown option \(first)\n\(CommandUsage.overview)")
                return 2
            }
        }
        let word = rest.popFirst() ?? "serve"
        if word == "help" { return help(Array(rest)) }
        guard !word.contains(" "), let usage = CommandUsage.named(word) else {
            fail("unknown command \(word)\n\(CommandUsage.overview)")
            return 2
        }
        switch usage.parse(leading + rest) {
        case .help(let arguments):
            // `postern sessions list --help`: the subcommand's own usage, where it has one.
            let subcommand = arguments.first.flatMap { CommandUsage.named("\(word) \($0)") }
            print((subcommand ?? usage).help)
            return 0
        case .usageError(let message):
            return usageError(word, message)
        case .run(let arguments):
            return await run(word, arguments)
        }
    }

    /// Runs the command `name` of `CommandUsage.all` with its parsed arguments.
    static func run(_ name: String, _ arguments: ParsedArguments) async -> Int32 {
        let configPath = arguments["--config"]
        switch name {
        case "serve":
            return serve(configPath: configPath)
        case "check":
            return check(configPath: configPath)
        case "demo":
            var standInPort: UInt16 = 8055
            if let text = arguments["--standin-port"] {
                guard let port = UInt16(text) else { return usageError(name, "--standin-port needs a port number (0 for any free port)") }
                standInPort = port
            }
            return Demo.run(configPath: configPath, standInPort: standInPort)
        case "openapi":
            guard let config = loadConfig(configPath, command: "openapi") else { return 1 }
            writeAll(STDOUT_FILENO, OpenAPIDocument(config: config).data())
            print("")
            return 0
        case "bootstrap":
            return await bootstrap(configPath: configPath)
        case "healthcheck":
            guard let config = loadConfig(configPath, command: "healthcheck") else { return 1 }
            return await Healthcheck.run(config: config) ? 0 : 1
        case "sessions":
            return await SessionsCommand.run(arguments)
        case "reload":
            return await ReloadCommand.run(arguments)
        case "version":
            print("postern \(PosternVersion.current)")
            return 0
        case "standin":
            // Only the Directus stand-in (benchmarks, soak, the compose smoke test): docs/docker.md.
            return Demo.runStandInOnly(arguments)
        default:
            fail("\(name): listed in CommandUsage.all but not run by CLI.run")
            return 70  // EX_SOFTWARE: a command added to the table only
        }
    }

    /// `postern help [command words]`: the overview, or that command's help.
    static func help(_ words: [String]) -> Int32 {
        guard !words.isEmpty else {
            print(CommandUsage.overview)
            return 0
        }
        guard let usage = CommandUsage.named(words.joined(separator: " ")) else {
            fail("help: no command \(words.joined(separator: " "))\n\(CommandUsage.overview)")
            return 2
        }
        print(usage.help)
        return 0
    }

    /// Prints `message` and the command's usage to standard error; exit status 2.
    static func usageError(_ command: String, _ message: String) -> Int32 {
        fail("\(command): \(message)\n\(CommandUsage.named(command)?.help ?? CommandUsage.overview)")
        return 2
    }

    /// `postern check`: every problem (or the warnings of a valid config: `PosternConfig.warnings`), then every value
    /// the environment set, so that an image's ENV cannot silently win over a mounted file (docs/docker.md,
    /// Configuration).
    static func check(configPath: String?) -> Int32 {
        let environment = ProcessInfo.processInfo.environment
        let origins = PosternConfig.environmentOrigins(configPath: configPath, environment: environment)
        switch PosternConfig.load(configPath: configPath, environment: environment) {
        case .success(let config):
            let path = PosternConfig.resolvedPath(configPath: configPath, environment: environment)
            // A Redis store is connected to once: a refused TLS or login is a problem (docs/api.md).
            let redis = Application.checkRedisStore(config)
            if redis?.problem != true { print("config OK (\(path ?? "built-in defaults"))") }
            if let redis { print(redis.line) }
            for warning in config.warnings() { print(warning) }
            for origin in origins { print(origin.description) }
            return redis?.problem == true ? 1 : 0
        case .failure(let error):
            for problem in error.problems { print(problem.description) }
            for origin in origins { print(origin.description) }
            return 1
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
            // A reload reads the same file again with the environment as it is now, at start (docs/api.md,
            // Reloading the config).
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
