extension CommandUsage {
    /// `--config FILE`, taken by every command that reads the config.
    static let config = Option(name: "--config", value: "FILE",
                               help: "the config file (default: POSTERN_CONFIG, else config/postern.json if it exists)")
    /// `--admin URL` of the commands that call a running gateway's admin listener.
    static let admin = Option(name: "--admin", value: "URL",
                              help: "the admin listener to call, http://host:port (default: admin_listen, POSTERN_ADMIN_LISTEN)")
    /// `--json` of the same commands.
    static let json = Option(name: "--json", value: nil, help: "print the answer's body as it came instead of a table")

    /// Every command, in the order `postern --help` lists them (docs/api.md, Command line).
    static let all: [CommandUsage] = [
        CommandUsage(name: "serve", synopsis: ["postern serve [--config FILE]"],
                     summary: "Runs the gateway (also what `postern` does with no command). Exits 0 on SIGTERM or SIGINT "
                         + "after the requests in flight, non-zero with a one-line reason when it cannot start.",
                     options: [config]),
        CommandUsage(name: "check", synopsis: ["postern check [--config FILE]"],
                     summary: "Validates the config, prints every problem by its key path, exits 1 on any; with a Redis "
                         + "store, connects to it once (a Redis that refuses the gateway is a problem); then names "
                         + "every value that came from the environment rather than the file.",
                     options: [config]),
        CommandUsage(name: "demo", synopsis: ["postern demo [--config FILE] [--standin-port N]"],
                     summary: "The gateway (on listen, :8080 by default) in front of the built-in, in-memory Directus "
                         + "stand-in on 127.0.0.1:8055, seeded with x@y.com / 123456 and a few posts; sessions in memory.",
                     options: [config, Option(name: "--standin-port", value: "N",
                                              help: "the stand-in's port (0: any free port)")]),
        CommandUsage(name: "openapi", synopsis: ["postern openapi [--config FILE]"],
                     summary: "Prints the OpenAPI 3.1 document of the configured API (as served at /api/v1/openapi.json).",
                     options: [config]),
        CommandUsage(name: "bootstrap", synopsis: ["postern bootstrap [--config FILE]"],
                     summary: "Prepares a fresh Directus 11 for Postern through its REST API (collection, role, policy, "
                         + "permissions, registration); idempotent (docs/bootstrap.md).",
                     details: "The Directus admin's credentials come from POSTERN_DIRECTUS_ADMIN_EMAIL and "
                         + "POSTERN_DIRECTUS_ADMIN_PASSWORD, or POSTERN_DIRECTUS_ADMIN_TOKEN.",
                     options: [config]),
        CommandUsage(name: "healthcheck", synopsis: ["postern healthcheck [--config FILE]"],
                     summary: "Exits 0 when the local gateway's /healthz answers 200 within 3 s, else 1 "
                         + "(Docker's HEALTHCHECK; the image has no curl).",
                     options: [config]),
        CommandUsage(name: "sessions", synopsis: sessionsList + sessionsRevoke,
                     summary: "Lists or ends a user's sessions through the running gateway's admin listener.",
                     details: sessionsDetails, options: sessionsOptions, maxArguments: 2),
        CommandUsage(name: "sessions list", synopsis: sessionsList,
                     summary: "Lists the user's live sessions: a table (id prefix, user id, e-mail, created, last seen, "
                         + "client IP, user agent), or `no live sessions for …`.",
                     details: sessionsDetails, options: sessionsOptions, listed: false),
        CommandUsage(name: "sessions revoke", synopsis: sessionsRevoke,
                     summary: "Ends one session (a full id, or the first 8 or more characters of exactly one; after `--` "
                         + "when it starts with -), or every session of a user.",
                     details: sessionsDetails, options: sessionsOptions, listed: false),
        CommandUsage(name: "reload", synopsis: ["postern reload [--json] [--admin URL] [--config FILE]"],
                     summary: "Asks the running gateway to read its config file again, without a restart "
                         + "(POST /admin/reload on its admin listener; SIGHUP does the same).",
                     details: "Prints `reloaded: config generation N`, or `unchanged: config generation N keeps serving`. "
                         + "The admin token is POSTERN_ADMIN_TOKEN (admin.token). Exit status: 0 reloaded or unchanged; 1 "
                         + "refused (an invalid file, each problem on standard error; a key only a restart can change; a "
                         + "wrong token), or the admin listener unreachable; 2 usage or configuration.",
                     options: [Option(name: "--json", value: nil, help: "print the answer's body as it came"), admin, config]),
        CommandUsage(name: "version", synopsis: ["postern version"], summary: "Prints the version."),
        CommandUsage(name: "standin",
                     synopsis: ["postern standin [PORT [ACCESS_TOKEN_TTL_S]] [--host HOST] [--unbootstrapped] "
                                + "[--admin-email EMAIL] [--admin-password PASSWORD]"],
                     summary: "Serves only the in-memory Directus stand-in (default 127.0.0.1:8055; admin "
                         + "admin@example.com / admin-password) until SIGTERM or SIGINT: a test double for benchmarks and "
                         + "the compose smoke test, not a Directus.",
                     options: [Option(name: "--host", value: "HOST", help: "the address to listen on (default 127.0.0.1)"),
                               Option(name: "--unbootstrapped", value: nil,
                                      help: "start like a fresh Directus, with only the admin (for postern bootstrap)"),
                               Option(name: "--admin-email", value: "EMAIL", help: "the admin's e-mail"),
                               Option(name: "--admin-password", value: "PASSWORD", help: "the admin's password")],
                     maxArguments: 2, listed: false),
    ]

    private static let sessionsList = ["postern sessions list --user <email or user id> [--json] [--admin URL] [--config FILE]"]
    private static let sessionsRevoke = [
        "postern sessions revoke <session id or prefix> [--json] [--admin URL] [--config FILE]",
        "postern sessions revoke --user <user id> [--json] [--admin URL] [--config FILE]",
    ]
    private static let sessionsOptions = [
        Option(name: "--user", value: "USER", help: "the user: an e-mail or a user id (list), a user id (revoke)"),
        json, admin, config,
    ]
    private static let sessionsDetails = """
        The admin token is POSTERN_ADMIN_TOKEN (admin.token). Exit status: 0 done; 1 refused or not found (the \
        gateway's error on standard error), or the admin listener unreachable; 2 usage or configuration.
        """

    /// The entry named `name` (`sessions list`), if any.
    static func named(_ name: String) -> CommandUsage? {
        all.first { $0.name == name }
    }

    /// `postern --help`: every listed command's usage lines and what it does.
    static var overview: String {
        var text = "usage: postern <command> [options]   (no command: serve)\n"
        for command in all where command.listed {
            text += "\n" + command.synopsis.map { "  " + $0 }.joined(separator: "\n") + "\n" + wrap(command.summary, indent: "      ")
        }
        return text + "\n\n`postern <command> --help` prints a command's usage and options."
    }
}
