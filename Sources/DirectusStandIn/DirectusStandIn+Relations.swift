import DirectusPlan
import FoundationEssentials
import PosternHTTP

/// Relational reads as Directus 11 answers them (docs/bootstrap.md, relational reads): dot paths in `fields` through many-to-one
/// relations, the one-to-many alias lists, `deep[<alias>][_limit|_sort]`, `sort` by a dot path, and the
/// permissions of every collection a path reaches. The relations are the stored `directus_relations` rows, so
/// what `postern bootstrap` creates is what the reads follow.
extension DirectusStandIn {
    /// One row of any collection, by field name.
    typealias Record = [String: JSONValue]

    /// A filter compiled against the fields of one collection (a client's `filter` or a rule's `permissions`).
    indirect enum RowFilter: Sendable {
        /// Every part holds.
        case all([RowFilter])
        /// At least one part holds.
        case any([RowFilter])
        /// One operator on one field.
        case test(String, String, JSONValue)

        /// Whether `record` passes.
        func holds(_ record: Record) -> Bool {
            switch self {
            case .all(let parts): return parts.allSatisfy { $0.holds(record) }
            case .any(let parts): return parts.contains { $0.holds(record) }
            case .test(let field, let op, let operand): return ReadPlan.test(record[field] ?? .null, op, operand)
            }
        }
    }

    /// The stored rules of one caller on one collection, for any collection.
    struct TableRules: Sendable {
        /// One stored permission row, compiled.
        struct Rule: Sendable {
            /// Allowed fields; nil for all (`*`).
            var fields: Set<String>?
            /// The item filter; nil for every item.
            var filter: RowFilter?
            /// Values merged under the payload.
            var presets: [(String, JSONValue)]

            /// Whether the rule allows `field`.
            func allows(_ field: String) -> Bool { fields?.contains(field) ?? true }
            /// Whether the rule covers `record`.
            func covers(_ record: Record) -> Bool { filter?.holds(record) ?? true }
        }

        /// Admin access: everything.
        var admin: Bool
        /// Rules by action.
        var byAction: [String: [Rule]]

        /// The rules for `action`; 403 on the collection when there is none (none needed for an admin).
        func require(_ action: String, _ collection: String, queriedIn: String = "root") throws -> [Rule] {
            if admin { return [] }
            let rules = byAction[action] ?? []
            if rules.isEmpty { throw StandInError.forbiddenCollection(collection, queriedIn: queriedIn) }
            return rules
        }

        /// The fields some read rule allows; nil for all.
        var readableFields: Set<String>? {
            if admin { return nil }
            let rules = byAction["read"] ?? []
            if rules.contains(where: { $0.fields == nil }) { return nil }
            return rules.reduce(into: Set<String>()) { $0.formUnion($1.fields ?? []) }
        }

        /// Whether some read rule covers `record` (Directus leaves the others out, or answers null for them).
        func canRead(_ record: Record) -> Bool {
            admin || (byAction["read"] ?? []).contains { $0.covers(record) }
        }

        /// Whether `field` of `record` may be read: a read rule that covers the row allows the field (Directus
        /// 11 answers null for a field only other rows' rules allow).
        func canRead(_ field: String, of record: Record) -> Bool {
            admin || (byAction["read"] ?? []).contains { $0.allows(field) && $0.covers(record) }
        }
    }

    /// The rules of the caller's policies on `collection` (`comments`, `directus_users`, `posts`, …).
    func tableRules(_ caller: Caller, collection: String, now: Double) throws -> TableRules {
        if caller.admin { return TableRules(admin: true, byAction: [:]) }
        let rows = lock.withLock { () -> [JSONValue] in
            let policies = state.admin.policies(of: caller)
            return state.admin.permissions.filter {
                $0["collection"]?.stringValue == collection && policies.contains($0["policy"]?.stringValue ?? "")
            }
        }
        var byAction: [String: [TableRules.Rule]] = [:]
        for row in rows {
            guard let action = row["action"]?.stringValue else { continue }
            let fields = DirectusPermissionRow.fieldListForStandIn(row["fields"])
            var filter: RowFilter?
            if let stored = row["permissions"], !stored.isNull, !(stored.objectValue?.isEmpty ?? false) {
                filter = try Self.compileRowFilter(stored, collection: collection, caller: caller, now: now)
            }
            byAction[action, default: []].append(TableRules.Rule(fields: fields.contains("*") ? nil : Set(fields),
                                                                 filter: filter, presets: row["presets"]?.objectValue ?? []))
        }
        return TableRules(admin: false, byAction: byAction)
    }

