import FoundationEssentials
import PosternHTTP

/// The sanitized query of an `/items` request (`sanitize-query.ts` + `validate-query.ts`), before field checks.
struct ItemQuery: Sendable {
    /// `fields`, nil for the default `*`.
    var fields: [String]?
    /// `limit`, nil for the default.
    var limit: Int?
    /// `offset`.
    var offset: Int?
    /// `page` (1-based).
    var page: Int?
    /// `sort` entries (`-field` for descending).
    var sort: [String]?
    /// `search`.
    var search: String?
    /// `filter`, as JSON after coercion.
    var filter: JSONValue?
    /// `meta` entries: `total_count`, `filter_count`.
    var meta: [String] = []
    /// `deep`, as JSON (`deep[comments][_limit]=5` or `deep={"comments":{"_limit":5}}`).
    var deep: JSONValue?

    /// Parses and validates the query parameters; 400 `INVALID_QUERY` on bad values.
    static func parse(_ items: [(name: String, value: String)]) throws -> ItemQuery {
        var query = ItemQuery()
        var filterTree: QSNode?
        var deepTree: QSNode?
        var rawLimit: String?
        var rawOffset: String?
        var rawPage: String?
        var rawMeta: [String]?
        for (name, value) in items {
            let (base, path) = splitBrackets(name)
            switch base {
            case "fields":
                query.fields = (query.fields ?? []) + csv(value)
            case "sort":
                query.sort = (query.sort ?? []) + csv(value)
            case "meta":
                rawMeta = (rawMeta ?? []) + csv(value)
            case "limit" where path.isEmpty: rawLimit = value
            case "offset" where path.isEmpty: rawOffset = value
            case "page" where path.isEmpty: rawPage = value
            case "search" where path.isEmpty: query.search = value
            case "filter":
                if path.isEmpty {
                    guard let parsed = try? JSONValue.parse(value), parsed.objectValue != nil || parsed.arrayValue != nil else {
                        throw StandInError.invalidQuery("Invalid JSON for filter object")
                    }
                    query.filter = parsed
                } else {
                    var tree = filterTree ?? .map([])
                    tree.insert(path[...], value)
                    filterTree = tree
                }
            case "deep":
                if path.isEmpty {
                    guard let parsed = try? JSONValue.parse(value), parsed.objectValue != nil else {
                        throw StandInError.invalidQuery("Invalid JSON for deep object")
                    }
                    query.deep = parsed
                } else {
                    var tree = deepTree ?? .map([])
                    tree.insert(path[...], value)
                    deepTree = tree
                }
            default:
                continue
            }
        }
        if query.deep == nil, let deepTree { query.deep = deepTree.json }
        if query.filter == nil, let filterTree { query.filter = filterTree.json }
        if let filter = query.filter { query.filter = sanitizeFilter(filter, operatorKey: nil) }
        query.limit = try integer("limit", rawLimit, minimum: -1)
        query.offset = try integer("offset", rawOffset, minimum: 0)
        query.page = try integer("page", rawPage, minimum: 0)
        if let rawMeta {
            for (index, entry) in rawMeta.enumerated() {
                switch entry {
                case "*": query.meta += ["total_count", "filter_count"]
                case "total_count", "filter_count": query.meta.append(entry)
                default: throw StandInError.invalidQuery("\"meta[\(index)]\" must be one of [total_count, filter_count]")
                }
            }
        }
        return query
    }

    /// `Number(raw)` then Joi's `number().integer().min(minimum)`.
    private static func integer(_ name: String, _ raw: String?, minimum: Int) throws -> Int? {
        guard let raw else { return nil }
        let trimmed = trim(raw)
        if trimmed.isEmpty { return 0 }
        guard let number = Double(trimmed), number.isFinite else { throw StandInError.invalidQuery("\"\(name)\" must be a number") }
        guard number == number.rounded(), abs(number) < 9e15 else {
            throw StandInError.invalidQuery("\"\(name)\" must be an integer")
        }
        guard Int(number) >= minimum else {
            throw StandInError.invalidQuery("\"\(name)\" must be greater than or equal to \(minimum)")
        }
        return Int(number)
    }

