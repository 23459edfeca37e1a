/// One command of `postern`: what `postern <command> --help` prints, and the options its arguments are parsed
/// against (docs/api.md, Command line). Every command is an entry of `CommandUsage.all`, so a new command is an
/// entry there and a case in `CLI.run`; its `--help`, `-h` and unknown-option answers come with the entry.
struct CommandUsage: Sendable {
    /// An option a command takes.
    struct Option: Sendable {
        /// `--config`.
        let name: String
        /// The placeholder of the value that follows it (`FILE`), or nil for a flag.
        let value: String?
        /// One line on what it does.
        let help: String
    }

    /// The command's words after `postern` (`demo`, `sessions list`).
    let name: String
    /// The usage lines, each a whole command line (`postern demo [--config FILE] [--standin-port N]`).
    let synopsis: [String]
    /// What the command does: its line in `postern --help` and the first paragraph of its own help.
    let summary: String
    /// More of the command's help (exit statuses, where values come from); may be empty.
    var details = ""
    /// The options it takes.
    var options: [Option] = []
    /// How many plain arguments (not options) it takes at most.
    var maxArguments = 0
    /// Whether `postern --help` lists it (the test double `standin` is not).
    var listed = true

    /// `postern <name> --help`: the usage lines, what the command does, and its options.
    var help: String {
        var text = synopsis.enumerated()
            .map { ($0.offset == 0 ? "usage: " : "       ") + $0.element }
            .joined(separator: "\n")
        text += "\n\n" + Self.wrap(summary, indent: "")
        if !details.isEmpty { text += "\n\n" + Self.wrap(details, indent: "") }
        if !options.isEmpty {
            let labels = options.map { option in option.value.map { "\(option.name) \($0)" } ?? option.name }
            let width = labels.map(\.count).max() ?? 0
            text += "\n\noptions:"
            for (label, option) in zip(labels, options) {
                text += "\n  " + label + String(repeating: " ", count: width - label.count + 2) + option.help
            }
            text += "\n  " + "-h, --help".padding(width + 2) + "print this help and exit"
        }
        return text
    }
}

/// A command's arguments once parsed against its `CommandUsage`.
struct ParsedArguments: Sendable, Equatable {
    /// Each option given, by name: its value, or "" for a flag (the last one wins when repeated).
    var options: [String: String] = [:]
    /// The plain arguments, in order.
    var arguments: [String] = []

    /// The value of `name`, if given.
    subscript(_ name: String) -> String? { options[name] }
}

/// What a command's arguments ask for: to run, to print its help, or nothing valid (exit 2).
enum Invocation: Sendable, Equatable {
    /// Run with these arguments.
    case run(ParsedArguments)
    /// `--help` or `-h` was given; the plain arguments before it (`sessions list --help` has `["list"]`).
    case help(arguments: [String])
    /// The arguments are not valid: why.
    case usageError(String)
}

extension CommandUsage {
    /// Parses `arguments` (those after the command's words): `--name value`, `--name=value`, flags, plain
    /// arguments, and `--`, after which everything is a plain argument (a session id may start with `-`). A value
    /// that starts with `-` goes after `=` (`--admin-password=-x`), so that a forgotten value is not a silent one.
    /// `--help` or `-h` anywhere before `--` asks for help, whatever else is wrong.
    func parse(_ arguments: [String]) -> Invocation {
        var parsed = ParsedArguments()
        var problem: String?
        var rest = arguments[...]
        var plainOnly = false
        while let argument = rest.popFirst() {
            if plainOnly || argument == "-" || !argument.hasPrefix("-") {
                parsed.arguments.append(argument)
                continue
            }
            if argument == "--" {
                plainOnly = true
                continue
            }
            if argument == "--help" || argument == "-h" { return .help(arguments: parsed.arguments) }
            let (name, attached) = Self.split(argument)
            guard let option = options.first(where: { $0.name == name }) else {
                problem = problem ?? "unknown option \(name)"
                continue
            }
            switch (option.value, attached) {
            case (nil, nil):
                parsed.options[name] = ""
            case (nil, .some):
                problem = problem ?? "\(name) takes no value"
            case (let placeholder?, let value?):
                guard !value.isEmpty else {
                    problem = problem ?? "\(name) needs a value (\(placeholder))"
                    continue
                }
                parsed.options[name] = value
            case (let placeholder?, nil):
                guard let value = rest.first, !value.isEmpty, !value.hasPrefix("-") else {
                    problem = problem ?? "\(name) needs a value (\(placeholder))"
                    continue
                }
                parsed.options[name] = value
                rest = rest.dropFirst()
            }
        }
        if let problem { return .usageError(problem) }
        if parsed.arguments.count > maxArguments { return .usageError("unexpected argument \(parsed.arguments[maxArguments])") }
        return .run(parsed)
    }

    /// `--name=value` as (`--name`, `value`); anything else as (argument, nil).
    private static func split(_ argument: String) -> (name: String, value: String?) {
        guard argument.hasPrefix("--"), let equals = argument.firstIndex(of: "=") else { return (argument, nil) }
        return (String(argument[..<equals]), String(argument[argument.index(after: equals)...]))
    }
}

extension CommandUsage {
    /// `text` broken at spaces into lines of at most `width` characters (a longer word stays whole), each after `indent`.
    static func wrap(_ text: String, width: Int = 100, indent: String) -> String {
        var lines: [String] = []
        var line = ""
        for word in text.split(separator: " ") {
            if !line.isEmpty && indent.count + line.count + 1 + word.count > width {
                lines.append(indent + line)
                line = ""
            }
            line += (line.isEmpty ? "" : " ") + word
        }
        if !line.isEmpty { lines.append(indent + line) }
        return lines.joined(separator: "\n")
    }
}

extension String {
    /// The string followed by spaces up to `width` characters.
    fileprivate func padding(_ width: Int) -> String {
        self + String(repeating: " ", count: max(0, width - count))
    }
}