    /// The columns of a collection the stand-in stores rows for (alias fields excluded).
    static func columns(of collection: String) -> [String] {
        switch collection {
        case "posts": return PostField.allCases.map(\.rawValue)
        case BootstrapPlan.commentsCollection: return Comment.columns
        case "directus_users": return User.allFields
        default: return []
        }
    }

    /// Columns holding integers (operands given as text are cast, like the database does).
    private static func isInteger(_ collection: String, _ field: String) -> Bool {
        field == "id" && collection != "directus_users" || (collection == BootstrapPlan.commentsCollection && field == "post")
    }

    /// Compiles a filter against the columns of `collection`; an unknown field is 403, a bad operator 400.
    static func compileRowFilter(_ filter: JSONValue, collection: String, caller: Caller, now: Double) throws -> RowFilter {
        guard let members = filter.objectValue else { throw StandInError.invalidQuery("Invalid filter object") }
        let known = Set(columns(of: collection))
        let operators: Set<String> = [
            "_eq", "_neq", "_lt", "_lte", "_gt", "_gte", "_contains", "_ncontains", "_icontains", "_nicontains",
            "_starts_with", "_nstarts_with", "_istarts_with", "_nistarts_with", "_ends_with", "_nends_with",
            "_iends_with", "_niends_with", "_in", "_nin", "_between", "_nbetween", "_null", "_nnull", "_empty", "_nempty",
        ]
        var parts: [RowFilter] = []
        for (key, value) in members {
            if key == "_and" || key == "_or" {
                guard let list = value.arrayValue else { throw StandInError.invalidQuery("\"\(key)\" has to be an array") }
                let compiled = try list.map { try compileRowFilter($0, collection: collection, caller: caller, now: now) }
                parts.append(key == "_and" ? .all(compiled) : .any(compiled))
                continue
            }
            guard known.contains(key) else { throw StandInError.forbiddenField(key, collection: collection) }
            guard let tests = value.objectValue else {
                throw StandInError.invalidQuery("Invalid filter object for field \"\(key)\"")
            }
            for (op, raw) in tests {
                guard operators.contains(op) else { throw StandInError.invalidQuery("\"\(op)\" is not allowed") }
                var operand = ReadPlan.substitute(raw, caller: caller, now: now)
                if isInteger(collection, key) { operand = castInteger(operand) }
                if key == "date_created" || key == "date_updated" { operand = castTimestamp(operand) }
                if operand == .string(""), !op.hasSuffix("null"), !op.hasSuffix("empty") {
                    throw StandInError.invalidQuery("You can't filter for an empty string in \"\(op)\". Use \"_empty\" or \"_nempty\" instead")
                }
                if ["_in", "_nin", "_between", "_nbetween"].contains(op), operand.arrayValue == nil {
                    throw StandInError.invalidQuery("\"\(op)\" has to be an array of values")
                }
                parts.append(.test(key, op, operand))
            }
        }
        return parts.count == 1 ? parts[0] : .all(parts)
    }

    private static func castTimestamp(_ value: JSONValue) -> JSONValue {
        switch value {
        case .array(let list): return .array(list.map(castTimestamp))
        case .string(let text): return timestampOperand(text)
        default: return value
        }
    }

    /// A timestamp operand as the stored form (`2025-05-01T10:20:30.000Z`), so that text comparison orders
    /// instants: the database compares a `timestamp` column with an operand in any RFC 3339 form as the instant
    /// it names (`2025-05-01T12:20:30+02:00` equals the stored value above). Other text is left as it is.
    static func timestampOperand(_ text: String) -> JSONValue {
        .string(RFC3339.utcText(text) ?? text)
    }

