import PosternHTTP

/// What one output field of a resource reads (docs/api.md, Relations): a Directus field or a dot path
/// through many-to-one relations, a nested object, or a one-to-many list.
package indirect enum FieldSpec: Sendable, Equatable, ExpressibleByStringLiteral {
    /// `"title"`, or `"user_created.first_name"` through a many-to-one relation.
    case path(String)
    /// `{"id": "user_created.id", "name": "user_created.first_name"}`: its members in output order.
    case object([(String, FieldSpec)])
    /// `{"from": "comments", "fields": {…}, "sort": "-date_created", "limit": 5}`.
    case list(ListSpec)

    /// A plain path.
    package init(stringLiteral value: String) {
        self = .path(value)
    }

    /// Equal when the same shape reads the same paths, members compared in order.
    package static func == (lhs: FieldSpec, rhs: FieldSpec) -> Bool {
        switch (lhs, rhs) {
        case (.path(let a), .path(let b)): return a == b
        case (.object(let a), .object(let b)): return FieldSpec.sameMembers(a, b)
        case (.list(let a), .list(let b)): return a == b
        default: return false
        }
    }

    /// Whether two member lists have the same names and specs in the same order.
    static func sameMembers(_ a: [(String, FieldSpec)], _ b: [(String, FieldSpec)]) -> Bool {
        a.count == b.count && zip(a, b).allSatisfy { $0.0 == $1.0 && $0.1 == $1.1 }
    }

    /// The path of a plain field (`.path`), else nil.
    var pathValue: String? {
        if case .path(let path) = self { return path }
        return nil
    }

    /// Whether this reads through a relation: a dot path, a nested object or a list.
    var isRelated: Bool {
        if case .path(let path) = self { return path.contains(".") }
        return true
    }

    /// The config JSON of this spec (as `postern check --print` shows it).
    var json: JSONValue {
        switch self {
        case .path(let path): return .string(path)
        case .object(let members): return .object(members.map { ($0.0, $0.1.json) })
        case .list(let list):
            var members: [(String, JSONValue)] = [("from", .string(list.from)),
                                                  ("fields", .object(list.fields.map { ($0.0, $0.1.json) }))]
            if let sort = list.sort { members.append(("sort", .string(sort))) }
            members.append(("limit", .int(Int64(list.limit))))
            return .object(members)
        }
    }
}

/// A one-to-many list through an alias field (docs/api.md, Relations).
package struct ListSpec: Sendable, Equatable {
    /// The largest `limit`.
    static let maxLimit = 100
    /// `limit` when none is given.
    static let defaultLimit = 10

    /// The alias field (`comments`).
    var from: String
    /// The fields of each row, same grammar as a resource's `fields` (paths relative to the row).
    var fields: [(String, FieldSpec)]
    /// Directus fields of the listed rows, `-` for descending, comma-separated; nil for Directus's order.
    var sort: String?
    /// How many rows, 1–100.
    var limit: Int

    /// A list of `limit` rows of `from`.
    init(from: String, fields: [(String, FieldSpec)], sort: String? = nil, limit: Int = ListSpec.defaultLimit) {
        self.from = from
        self.fields = fields
        self.sort = sort
        self.limit = limit
    }

    /// Equal when every setting is equal (fields compared in order).
    package static func == (lhs: ListSpec, rhs: ListSpec) -> Bool {
        lhs.from == rhs.from && FieldSpec.sameMembers(lhs.fields, rhs.fields) && lhs.sort == rhs.sort && lhs.limit == rhs.limit
    }
}

extension ResourceConfig {
    /// The most segments of a path, a list's alias included.
    static let maxPathSegments = 3

    /// Whether any field or detail field reads through a relation.
    var readsRelations: Bool {
        fields.contains { $0.1.isRelated } || detailFields.contains { $0.1.isRelated }
    }

    /// The problems of `fields` and `detail_fields` (the grammar of docs/api.md, Relations), named under `path`.
    func fieldProblems(at path: String) -> [ConfigProblem] {
        var problems: [ConfigProblem] = []
        var seen = Set<String>()
        for (name, spec) in fields {
            seen.insert(name)
            problems += Self.problems(name, spec, at: "\(path).fields.\(name)", prefix: 0, inList: false)
        }
        for (name, spec) in detailFields {
            let key = "\(path).detail_fields.\(name)"
            if !seen.insert(name).inserted {
                problems.append(ConfigProblem(path: key, message: "\"\(name)\" is already a field of this resource"))
            }
            problems += Self.problems(name, spec, at: key, prefix: 0, inList: false)
        }
        return problems
    }

    /// The problems of one output field `name` (at `key`), whose paths are below `prefix` segments (a list's alias).
    private static func problems(_ name: String, _ spec: FieldSpec, at key: String, prefix: Int,
                                 inList: Bool) -> [ConfigProblem] {
        var problems: [ConfigProblem] = []
        func report(_ message: String) { problems.append(ConfigProblem(path: key, message: message)) }
        if !isFieldName(name, allowDash: false) {
            report("a resource field name must match [A-Za-z_][A-Za-z0-9_]*")
        }
        switch spec {
        case .path(let text):
            let segments = text.split(separator: ".", omittingEmptySubsequences: false).map(String.init)
            if !segments.allSatisfy({ isFieldName($0, allowDash: false) }) {
                report("must name a Directus field or a dot path of them: letters, digits and _ (got \"\(text)\")")
            } else if segments.count + prefix > maxPathSegments {
                report("\"\(text)\" has more than \(maxPathSegments) segments\(prefix > 0 ? " with the list's alias" : "")")
            } else if let last = segments.last, concealedFields.contains(last) {
                report("\"\(text)\" ends in \(last), which Directus conceals")
            }
        case .object(let members):
            if members.isEmpty { report("a nested object needs at least one field") }
            for (member, inner) in members {
                problems += Self.problems(member, inner, at: "\(key).\(member)", prefix: prefix, inList: inList)
            }
        case .list(let list):
            if inList {
                report("a list cannot hold another list")
            }
            if !isFieldName(list.from, allowDash: false) {
                problems.append(ConfigProblem(path: "\(key).from", message: "must name a one-to-many alias field (got \"\(list.from)\")"))
            }
            if !(1...ListSpec.maxLimit).contains(list.limit) {
                problems.append(ConfigProblem(path: "\(key).limit", message: "must be from 1 to \(ListSpec.maxLimit)"))
            }
            if let sort = list.sort {
                let parts = sort.split(separator: ",", omittingEmptySubsequences: false)
                let valid = parts.allSatisfy { part in
                    let field = part.hasPrefix("-") ? part.dropFirst() : part[...]
                    let segments = field.split(separator: ".", omittingEmptySubsequences: false)
                    return segments.count + 1 <= maxPathSegments && segments.allSatisfy { isFieldName(String($0), allowDash: false) }
                }
                if !valid {
                    problems.append(ConfigProblem(path: "\(key).sort",
                                                  message: "must be fields of the list, comma-separated, each with an optional - (got \"\(sort)\")"))
                }
            }
            if list.fields.isEmpty {
                problems.append(ConfigProblem(path: "\(key).fields", message: "a list needs at least one field"))
            }
            for (member, inner) in list.fields {
                problems += Self.problems(member, inner, at: "\(key).fields.\(member)", prefix: 1, inList: true)
            }
        }
        return problems
    }
}
