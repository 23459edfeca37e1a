import Foundation

/// One JSON line per request on stdout; never tokens, passwords or bodies.
public final class AccessLog: @unchecked Sendable {
    /// Log levels, lowest first.
    public enum Level: Int, Sendable {
        case debug, info, warning, error

        /// Parses `debug`, `info`, `warning`, `error`.
        public init(_ text: String) {
            switch text {
            case "debug": self = .debug
            case "warning": self = .warning
            case "error": self = .error
            default: self = .info
            }
        }
    }

    private let level: Level
    private let lock = NSLock()
    private let sink: @Sendable (String) -> Void

    /// Logs at `level` and above to `sink` (stdout by default).
    public init(level: Level, sink: @escaping @Sendable (String) -> Void = AccessLog.stdout) {
        self.level = level
        self.sink = sink
    }

    /// Writes a line to stdout.
    public static let stdout: @Sendable (String) -> Void = { line in
        var bytes = Array(line.utf8)
        bytes.append(10)
        bytes.withUnsafeBytes { raw in _ = Glibc.write(1, raw.baseAddress, raw.count) }
    }

    /// A line for a finished request.
    func access(_ request: HTTPRequest, _ response: HTTPResponse, context: RequestContext, trace: RequestTrace) {
        guard level.rawValue <= Level.info.rawValue else { return }
        let ms = (ContinuousClock.now - context.startedAt).seconds * 1000
        var members: [(String, JSONValue)] = [
            ("time", .string(AccessLog.timestamp())), ("level", .string("info")), ("msg", .string("request")),
            ("request_id", .string(context.requestID)), ("method", .string(request.method.description)),
            ("route", .string(context.routePattern)), ("status", .int(Int64(response.status))),
            ("duration_ms", .double((ms * 1000).rounded() / 1000)),
            ("upstream_ms", .double((trace.upstreamSeconds * 1_000_000).rounded() / 1000)), ("client_ip", .string(context.clientIP)),
        ]
        if let user = trace.userID { members.append(("user_id", .string(user))) }
        write(.object(members))
    }

    /// A line for an error answer (the private cause, never a secret).
    func error(_ error: GatewayError, context: RequestContext) {
        let lineLevel: Level = error.status >= 500 ? .error : .debug
        guard lineLevel.rawValue >= level.rawValue else { return }
        var members: [(String, JSONValue)] = [
            ("time", .string(AccessLog.timestamp())), ("level", .string(lineLevel == .error ? "error" : "debug")),
            ("msg", .string(error.message)), ("code", .string(error.code.rawValue)), ("request_id", .string(context.requestID)),
        ]
        if let cause = error.cause { members.append(("cause", .string(cause))) }
        write(.object(members))
    }

    /// A free-form line (start-up, shutdown).
    public func event(_ level: Level, _ message: String, _ fields: [(String, JSONValue)] = []) {
        guard level.rawValue >= self.level.rawValue else { return }
        let name = ["debug", "info", "warning", "error"][level.rawValue]
        write(.object([("time", .string(AccessLog.timestamp())), ("level", .string(name)), ("msg", .string(message))] + fields))
    }

    private func write(_ value: JSONValue) {
        let line = value.text
        lock.withLock { sink(line) }
    }

    private static func timestamp() -> String {
        var tv = timeval()
        gettimeofday(&tv, nil)
        var t = time_t(tv.tv_sec)
        var parts = tm()
        gmtime_r(&t, &parts)
        return String(format: "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", parts.tm_year + 1900, parts.tm_mon + 1, parts.tm_mday,
                      parts.tm_hour, parts.tm_min, parts.tm_sec, Int(tv.tv_usec / 1000))
    }
}