    private static func castInteger(_ value: JSONValue) -> JSONValue {
        switch value {
        case .array(let list): return .array(list.map(castInteger))
        case .string(let text): return Int64(text).map(JSONValue.int) ?? value
        default: return value
        }
    }

    // MARK: - The rows, as one snapshot

    /// The rows and relations of one request, copied under the lock.
    struct Snapshot {
        /// Rows by collection, in primary-key order.
        var rows: [String: [Record]]
        /// Rows by collection and primary key (as text).
        var index: [String: [String: Record]]
        /// `directus_relations` rows.
        var relations: [JSONValue]

        /// The collection `field` of `collection` points at (a many-to-one), if any.
        func manyToOne(_ collection: String, _ field: String) -> String? {
            relations.first { $0["collection"]?.stringValue == collection && $0["field"]?.stringValue == field }?["related_collection"]?.stringValue
        }

        /// The collection and foreign key the alias `field` of `collection` lists (a one-to-many), if any.
        func oneToMany(_ collection: String, _ field: String) -> (collection: String, key: String)? {
            guard let row = relations.first(where: {
                $0["related_collection"]?.stringValue == collection && $0["meta"]?["one_field"]?.stringValue == field
            }), let many = row["collection"]?.stringValue, let key = row["field"]?.stringValue else { return nil }
            return (many, key)
        }

        /// The row of `collection` whose primary key is `key`.
        func row(_ collection: String, _ key: JSONValue) -> Record? {
            guard !key.isNull else { return nil }
            return index[collection]?[key.stringValue ?? key.text]
        }
    }

    /// Takes the snapshot of every stored collection.
    func snapshot() -> Snapshot {
        lock.withLock {
            let posts = state.posts.map { post in
                Dictionary(uniqueKeysWithValues: PostField.allCases.map { ($0.rawValue, post.value($0)) })
            }
            let comments = state.comments.map { comment in
                Dictionary(uniqueKeysWithValues: Comment.columns.map { ($0, comment.value($0) ?? .null) })
            }
            let users = state.users.values.sorted { $0.id < $1.id }.map { user in
                Dictionary(uniqueKeysWithValues: User.allFields.map { ($0, user.value($0) ?? .null) })
            }
            var rows: [String: [Record]] = ["posts": posts, BootstrapPlan.commentsCollection: comments, "directus_users": users]
            if !state.admin.hasTable(BootstrapPlan.commentsCollection) { rows[BootstrapPlan.commentsCollection] = [] }
            var index: [String: [String: Record]] = [:]
            for (name, list) in rows {
                index[name] = Dictionary(list.map { (($0["id"]?.stringValue ?? $0["id"]?.text) ?? "", $0) }) { a, _ in a }
            }
            return Snapshot(rows: rows, index: index, relations: state.admin.relations)
        }
    }

    // MARK: - The requested fields

    /// The requested paths as a tree: `a`, `a.b`, `a.*`, `*`.
    struct FieldTree {
        /// Named children in request order; a nil subtree is the raw value.
        var entries: [(name: String, sub: FieldTree?)] = []
        /// `*` at this level.
        var star = false

        /// Adds one dot path. A path below a raw key turns it into a nested object (docs/bootstrap.md, relational reads).
        mutating func insert<S: Collection>(_ path: S) where S.Element == String {
            guard let head = path.first else { return }
            let rest = path.dropFirst()
            if head == "*", rest.isEmpty {
                star = true
                return
            }
            if let at = entries.firstIndex(where: { $0.name == head }) {
                if !rest.isEmpty {
                    var sub = entries[at].sub ?? FieldTree()
                    sub.insert(rest)
                    entries[at].sub = sub
                }
            } else {
                var sub: FieldTree?
                if !rest.isEmpty {
                    sub = FieldTree()
                    sub?.insert(rest)
                }
                entries.append((head, sub))
            }
        }
    }

