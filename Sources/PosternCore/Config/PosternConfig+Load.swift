import FoundationEssentials
import PosternHTTP
import PosternIO

extension PosternConfig {
    /// The environment variables that override config keys (docs/api.md, Configuration), with the key path each sets.
    static let environmentOverrides: [(variable: String, key: String)] = [
        ("POSTERN_LISTEN", "listen"),
        ("POSTERN_ADMIN_LISTEN", "admin_listen"),
        ("POSTERN_ADMIN_TOKEN", "admin.token"),
        ("POSTERN_WORKERS", "workers"),
        ("POSTERN_DIRECTUS_URL", "directus.url"),
        ("POSTERN_UPSTREAM_TIMEOUT_MS", "directus.timeout_ms"),
        ("POSTERN_SESSION_STORE", "sessions.store"),
        ("POSTERN_REDIS_CA_FILE", "sessions.redis_ca_file"),
        ("POSTERN_REDIS_CERT_FILE", "sessions.redis_cert_file"),
        ("POSTERN_REDIS_KEY_FILE", "sessions.redis_key_file"),
        ("POSTERN_LOG_LEVEL", "log_level"),
        ("POSTERN_SECRET_KEY", "secret_key"),
        ("POSTERN_CACHE_TTL_MS", "resources[*].cache.ttl_ms"),
    ]

    /// The file used when neither `--config` nor `POSTERN_CONFIG` names one (if it exists).
    static let defaultPath = "config/postern.json"

    /// Decodes and validates; env is passed in so tests control it.
    /// `json` nil means no file: the built-in defaults, then the environment.
    static func load(json: Data?, environment: [String: String]) -> Result<PosternConfig, ConfigError> {
        var reader = ConfigReader()
        var config = PosternConfig()
        var resourcePaths = config.resources.indices.map { "resources[\($0)]" }
        var compositePaths = config.composites.indices.map { "composites[\($0)]" }
        if let json {
            do {
                let root = try JSONValue.parse(json)
                (config, resourcePaths) = decode(root, reader: &reader)
                compositePaths = decodeComposites(root, into: &config, reader: &reader)
            } catch {
                reader.report("config", "invalid JSON: \(describe(error, in: json))")
            }
        }
        var sources: [String: String] = [:]
        applyEnvironment(environment, to: &config, sources: &sources, reader: &reader)
        // A value that failed to decode kept its default or stayed empty: report it once, not twice.
        let reported = Set(reader.problems.map(\.path))
        let problems = reader.problems
            + config.validate(sources: sources, resourcePaths: resourcePaths, compositePaths: compositePaths).filter { !reported.contains($0.path) }
        return problems.isEmpty ? .success(config) : .failure(ConfigError(problems: problems))
    }

    /// Resolves the path (`--config` arg, else POSTERN_CONFIG, else config/postern.json if it exists,
    /// else built-in defaults) and loads with the real process environment.
    package static func loadFromProcess(configPath: String?) -> Result<PosternConfig, ConfigError> {
        load(configPath: configPath, environment: ProcessInfo.processInfo.environment)
    }

    /// `loadFromProcess` with the environment passed in: reads the resolved file, then `load(json:environment:)`.
    package static func load(configPath: String?, environment: [String: String]) -> Result<PosternConfig, ConfigError> {
        guard let path = resolvedPath(configPath: configPath, environment: environment) else {
            return load(json: nil, environment: environment)
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            var isDirectory = false
            let reason = !FileManager.default.fileExists(atPath: path, isDirectory: &isDirectory) ? "no such file"
                : isDirectory ? "it is a directory" : "permission denied"
            return .failure(ConfigError(problems: [ConfigProblem(path: "config", message: "cannot read \(path) (\(reason))")]))
        }
        return load(json: data, environment: environment)
    }

    /// The config file path that loadFromProcess would use (nil = defaults only).
    static func resolvedPath(configPath: String?) -> String? {
        resolvedPath(configPath: configPath, environment: ProcessInfo.processInfo.environment)
    }

    /// `resolvedPath(configPath:)` with the environment passed in.
    package static func resolvedPath(configPath: String?, environment: [String: String]) -> String? {
        if let configPath, !configPath.isEmpty { return configPath }
        if let path = environment["POSTERN_CONFIG"], !path.isEmpty { return path }
        return FileManager.default.fileExists(atPath: defaultPath) ? defaultPath : nil
    }

