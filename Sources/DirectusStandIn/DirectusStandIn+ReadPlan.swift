import FoundationEssentials
import PosternHTTP

extension DirectusStandIn {
    /// A filter compiled against the `posts` columns.
    indirect enum Predicate: Sendable {
        /// Every part holds (`_and`, or several keys in one object).
        case all([Predicate])
        /// At least one part holds (`_or`).
        case any([Predicate])
        /// One operator on one column.
        case test(PostField, String, JSONValue)
    }

    /// A validated read of `posts`: which columns, which rows, in which order.
    struct ReadPlan: Sendable {
        /// One selected output key.
        enum Selection: Sendable {
            /// A column as stored.
            case plain(PostField)
            /// A user uuid column expanded to the user's fields (`user_created.*`).
            case relation(PostField, [String])
        }

        /// Selected fields, in output order.
        var fields: [Selection] = []
        /// Whether rendering reads `directus_users`.
        var needsUsers = false
        /// Sort keys and whether each is descending.
        var sort: [(PostField, Bool)] = []
        /// The compiled filter.
        var predicate: Predicate?
        /// The lowercased search text, as UTF-8.
        var search: [UInt8]?
        /// The search text as an integer, when it is one.
        private var searchID: Int64?
        /// The search text, when it is a uuid.
        private var searchUUID: String?
        /// `limit`.
        var limit: Int?
        /// `offset`.
        var offset: Int?
        /// `page`.
        var page: Int?
        /// `meta` entries.
        var meta: [String]

        /// Validates `query` for `caller`: unknown fields (in `fields`, `sort`, `filter`) give 403.
        init(query: ItemQuery, caller: Caller, now: Double) throws {
            limit = query.limit
            offset = query.offset
            page = query.page
            meta = query.meta
            for raw in query.fields ?? ["*"] {
                try select(raw, caller: caller)
            }
            for raw in query.sort ?? [] {
                let descending = raw.hasPrefix("-")
                let name = descending ? String(raw.dropFirst()) : raw
                guard let field = PostField(rawValue: name) else { throw StandInError.forbiddenField(name, collection: "posts") }
                sort.append((field, descending))
            }
            if let filter = query.filter {
                predicate = try Self.compile(filter, caller: caller, now: now)
            }
            if let text = query.search, !text.isEmpty {
                search = Array(text.lowercased().utf8)
                searchID = Int64(text)
                if text.count == 36, UUID(uuidString: text) != nil { searchUUID = text.lowercased() }
            }
        }

        private mutating func select(_ raw: String, caller: Caller) throws {
            if raw == "*" {
                for field in PostField.allCases where !fields.contains(where: { $0.field == field }) {
                    fields.append(.plain(field))
                }
                return
            }
            guard let dot = raw.firstIndex(of: ".") else {
                guard let field = PostField(rawValue: raw) else { throw StandInError.forbiddenField(raw, collection: "posts") }
                if !fields.contains(where: { $0.field == field }) { fields.append(.plain(field)) }
                return
            }
            let head = String(raw[..<dot])
            let rest = String(raw[raw.index(after: dot)...])
            guard let field = PostField(rawValue: head), field.isUserRelation else {
                throw StandInError.forbiddenField(raw, collection: "posts")
            }
            // The App User role has no read permission on `directus_users`: the whole request is refused.
            guard caller.admin else { throw StandInError.forbiddenCollection("directus_users", queriedIn: head) }
            let subfields: [String]
            if rest == "*" {
                subfields = User.allFields
            } else {
                guard User.allFields.contains(rest) else { throw StandInError.forbiddenField(rest, collection: "directus_users") }
                subfields = [rest]
            }
            needsUsers = true
            if let index = fields.firstIndex(where: { $0.field == field }) {
                if case .relation(_, let existing) = fields[index] {
                    fields[index] = .relation(field, existing + subfields.filter { !existing.contains($0) })
                } else {
                    fields[index] = .relation(field, subfields)
                }
            } else {
                fields.append(.relation(field, subfields))
            }
        }

        /// Whether `post` passes the filter and the search.
        func matches(_ post: Post) -> Bool {
            if let predicate, !Self.evaluate(predicate, post) { return false }
            guard let search else { return true }
            if Self.contains(post.lowerTitle, search) || Self.contains(post.lowerContent, search) { return true }
            if let searchID, post.id == searchID { return true }
            if let searchUUID, post.userCreated == searchUUID || post.userUpdated == searchUUID { return true }
            return false
        }

