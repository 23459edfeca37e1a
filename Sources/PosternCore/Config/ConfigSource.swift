import FoundationEssentials

/// Where a running gateway reads its config again (docs/api.md, Reloading the config): the file it started
/// from, with the environment as it was at start, or (in process) any loader.
package struct ConfigSource: Sendable {
    /// Reads and validates the config; called off the event loops.
    let load: @Sendable () -> Result<PosternConfig, ConfigError>
    /// The file that `POSTERN_CONFIG_WATCH` watches (nil: no file, nothing to watch).
    let path: String?
    /// True when `POSTERN_CONFIG_WATCH=1`: the file is polled every 2 s and reloaded when it changes.
    let watch: Bool

    /// A source with its own loader (tests).
    init(path: String? = nil, watch: Bool = false, load: @escaping @Sendable () -> Result<PosternConfig, ConfigError>) {
        self.path = path
        self.watch = watch
        self.load = load
    }

    /// The file `serve` started from (`--config`, `POSTERN_CONFIG`, or `config/postern.json`), resolved once,
    /// read again with `environment` (the environment at start) applied over it.
    package static func file(configPath: String?, environment: [String: String]) -> ConfigSource {
        let path = PosternConfig.resolvedPath(configPath: configPath, environment: environment)
        return ConfigSource(path: path, watch: watchRequested(environment)) {
            PosternConfig.load(configPath: path, environment: environment)
        }
    }

    /// A source that always gives `config` (a gateway built from a config value: a reload changes nothing).
    static func fixed(_ config: PosternConfig) -> ConfigSource {
        ConfigSource { .success(config) }
    }

    /// The variable that turns the watch on.
    static let watchVariable = "POSTERN_CONFIG_WATCH"

    /// Whether `POSTERN_CONFIG_WATCH` asks for the watch (`1`, `true` or `yes`).
    static func watchRequested(_ environment: [String: String]) -> Bool {
        guard let value = environment[watchVariable]?.trimmedSpaces().lowercased() else { return false }
        return ["1", "true", "yes"].contains(value)
    }
}