    /// Applies the environment overrides; an empty variable counts as unset.
    static func applyEnvironment(_ environment: [String: String], to config: inout PosternConfig,
                                 sources: inout [String: String], reader: inout ConfigReader) {
        func value(_ variable: String) -> String? {
            guard let raw = environment[variable] else { return nil }
            let trimmed = raw.trimmedSpaces()
            return trimmed.isEmpty ? nil : trimmed
        }
        func integer(_ variable: String, _ rule: IntRule) -> Int? {
            guard let text = value(variable) else { return nil }
            guard let int = Int(text) else {
                reader.report(variable, "\(rule.message) (got \"\(text)\")")
                return nil
            }
            return int
        }
        for (variable, key) in environmentOverrides {
            guard let text = value(variable) else { continue }
            switch key {
            case "listen": config.listen = text
            case "admin_listen": config.adminListen = text
            case "admin.token": config.admin.token = text
            case "workers":
                guard let v = integer(variable, .workers) else { continue }
                config.workers = v
            case "directus.url": config.directus.url = text
            case "directus.timeout_ms":
                guard let v = integer(variable, .timeoutMs) else { continue }
                config.directus.timeoutMs = v
            case "sessions.store": config.sessions.store = text
            case "sessions.redis_ca_file": config.sessions.redisCAFile = text
            case "sessions.redis_cert_file": config.sessions.redisCertFile = text
            case "sessions.redis_key_file": config.sessions.redisKeyFile = text
            case "log_level": config.logLevel = text
            case "secret_key": config.secretKey = text
            case "resources[*].cache.ttl_ms":
                // Every resource's TTL at once; a bad value is reported here, under the variable's name.
                guard let v = integer(variable, .nonNegative) else { continue }
                guard IntRule.nonNegative.allows(v) else {
                    reader.report(variable, "\(IntRule.nonNegative.message) (got \"\(text)\")")
                    continue
                }
                for i in config.resources.indices { config.resources[i].cache.ttlMs = v }
            default: continue
            }
            sources[key] = variable
        }
    }

    /// A parse error with its byte offset turned into a line and column.
    static func describe(_ error: JSONParseError, in data: Data) -> String {
        let text = error.description
        guard let range = text.byteRange(of: " at byte ", backwards: true),
              let offset = Int(text[range.upperBound...]) else { return text }
        var line = 1
        var column = 1
        for byte in data.prefix(offset) {
            if byte == 0x0A {
                line += 1
                column = 1
            } else {
                column += 1
            }
        }
        return "\(text[..<range.lowerBound]) at line \(line), column \(column)"
    }
}

/// The Directus admin credentials `postern bootstrap` uses: a static token, or an email and a password.
package struct BootstrapCredentials: Sendable, Equatable, CustomStringConvertible {
    /// `POSTERN_DIRECTUS_ADMIN_EMAIL`.
    var email: String?
    /// `POSTERN_DIRECTUS_ADMIN_PASSWORD`.
    var password: String?
    /// `POSTERN_DIRECTUS_ADMIN_TOKEN` (preferred when set).
    var token: String?

    /// Builds credentials.
    init(email: String? = nil, password: String? = nil, token: String? = nil) {
        self.email = email
        self.password = password
        self.token = token
    }

    /// Names which credentials are set, never their values.
    package var description: String {
        token != nil ? "BootstrapCredentials(token)" : "BootstrapCredentials(email: \(email ?? "-"), password: <redacted>)"
    }
}

extension PosternConfig {
    /// Reads the Directus admin credentials for `postern bootstrap`: the token, or else both email and password.
    package static func bootstrapCredentials(
        environment: [String: String] = ProcessInfo.processInfo.environment
    ) -> Result<BootstrapCredentials, ConfigError> {
        func value(_ variable: String) -> String? {
            guard let v = environment[variable], !v.isEmpty else { return nil }
            return v
        }
        let credentials = BootstrapCredentials(email: value("POSTERN_DIRECTUS_ADMIN_EMAIL"),
                                               password: value("POSTERN_DIRECTUS_ADMIN_PASSWORD"),
                                               token: value("POSTERN_DIRECTUS_ADMIN_TOKEN"))
        if credentials.token != nil { return .success(credentials) }
        var problems: [ConfigProblem] = []
        let hint = "is required (or set POSTERN_DIRECTUS_ADMIN_TOKEN instead)"
        if credentials.email == nil { problems.append(ConfigProblem(path: "POSTERN_DIRECTUS_ADMIN_EMAIL", message: hint)) }
        if credentials.password == nil {
            problems.append(ConfigProblem(path: "POSTERN_DIRECTUS_ADMIN_PASSWORD", message: hint))
        }
        return problems.isEmpty ? .success(credentials) : .failure(ConfigError(problems: problems))
    }
}
