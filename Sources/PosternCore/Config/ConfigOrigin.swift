import FoundationEssentials
import PosternHTTP
import PosternIO

/// A configuration value that came from the environment rather than the file (`postern check` prints one line
/// each), and whether it replaced a value the file sets: an image's `ENV` must not silently win over a mounted file.
package struct ConfigOrigin: Sendable, Equatable, CustomStringConvertible {
    /// The key path it sets (`listen`, `directus.url`, `resources[*].cache.ttl_ms`).
    var key: String
    /// The environment variable it came from (`POSTERN_LISTEN`).
    var variable: String
    /// True when the config file sets the same key, so that the file's value is not used.
    var overridesFile: Bool

    /// Builds an origin.
    init(key: String, variable: String, overridesFile: Bool) {
        self.key = key
        self.variable = variable
        self.overridesFile = overridesFile
    }

    /// `listen: from POSTERN_LISTEN`, plus what it overrode; never the value (it may be a secret).
    package var description: String {
        "\(key): from \(variable)" + (overridesFile ? " (the file's value is not used)" : "")
    }
}

extension PosternConfig {
    /// The values the environment sets (in `environmentOverrides` order), each with whether the file's `json` sets
    /// the same key. Counts a variable exactly as loading does: set and not blank, valid or not.
    static func environmentOrigins(json: Data?, environment: [String: String]) -> [ConfigOrigin] {
        let root = json.flatMap { try? JSONValue.parse($0) }
        return environmentOverrides.compactMap { variable, key in
            guard let raw = environment[variable], !raw.trimmedSpaces().isEmpty else { return nil }
            return ConfigOrigin(key: key, variable: variable, overridesFile: root.map { fileSets(key, in: $0) } ?? false)
        }
    }

    /// `environmentOrigins(json:environment:)` for the file that `load(configPath:environment:)` reads, if any.
    package static func environmentOrigins(configPath: String?, environment: [String: String]) -> [ConfigOrigin] {
        let json = resolvedPath(configPath: configPath, environment: environment)
            .flatMap { FileManager.default.contents(atPath: $0) }
        return environmentOrigins(json: json, environment: environment)
    }

    /// Whether the parsed file has `key` (a dotted path; `resources[*]` means any resource).
    static func fileSets(_ key: String, in root: JSONValue) -> Bool {
        var values = [root]
        for part in key.split(separator: ".") {
            if part == "resources[*]" {
                values = values.compactMap { $0["resources"]?.arrayValue }.flatMap { $0 }
            } else {
                values = values.compactMap { $0[String(part)] }
            }
        }
        return !values.isEmpty
    }
}
