import PosternIO

/// One Redis reply, copied out of hiredis on the loop thread (plain bytes: safe to keep and send anywhere).
package enum RedisReply: Sendable, Equatable {
    /// A bulk string, binary-safe.
    case bulk([UInt8])
    /// A status reply such as `OK` or `PONG`.
    case status(String)
    /// An integer reply.
    case integer(Int64)
    /// An array reply (e.g. `MGET`, `EXEC`, or a Lua table).
    case array([RedisReply])
    /// The nil reply (a missing key, a nil element).
    case null
    /// An error reply inside an array (a top-level error reply is thrown as `RedisError.server`).
    case error(String)

    /// A bulk or status reply as UTF-8 text; nil for other kinds.
    package var string: String? {
        switch self {
        case .bulk(let bytes): return String(decoding: bytes, as: UTF8.self)
        case .status(let text): return text
        default: return nil
        }
    }

    /// The bytes of a bulk reply; nil for other kinds.
    package var bytes: [UInt8]? {
        if case .bulk(let bytes) = self { return bytes }
        return nil
    }

    /// An integer reply, or a bulk string holding a decimal integer; nil otherwise.
    package var integer: Int64? {
        switch self {
        case .integer(let value): return value
        case .bulk(let bytes): return Int64(String(decoding: bytes, as: UTF8.self))
        default: return nil
        }
    }

    /// The elements of an array reply; nil for other kinds.
    package var array: [RedisReply]? {
        if case .array(let elements) = self { return elements }
        return nil
    }

    /// True for the nil reply.
    package var isNull: Bool { self == .null }
}

/// Why a Redis command did not give a reply.
package enum RedisError: Error, Sendable, Equatable, CustomStringConvertible {
    /// No usable connection right now (Redis down or unreachable, reconnecting, AUTH or SELECT refused), or
    /// Redis answered that it cannot serve now (LOADING, BUSY, OOM, READONLY, NOAUTH, ...). The text says why,
    /// without secrets.
    case unavailable(String)
    /// The connection dropped while the command was in flight: it may or may not have run.
    case connectionLost
    /// No reply within the command timeout; the connection is dropped and re-established.
    case timeout
    /// Redis answered with an error reply about the command (e.g. `WRONGTYPE …`, or an error raised by a script).
    case server(String)
    /// The client was closed.
    case closed
    /// The `redis://` URL is not valid (the text names the problem, never the password).
    case invalidURL(String)
    /// The command cannot be sent (no arguments).
    case invalidCommand(String)

    /// The error for a top-level error reply: `.unavailable` when its code says Redis cannot serve right now
    /// (still loading its data after a restart, busy in a script, out of memory, read-only, wants a password),
    /// `.server` when the command itself was wrong.
    static func fromErrorReply(_ message: String) -> RedisError {
        let code = message.prefix { $0 != " " }
        switch code {
        case "LOADING", "BUSY", "MASTERDOWN", "TRYAGAIN", "CLUSTERDOWN", "NOAUTH", "OOM", "READONLY":
            return .unavailable("Redis answered \(message)")
        default:
            return .server(message)
        }
    }

    /// True when Redis could not be reached or did not answer: the caller answers 503, never a false 401.
    package var isUnavailable: Bool {
        switch self {
        case .unavailable, .connectionLost, .timeout, .closed: return true
        case .server, .invalidURL, .invalidCommand: return false
        }
    }

    /// A one-line explanation (no secrets).
    package var description: String {
        switch self {
        case .unavailable(let why): return "Redis unavailable: \(why)"
        case .connectionLost: return "the connection to Redis was lost during the command"
        case .timeout: return "Redis did not answer in time"
        case .server(let message): return "Redis error: \(message)"
        case .closed: return "the Redis client is closed"
        case .invalidURL(let why): return "invalid Redis URL: \(why)"
        case .invalidCommand(let why): return "invalid Redis command: \(why)"
        }
    }
}

/// One argument of a Redis command: text, raw bytes or an integer (sent as its decimal text).
package enum RedisArgument: Sendable, Equatable, ExpressibleByStringLiteral, ExpressibleByIntegerLiteral {
    /// UTF-8 text (a command name, a key).
    case string(String)
    /// Raw bytes (binary-safe values).
    case bytes([UInt8])
    /// An integer, sent in decimal.
    case integer(Int)

    /// A string literal is a `.string`.
    package init(stringLiteral value: String) { self = .string(value) }
    /// An integer literal is an `.integer`.
    package init(integerLiteral value: Int) { self = .integer(value) }

    /// Appends the argument's bytes to `buffer`.
    package func append(to buffer: inout [UInt8]) {
        switch self {
        case .string(let text): buffer.append(contentsOf: text.utf8)
        case .bytes(let bytes): buffer.append(contentsOf: bytes)
        case .integer(let value): buffer.append(contentsOf: String(value).utf8)
        }
    }
}

/// Timeouts and reconnection pacing of a Redis connection.
package struct RedisOptions: Sendable, Equatable {
    /// Seconds allowed to resolve, connect and log in (AUTH, SELECT) before the attempt counts as failed.
    var connectTimeout: Double
    /// Seconds a command may wait for its reply; past it the command fails with `.timeout` and the connection
    /// is re-established (Redis answers in order, so the commands behind it would wait as long).
    var commandTimeout: Double
    /// First pause before reconnecting after a failure; doubled after each failed attempt.
    var reconnectMinimum: Double
    /// Longest pause between reconnection attempts.
    var reconnectMaximum: Double

    /// Options with the defaults: connect 1 s, command 2 s, reconnect after 50 ms doubling up to 2 s.
    package init(connectTimeout: Double = 1, commandTimeout: Double = 2, reconnectMinimum: Double = 0.05,
                reconnectMaximum: Double = 2) {
        self.connectTimeout = connectTimeout
        self.commandTimeout = commandTimeout
        self.reconnectMinimum = reconnectMinimum
        self.reconnectMaximum = max(reconnectMinimum, reconnectMaximum)
    }
}