        /// Whether `needle` occurs in `haystack` (bytes; Foundation's `contains` is far slower).
        static func contains(_ haystack: [UInt8], _ needle: [UInt8]) -> Bool {
            guard !needle.isEmpty else { return true }
            guard haystack.count >= needle.count else { return false }
            let first = needle[0]
            var i = 0
            let last = haystack.count - needle.count
            while i <= last {
                if haystack[i] == first {
                    var j = 1
                    while j < needle.count, haystack[i + j] == needle[j] { j += 1 }
                    if j == needle.count { return true }
                }
                i += 1
            }
            return false
        }

        /// The selected columns when none is expanded to a relation, else nil.
        var plainColumns: [PostField]? {
            var columns: [PostField] = []
            for selection in fields {
                guard case .plain(let field) = selection else { return nil }
                columns.append(field)
            }
            return columns
        }

        /// Whether the selection is the whole row in schema order (`fields=*`), so cached rows can be used.
        var selectsWholeRow: Bool {
            guard fields.count == PostField.allCases.count else { return false }
            for (selection, field) in zip(fields, PostField.allCases) {
                guard case .plain(let selected) = selection, selected == field else { return false }
            }
            return true
        }

        // MARK: Filter compilation

        private static let primitiveOperators: Set<String> = [
            "_eq", "_neq", "_lt", "_lte", "_gt", "_gte", "_contains", "_ncontains", "_icontains", "_nicontains",
            "_starts_with", "_nstarts_with", "_istarts_with", "_nistarts_with",
            "_ends_with", "_nends_with", "_iends_with", "_niends_with",
        ]
        private static let insensitiveOperators: Set<String> = [
            "_icontains", "_nicontains", "_istarts_with", "_nistarts_with", "_iends_with", "_niends_with",
        ]
        private static let listOperators: Set<String> = ["_in", "_nin", "_between", "_nbetween"]
        private static let flagOperators: Set<String> = ["_null", "_nnull", "_empty", "_nempty"]

        /// Compiles a filter (a client's `filter`, or a stored rule's `permissions`) for `caller`: `$CURRENT_USER`,
        /// `$CURRENT_ROLE` and `$NOW` substituted; an unknown operator is 400 `INVALID_QUERY`, an unknown field 403.
        static func compile(_ filter: JSONValue, caller: Caller, now: Double) throws -> Predicate {
            guard let members = filter.objectValue else { throw StandInError.invalidQuery("Invalid filter object") }
            var parts: [Predicate] = []
            for (key, value) in members {
                if key == "_and" || key == "_or" {
                    guard let list = value.arrayValue else { throw StandInError.invalidQuery("\"\(key)\" has to be an array") }
                    let compiled = try list.map { try compile($0, caller: caller, now: now) }
                    parts.append(key == "_and" ? .all(compiled) : .any(compiled))
                    continue
                }
                if let dot = key.firstIndex(of: "."), let head = PostField(rawValue: String(key[..<dot])),
                   head.isUserRelation, !caller.admin {
                    throw StandInError.forbiddenCollection("directus_users", queriedIn: head.rawValue)
                }
                guard let field = PostField(rawValue: key) else { throw StandInError.forbiddenField(key, collection: "posts") }
                guard let operators = value.objectValue else {
                    throw StandInError.invalidQuery("Invalid filter object for field \"\(key)\"")
                }
                for (op, rawOperand) in operators {
                    let operand = normalize(substitute(rawOperand, caller: caller, now: now), for: field)
                    if primitiveOperators.contains(op) {
                        // Directus calls `compareValue.toLowerCase()` for these on text columns: a coerced
                        // `true`/`false`/`null` is no string, and the TypeError is a 500 (`filter/operator.ts`).
                        if insensitiveOperators.contains(op), field != .id, operand.stringValue == nil {
                            throw StandInError.internalError
                        }
                        if operand == .string("") {
                            throw StandInError.invalidQuery("You can't filter for an empty string in \"\(op)\". Use \"_empty\" or \"_nempty\" instead")
                        }
                    } else if listOperators.contains(op) {
                        guard let list = operand.arrayValue else {
                            throw StandInError.invalidQuery("\"\(op)\" has to be an array of values")
                        }
                        if op.hasSuffix("between"), list.count != 2 {
                            throw StandInError.invalidQuery("\"\(op)\" has to be an array of two values")
                        }
                    } else if !flagOperators.contains(op) {
                        throw StandInError.invalidQuery("\"\(op)\" is not allowed")
                    }
                    parts.append(.test(field, op, operand))
                }
            }
            return parts.count == 1 ? parts[0] : .all(parts)
        }

