/// An integer setting's allowed range and the message that names it.
import PosternHTTP

struct IntRule: Sendable {
    /// Smallest allowed value.
    let min: Int
    /// Largest allowed value, if any.
    let max: Int?

    /// The problem message for a value of the wrong type or outside the range.
    var message: String {
        if let max { return "must be an integer between \(min) and \(max)" }
        switch min {
        case 0: return "must be an integer >= 0"
        case 1: return "must be a positive integer"
        default: return "must be an integer >= \(min)"
        }
    }

    /// Whether `value` is allowed.
    func allows(_ value: Int) -> Bool {
        value >= min && (max.map { value <= $0 } ?? true)
    }

    /// `workers` (0 = one per core).
    static let workers = IntRule(min: 0, max: 1024)
    /// `directus.timeout_ms`.
    static let timeoutMs = IntRule(min: 1, max: 600_000)
    /// `directus.max_connections_per_worker`.
    static let connections = IntRule(min: 1, max: 10_000)
    /// `directus.pipeline_depth`.
    static let pipelineDepth = IntRule(min: 1, max: 64)
    /// `directus.max_response_bytes` (1 KiB to 1 GiB).
    static let responseBytes = IntRule(min: 1024, max: 1 << 30)
    /// `directus.keepalive_idle_ms`.
    static let keepaliveIdleMs = IntRule(min: 1, max: 600_000)
    /// `directus.max_waiting_per_worker` (0: never wait for a connection).
    static let waiting = IntRule(min: 0, max: 1_000_000)
    /// TTLs, timeouts, limits.
    static let positive = IntRule(min: 1, max: nil)
    /// Rate limits (0 disables) and cache lifetimes.
    static let nonNegative = IntRule(min: 0, max: nil)
    /// `limits.max_body_bytes`, capped by the server's own ceiling.
    static let bodyBytes = IntRule(min: 1, max: LimitsConfig.maxBodyBytesCeiling)
    /// `rate_limits.max_buckets`.
    static let buckets = IntRule(min: 1, max: RateLimitsConfig.maxBucketsCeiling)
}

/// Reads typed values out of a `JSONValue` tree, collecting a problem (with its key path) for every
/// wrong type, unknown key or duplicate key instead of stopping at the first.
struct ConfigReader {
    /// Problems found so far.
    var problems: [ConfigProblem] = []

    /// Records a problem at `path`.
    mutating func report(_ path: String, _ message: String) {
        problems.append(ConfigProblem(path: path, message: message))
    }

    /// The members of an object, reporting a non-object, unknown keys and duplicate keys
    /// (`path` "" is the top level, reported as `config`).
    mutating func object(_ value: JSONValue, at path: String, keys: [String]) -> [String: JSONValue]? {
        guard let members = value.objectValue else {
            report(path.isEmpty ? "config" : path, "must be a JSON object, not \(value.typeName)")
            return nil
        }
        var result: [String: JSONValue] = [:]
        for (key, member) in members {
            let memberPath = ConfigReader.join(path, key)
            guard keys.contains(key) else {
                var message = "unknown key"
                if let near = ConfigReader.nearest(key, in: keys) { message += " (did you mean \"\(near)\"?)" }
                report(memberPath, message)
                continue
            }
            guard result[key] == nil else {
                report(memberPath, "duplicate key")
                continue
            }
            result[key] = member
        }
        return result
    }

    /// An integer member, or nil (reported) when it is not an integer.
    mutating func int(_ members: [String: JSONValue], _ key: String, at path: String, rule: IntRule) -> Int? {
        guard let value = members[key] else { return nil }
        guard let i = value.intValue, let int = Int(exactly: i) else {
            report(ConfigReader.join(path, key), rule.message)
            return nil
        }
        return int
    }

    /// A string member, or nil (reported) when it is not a string.
    mutating func string(_ members: [String: JSONValue], _ key: String, at path: String) -> String? {
        guard let value = members[key] else { return nil }
        guard let s = value.stringValue else {
            report(ConfigReader.join(path, key), "must be a string, not \(value.typeName)")
            return nil
        }
        return s
    }

    /// A boolean member, or nil (reported) when it is not a boolean.
    mutating func bool(_ members: [String: JSONValue], _ key: String, at path: String) -> Bool? {
        guard let value = members[key] else { return nil }
        guard case .bool(let b) = value else {
            report(ConfigReader.join(path, key), "must be true or false, not \(value.typeName)")
            return nil
        }
        return b
    }

    /// An array-of-strings member, or nil (reported) when it is not one.
    mutating func strings(_ members: [String: JSONValue], _ key: String, at path: String) -> [String]? {
        guard let value = members[key] else { return nil }
        let memberPath = ConfigReader.join(path, key)
        guard let elements = value.arrayValue else {
            report(memberPath, "must be an array of strings, not \(value.typeName)")
            return nil
        }
        var result: [String] = []
        var ok = true
        for (i, element) in elements.enumerated() {
            if let s = element.stringValue {
                result.append(s)
            } else {
                report("\(memberPath)[\(i)]", "must be a string, not \(element.typeName)")
                ok = false
            }
        }
        return ok ? result : nil
    }

    /// `path.key`, or just `key` at the top level.
    static func join(_ path: String, _ key: String) -> String {
        path.isEmpty ? key : "\(path).\(key)"
    }

    /// The allowed key closest to a misspelt one (edit distance at most 2), for a "did you mean".
    static func nearest(_ key: String, in keys: [String]) -> String? {
        let scored = keys.map { ($0, distance(Array(key), Array($0))) }
        guard let best = scored.min(by: { $0.1 < $1.1 }), best.1 <= 2 else { return nil }
        return best.0
    }

    /// Levenshtein distance between two strings.
    static func distance(_ a: [Character], _ b: [Character]) -> Int {
        if a.isEmpty { return b.count }
        if b.isEmpty { return a.count }
        var previous = Array(0...b.count)
        for i in 1...a.count {
            var current = [i] + Array(repeating: 0, count: b.count)
            for j in 1...b.count {
                let cost = a[i - 1] == b[j - 1] ? 0 : 1
                current[j] = Swift.min(previous[j] + 1, current[j - 1] + 1, previous[j - 1] + cost)
            }
            previous = current
        }
        return previous[b.count]
    }
}
