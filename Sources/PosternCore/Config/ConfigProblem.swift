/// One thing wrong with the configuration, named by its key path (`directus.timeout_ms`,
/// `resources[1].permissions.update`) or by the environment variable it came from.
package struct ConfigProblem: Sendable, Equatable, CustomStringConvertible {
    /// Key path in the config file, an environment variable name, or `config` for the file itself.
    var path: String
    /// What is wrong, and what would be right.
    var message: String

    /// Builds a problem.
    init(path: String, message: String) {
        self.path = path
        self.message = message
    }

    /// `path: message`, the form `postern check` prints.
    package var description: String { "\(path): \(message)" }
}

/// Every problem found while loading a configuration (never just the first).
package struct ConfigError: Error, Sendable, Equatable, CustomStringConvertible {
    /// The problems, in the order they were found.
    package var problems: [ConfigProblem]

    /// Builds an error from its problems.
    init(problems: [ConfigProblem]) {
        self.problems = problems
    }

    /// One problem per line.
    package var description: String { problems.map(\.description).joined(separator: "\n") }
}