        /// Replaces the dynamic variables `$CURRENT_USER`, `$CURRENT_ROLE` and `$NOW`.
        static func substitute(_ value: JSONValue, caller: Caller, now: Double) -> JSONValue {
            switch value {
            case .string("$CURRENT_USER"): return caller.userID.map(JSONValue.string) ?? .null
            case .string("$CURRENT_ROLE"): return caller.role.map(JSONValue.string) ?? .null
            case .string("$NOW"): return .string(DirectusStandIn.isoTimestamp(now))
            case .array(let list): return .array(list.map { substitute($0, caller: caller, now: now) })
            default: return value
            }
        }

        /// Casts an operand to the column's type (integer id, timestamps as instants, text elsewhere).
        private static func normalize(_ value: JSONValue, for field: PostField) -> JSONValue {
            switch value {
            case .array(let list): return .array(list.map { normalize($0, for: field) })
            case .string(let text) where field == .id: return Int64(text).map(JSONValue.int) ?? value
            case .string(let text) where field == .dateCreated || field == .dateUpdated:
                return DirectusStandIn.timestampOperand(text)
            case .int, .double: return field == .id ? value : .string(value.text)
            default: return value
            }
        }

        // MARK: Filter evaluation

        /// Whether `post` passes `predicate`.
        static func evaluate(_ predicate: Predicate, _ post: Post) -> Bool {
            switch predicate {
            case .all(let parts): return parts.allSatisfy { evaluate($0, post) }
            case .any(let parts): return parts.contains { evaluate($0, post) }
            case .test(let field, let op, let operand): return test(post.value(field), op, operand)
            }
        }

        static func test(_ value: JSONValue, _ op: String, _ operand: JSONValue) -> Bool {
            let isNull = value.isNull
            let flag = operand == .bool(true) || operand == .int(1)
            func equal(_ other: JSONValue) -> Bool { DirectusStandIn.compare(value, other) == .orderedSame }
            func cmp(_ accept: (ComparisonResult) -> Bool) -> Bool {
                guard !isNull, let result = DirectusStandIn.compare(value, operand) else { return false }
                return accept(result)
            }
            func text(_ v: JSONValue) -> String? {
                switch v {
                case .null: return nil
                case .string(let s): return s
                default: return v.text
                }
            }
            func strings(_ insensitive: Bool, _ check: (String, String) -> Bool) -> Bool? {
                guard var a = text(value), var b = text(operand) else { return nil }
                if insensitive { a = a.lowercased(); b = b.lowercased() }
                return check(a, b)
            }
            switch op {
            case "_eq": return operand.isNull ? isNull : (!isNull && equal(operand))
            case "_neq": return operand.isNull ? !isNull : (!isNull && !equal(operand))
            case "_lt": return cmp { $0 == .orderedAscending }
            case "_lte": return cmp { $0 != .orderedDescending }
            case "_gt": return cmp { $0 == .orderedDescending }
            case "_gte": return cmp { $0 != .orderedAscending }
            case "_in": return !isNull && (operand.arrayValue ?? []).contains(where: equal)
            case "_nin": return !isNull && !(operand.arrayValue ?? []).contains(where: equal)
            case "_between", "_nbetween":
                let list = operand.arrayValue ?? []
                guard !isNull, list.count == 2,
                      let low = DirectusStandIn.compare(value, list[0]), let high = DirectusStandIn.compare(value, list[1])
                else { return false }
                let inside = low != .orderedAscending && high != .orderedDescending
                return op == "_between" ? inside : !inside
            case "_null": return flag ? isNull : !isNull
            case "_nnull": return flag ? !isNull : isNull
            case "_empty", "_nempty":
                let empty = isNull || value == .string("")
                return (op == "_empty") == flag ? empty : !empty
            default:
                break
            }
            let negated = op.hasPrefix("_n")
            let insensitive = op.hasPrefix("_i") || op.hasPrefix("_ni")
            let result: Bool?
            if op.hasSuffix("contains") {
                result = strings(insensitive) { Self.contains(Array($0.utf8), Array($1.utf8)) }
            } else if op.hasSuffix("starts_with") {
                result = strings(insensitive) { $0.hasPrefix($1) }
            } else if op.hasSuffix("ends_with") {
                result = strings(insensitive) { $0.hasSuffix($1) }
            } else {
                result = nil
            }
            guard let result else { return false }
            return negated ? !result : result
        }
    }
}

extension DirectusStandIn.ReadPlan.Selection {
    /// The column this selection reads.
    var field: DirectusStandIn.PostField {
        switch self {
        case .plain(let field), .relation(let field, _): return field
        }
    }
}