    /// `deep` settings for one alias list.
    struct DeepQuery {
        /// `_limit` (-1 for all); nil for the default 100.
        var limit: Int?
        /// `_sort` entries.
        var sort: [String] = []
    }

    /// How one level of a read renders.
    struct RelationalPlan {
        /// One output key.
        indirect enum Column {
            /// A stored value.
            case plain(String)
            /// A many-to-one expanded to the related row.
            case manyToOne(String, related: String, RelationalPlan)
            /// A one-to-many alias: the related rows (a nil plan lists their keys).
            case oneToMany(String, related: String, key: String, RelationalPlan?, DeepQuery)
        }

        /// The collection of this level.
        var collection: String
        /// Its columns in output order.
        var columns: [Column]
        /// The caller's rules on the collection.
        var rules: TableRules
    }

    /// Validates the tree of `collection` for the caller: 403 for a field that does not exist or may not be
    /// read, 403 for the whole request when a related collection has no read rule.
    func plan(_ tree: FieldTree, collection: String, rules: TableRules, deep: JSONValue?, snapshot: Snapshot,
              caller: Caller, now: Double, queriedIn: String, prefix: String) throws -> RelationalPlan {
        let readable = rules.readableFields
        let columns = Self.columns(of: collection)
        var out: [RelationalPlan.Column] = []
        func name(of column: RelationalPlan.Column) -> String {
            switch column {
            case .plain(let n), .manyToOne(let n, _, _), .oneToMany(let n, _, _, _, _): return n
            }
        }
        if tree.star {
            // `*` is every column the caller may read; alias fields are left out here.
            for column in columns where readable?.contains(column) ?? true {
                if collection == "directus_users", column == "password" || column == "token", !rules.admin { continue }
                out.append(.plain(column))
            }
        }
        for (field, sub) in tree.entries {
            let path = prefix.isEmpty ? field : "\(prefix).\(field)"
            let column: RelationalPlan.Column
            if columns.contains(field) {
                guard readable?.contains(field) ?? true else {
                    throw StandInError.forbiddenField(field, collection: collection, queriedIn: queriedIn)
                }
                if let sub {
                    guard let related = snapshot.manyToOne(collection, field) else {
                        throw StandInError.forbiddenField(path, collection: collection, queriedIn: queriedIn)
                    }
                    let relatedRules = try tableRules(caller, collection: related, now: now)
                    _ = try relatedRules.require("read", related, queriedIn: field)
                    column = .manyToOne(field, related: related,
                                        try plan(sub, collection: related, rules: relatedRules, deep: deep?[field],
                                                 snapshot: snapshot, caller: caller, now: now, queriedIn: field, prefix: path))
                } else {
                    column = .plain(field)
                }
            } else if let (related, key) = snapshot.oneToMany(collection, field) {
                guard readable?.contains(field) ?? true else {
                    throw StandInError.forbiddenField(field, collection: collection, queriedIn: queriedIn)
                }
                let relatedRules = try tableRules(caller, collection: related, now: now)
                _ = try relatedRules.require("read", related, queriedIn: field)
                let settings = try Self.deepQuery(deep?[field], alias: field)
                for entry in settings.sort {
                    let bare = entry.hasPrefix("-") ? String(entry.dropFirst()) : entry
                    guard Self.columns(of: related).contains(bare), relatedRules.readableFields?.contains(bare) ?? true else {
                        throw StandInError.forbiddenField(bare, collection: related, queriedIn: field)
                    }
                }
                let subPlan = try sub.map {
                    try plan($0, collection: related, rules: relatedRules, deep: deep?[field], snapshot: snapshot,
                             caller: caller, now: now, queriedIn: field, prefix: path)
                }
                column = .oneToMany(field, related: related, key: key, subPlan, settings)
            } else {
                throw StandInError.forbiddenField(path, collection: collection, queriedIn: queriedIn)
            }
            if let at = out.firstIndex(where: { name(of: $0) == field }) { out[at] = column } else { out.append(column) }
        }
        return RelationalPlan(collection: collection, columns: out, rules: rules)
    }