    /// Splits `filter[title][_eq]` into `filter` and `["title", "_eq"]`.
    private static func splitBrackets(_ name: String) -> (String, [String]) {
        guard let open = name.firstIndex(of: "["), name.hasSuffix("]") else { return (name, []) }
        let base = String(name[..<open])
        let inner = name[name.index(after: open)..<name.index(before: name.endIndex)]
        return (base, inner.components(separatedBy: "]["))
    }

    /// Comma-separated values, trimmed, empty ones dropped.
    private static func csv(_ value: String) -> [String] {
        value.split(separator: ",").map { trim($0) }.filter { !$0.isEmpty }
    }

    /// `text` without leading and trailing spaces and tabs (Foundation's `trimmingCharacters` is slow).
    private static func trim<S: StringProtocol>(_ text: S) -> String {
        let bytes = Array(text.utf8)
        var start = 0
        var end = bytes.count
        while start < end, bytes[start] == 0x20 || bytes[start] == 0x09 { start += 1 }
        while end > start, bytes[end - 1] == 0x20 || bytes[end - 1] == 0x09 { end -= 1 }
        return String(decoding: bytes[start..<end], as: UTF8.self)
    }

    /// Coerces `"true"`, `"false"`, `"null"`, `"NULL"` and splits CSV operands of `_in`, `_nin`, `_between`, `_nbetween`.
    private static func sanitizeFilter(_ value: JSONValue, operatorKey: String?) -> JSONValue {
        switch value {
        case .object(let members):
            return .object(members.map { ($0.0, sanitizeFilter($0.1, operatorKey: $0.0)) })
        case .array(let elements):
            return .array(elements.map { sanitizeFilter($0, operatorKey: nil) })
        case .string(let text):
            if let op = operatorKey, ["_in", "_nin", "_between", "_nbetween"].contains(op) {
                return .array(text.split(separator: ",", omittingEmptySubsequences: false).map { .string(String($0)) })
            }
            switch text {
            case "true": return .bool(true)
            case "false": return .bool(false)
            case "null", "NULL": return .null
            default: return value
            }
        default:
            return value
        }
    }
}

/// A `qs`-style bracket tree (`a[b][0]=x`), turned into JSON once complete.
indirect enum QSNode: Sendable {
    /// A leaf value.
    case value(String)
    /// Keyed children, in insertion order.
    case map([(String, QSNode)])

    /// Inserts `value` at `path` (an empty segment, `[]`, appends).
    mutating func insert(_ path: ArraySlice<String>, _ value: String) {
        guard let head = path.first else {
            if case .value(let old) = self {
                self = .map([("0", .value(old)), ("1", .value(value))])
            } else if case .map(let members) = self, !members.isEmpty {
                self = .map(members + [(String(members.count), .value(value))])
            } else {
                self = .value(value)
            }
            return
        }
        var members: [(String, QSNode)] = []
        if case .map(let existing) = self { members = existing }
        let key = head.isEmpty ? String(members.count) : head
        if let index = members.firstIndex(where: { $0.0 == key }) {
            members[index].1.insert(path.dropFirst(), value)
        } else {
            var child = QSNode.map([])
            child.insert(path.dropFirst(), value)
            members.append((key, child))
        }
        self = .map(members)
    }

    /// The tree as JSON: maps whose keys are all indexes become arrays.
    var json: JSONValue {
        switch self {
        case .value(let text):
            return .string(text)
        case .map(let members):
            let indexes = members.compactMap { Int($0.0) }
            if !members.isEmpty, indexes.count == members.count {
                return .array(members.sorted { Int($0.0) ?? 0 < Int($1.0) ?? 0 }.map(\.1.json))
            }
            return .object(members.map { ($0.0, $0.1.json) })
        }
    }
}
