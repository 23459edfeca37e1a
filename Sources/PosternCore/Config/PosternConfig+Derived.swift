import FoundationEssentials
import PosternIO

/// Where sessions are kept, parsed from `sessions.store`.
enum SessionStoreKind: Sendable, Equatable {
    /// In process memory (tests; sessions die with the process).
    case memory
    /// An embedded SQLite file at this path.
    case sqlite(path: String)
    /// A Redis server (`redis://`, or `rediss://` over TLS).
    case redis(HostPort)

    /// Parses `memory`, `sqlite:<path>` or `redis[s]://[[user]:password@]host:port[/db]`; nil for anything else.
    init?(_ text: String) {
        if text == "memory" {
            self = .memory
        } else if text.hasPrefix("sqlite:") {
            let path = String(text.dropFirst("sqlite:".count))
            guard !path.isEmpty else { return nil }
            self = .sqlite(path: path)
        } else if let url = RedisURL(text) {
            self = .redis(url.address)
        } else {
            return nil
        }
    }
}

extension LimitsConfig {
    /// The largest body the server reads at all (8 MiB); `maxBodyBytes` may not exceed it.
    static let maxBodyBytesCeiling = 8 * 1024 * 1024

    /// The body size above which the server refuses a request itself (the 413, before reading the
    /// body): twice `maxBodyBytes`, at least 64 KiB above it, at most 8 MiB. Between `maxBodyBytes` and
    /// this ceiling Postern answers the JSON 413 (docs/api.md, Limits and defaults).
    var bodyCeiling: Int {
        min(LimitsConfig.maxBodyBytesCeiling, max(maxBodyBytes * 2, maxBodyBytes + 64 * 1024))
    }
}

extension SessionsConfig {
    /// The parsed `store`; nil only when the config was not validated.
    var storeKind: SessionStoreKind? { SessionStoreKind(store) }

    /// The parsed `redis[s]://` URL of a Redis store (user, password, TLS and database included); nil for other
    /// stores.
    var redisURL: RedisURL? { RedisURL(store) }
}

extension PosternConfig {
    /// The parsed `listen`; nil only when the config was not validated.
    package var listenAddress: HostPort? { HostPort(listen) }

    /// The parsed `admin_listen`; nil only when the config was not validated.
    package var adminListenAddress: HostPort? { HostPort(adminListen) }

    /// The number of event-loop threads to run: `workers`, or one per core when it is 0.
    var effectiveWorkers: Int {
        workers > 0 ? workers : max(1, ProcessInfo.processInfo.activeProcessorCount)
    }

    /// The 32 bytes of `secretKey`; nil when no key is set (or it is not valid base64 of 32 bytes).
    var secretKeyBytes: [UInt8]? {
        guard let secretKey, let data = Data(base64Encoded: secretKey.trimmedSpaces()),
              data.count == 32 else { return nil }
        return [UInt8](data)
    }

    /// The log levels `POSTERN_LOG_LEVEL` accepts, least severe first.
    static let logLevels = ["debug", "info", "notice", "warning", "error"]
}

extension ResourceConfig {
    /// The most `search_fields` a resource may have: Directus's query parser (`qs`) turns a list with an
    /// index above 20 into an object, so `filter[_or][21]…` would no longer be a list.
    static let maxSearchFields = 20

    /// The resource fields `search` looks in: `search_fields`, or the writable fields when it is not set.
    var effectiveSearchFields: [String] { searchFields ?? writable }
}