    /// `deep[<alias>]`: `_limit` an integer of at least -1, `_sort` a CSV or a list.
    private static func deepQuery(_ value: JSONValue?, alias: String) throws -> DeepQuery {
        var query = DeepQuery()
        guard let value else { return query }
        if let raw = value["_limit"] {
            guard let limit = raw.intValue ?? raw.stringValue.flatMap({ Int64($0) }), limit >= -1 else {
                throw StandInError.invalidQuery("\"deep.\(alias)._limit\" must be a number")
            }
            query.limit = Int(limit)
        }
        if let raw = value["_sort"] {
            if let list = raw.arrayValue {
                query.sort = list.compactMap(\.stringValue)
            } else if let text = raw.stringValue {
                query.sort = text.split(separator: ",").map(String.init)
            }
        }
        return query
    }

    /// Renders `record` of `plan.collection`: a field the caller may not read on this row is null, a related row
    /// the caller may not read is null, an alias list holds only readable rows.
    func render(_ record: Record, _ plan: RelationalPlan, _ snapshot: Snapshot) -> JSONValue {
        .object(plan.columns.map { column in
            switch column {
            case .plain(let field):
                return (field, plan.rules.canRead(field, of: record) ? record[field] ?? .null : .null)
            case .manyToOne(let field, let related, let sub):
                guard plan.rules.canRead(field, of: record), let key = record[field],
                      let row = snapshot.row(related, key), sub.rules.canRead(row) else { return (field, .null) }
                return (field, render(row, sub, snapshot))
            case .oneToMany(let field, let related, let key, let sub, let deep):
                guard let id = record["id"] else { return (field, .array([])) }
                let rules = sub?.rules
                var rows = (snapshot.rows[related] ?? []).filter { row in
                    guard let value = row[key], DirectusStandIn.compare(value, id) == .orderedSame else { return false }
                    return rules?.canRead(row) ?? true
                }
                rows = Self.sorted(rows, collection: related, by: deep.sort.map { Self.sortKey($0) }, snapshot: snapshot)
                let limit = deep.limit ?? 100
                if limit >= 0 { rows = Array(rows.prefix(limit)) }
                guard let sub else { return (field, .array(rows.map { $0["id"] ?? .null })) }
                return (field, .array(rows.map { render($0, sub, snapshot) }))
            }
        })
    }

    /// One `sort` entry: the dot path and whether it is descending.
    static func sortKey(_ raw: String) -> (path: [String], descending: Bool) {
        let descending = raw.hasPrefix("-")
        let name = descending ? String(raw.dropFirst()) : raw
        return (name.split(separator: ".").map(String.init), descending)
    }

    /// Rows ordered by the keys (each a path through many-to-one relations), SQL-like: nulls last when
    /// ascending; ties by primary key.
    static func sorted(_ rows: [Record], collection: String, by keys: [(path: [String], descending: Bool)],
                       snapshot: Snapshot) -> [Record] {
        func value(_ row: Record, _ path: [String]) -> JSONValue {
            var current = row
            var holder = collection
            for segment in path.dropLast() {
                guard let related = snapshot.manyToOne(holder, segment),
                      let next = snapshot.row(related, current[segment] ?? .null) else { return .null }
                current = next
                holder = related
            }
            return path.last.flatMap { current[$0] } ?? .null
        }
        return rows.sorted { a, b in
            for (path, descending) in keys {
                let x = value(a, path)
                let y = value(b, path)
                let order: ComparisonResult
                switch (x.isNull, y.isNull) {
                case (true, true): order = .orderedSame
                case (true, false): order = .orderedDescending
                case (false, true): order = .orderedAscending
                default: order = DirectusStandIn.compare(x, y) ?? .orderedSame
                }
                if order != .orderedSame { return descending ? order == .orderedDescending : order == .orderedAscending }
            }
            return DirectusStandIn.compare(a["id"] ?? .null, b["id"] ?? .null) == .orderedAscending
        }
    }
}
