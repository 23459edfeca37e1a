/// A resource's `filters` (docs/api.md, Declared filters): decoded in file order, then validated with every
/// problem named by its key path.
import PosternHTTP

extension ConfigKeys {
    /// `resources[i].filters.<name>`.
    static let filter = ["field", "op", "type", "value"]
}

extension PosternConfig {
    /// Decodes `filters` (an object of name → filter); members that cannot be decoded are reported and left out.
    static func decodeFilters(_ value: JSONValue, at path: String, reader: inout ConfigReader) -> [FilterConfig] {
        guard let members = value.objectValue else {
            reader.report(path, "must be an object of query parameter → filter, not \(value.typeName)")
            return []
        }
        var filters: [FilterConfig] = []
        var seen = Set<String>()
        for (name, member) in members {
            let memberPath = "\(path).\(name)"
            guard seen.insert(name).inserted else {
                reader.report(memberPath, "duplicate key")
                continue
            }
            guard let o = reader.object(member, at: memberPath, keys: ConfigKeys.filter) else { continue }
            let field = reader.string(o, "field", at: memberPath)
            if o["field"] == nil { reader.report("\(memberPath).field", "is required (the Directus field to filter on)") }
            var op: FilterConfig.Operation?
            if let text = reader.string(o, "op", at: memberPath) {
                op = FilterConfig.Operation(rawValue: text)
                if op == nil {
                    let allowed = FilterConfig.Operation.allCases.map(\.rawValue).joined(separator: ", ")
                    reader.report("\(memberPath).op", "unknown op \"\(text)\" (\(allowed))")
                }
            } else if o["op"] == nil {
                reader.report("\(memberPath).op", "is required (eq, neq, gt, gte, lt, lte, in, contains, null)")
            }
            // `null` compares with true or false: its type is boolean unless the file says otherwise.
            var type: FilterConfig.ValueType? = op == .null ? .boolean : .string
            if let text = reader.string(o, "type", at: memberPath) {
                type = FilterConfig.ValueType(rawValue: text)
                if type == nil {
                    let allowed = FilterConfig.ValueType.allCases.map(\.rawValue).joined(separator: ", ")
                    reader.report("\(memberPath).type", "unknown type \"\(text)\" (\(allowed))")
                }
            }
            var fixed: FilterConfig.Fixed?
            var fixedOK = true
            if let given = o["value"] {
                fixed = Self.fixedValue(given)
                if fixed == nil {
                    reader.report("\(memberPath).value",
                                  "must be a string, an integer, true or false (or, for op in, an array of them), not \(given.typeName)")
                    fixedOK = false
                }
            }
            guard let field, let op, let type, fixedOK else { continue }
            filters.append(FilterConfig(name: name, field: field, op: op, type: type, value: fixed))
        }
        return filters
    }

    /// A fixed `value` as the file gives it: a string, an integer, a boolean, or an array of those.
    private static func fixedValue(_ value: JSONValue, nested: Bool = false) -> FilterConfig.Fixed? {
        switch value {
        case .string(let text): return .string(text)
        case .bool(let flag): return .boolean(flag)
        case .array(let elements) where !nested:
            var list: [FilterConfig.Fixed] = []
            for element in elements {
                guard let fixed = fixedValue(element, nested: true) else { return nil }
                list.append(fixed)
            }
            return .list(list)
        default:
            guard let integer = value.intValue else { return nil }
            return .integer(integer)
        }
    }
}

extension ResourceConfig {
    /// The most filters a resource may declare: they reach Directus as `filter[_and][i]`, and its query parser
    /// (`qs`) turns a list with an index above 20 into an object.
    static let maxFilters = 20
    /// The most values of an `in` filter.
    static let maxInValues = 100
    /// Query parameters a filter may not be named: the list's own, and Directus's.
    static let reservedQueryParameters: Set<String> = ["limit", "offset", "page", "sort", "search", "fields", "filter",
                                                       "deep", "meta", "aggregate", "groupBy", "alias"]
    /// Directus fields it never returns, which no filter may probe.
    static let concealedFields: Set<String> = ["password", "token", "tfa_secret", "auth_data", "external_identifier"]

    /// The list query parameters this resource understands: every list's own (`limit`, `offset`, `page`, `sort`,
    /// `search`) and its filters' names; everything else is dropped, never forwarded (a composite part's `query`
    /// may use only these).
    var listQueryParameters: [String] { ["limit", "offset", "page", "sort", "search"] + filters.map(\.name) }

    /// The problems of `filters`, named under `path` (e.g. `resources[1]`).
    func filterProblems(at path: String) -> [ConfigProblem] {
        var problems: [ConfigProblem] = []
        if filters.count > Self.maxFilters {
            problems.append(ConfigProblem(path: "\(path).filters",
                                          message: "at most \(Self.maxFilters) filters (Directus reads longer filter lists as objects)"))
        }
        for filter in filters {
            let at = "\(path).filters.\(filter.name)"
            for (key, message) in filter.problems(resource: self) {
                problems.append(ConfigProblem(path: key.isEmpty ? at : "\(at).\(key)", message: message))
            }
        }
        return problems
    }

    /// `filters` in the file's shape.
    func filtersJSON() -> JSONValue {
        .object(filters.map { filter in
            var members: [(String, JSONValue)] = [("field", .string(filter.field)), ("op", .string(filter.op.rawValue)),
                                                  ("type", .string(filter.type.rawValue))]
            if let value = filter.value { members.append(("value", value.json)) }
            return (filter.name, .object(members))
        })
    }
}

extension FilterConfig {
    /// The problems of this filter of `resource`, each with the key it is about ("" for the filter itself).
    func problems(resource: ResourceConfig) -> [(String, String)] {
        var problems: [(String, String)] = []
        if !ResourceConfig.isFieldName(name, allowDash: false) {
            problems.append(("", "a filter name must match [A-Za-z_][A-Za-z0-9_]* (it is a query parameter)"))
        } else if ResourceConfig.reservedQueryParameters.contains(name) {
            problems.append(("", "\"\(name)\" is a reserved query parameter; choose another name"))
        }
        if field.contains(".") {
            problems.append(("field", "must be a field of \(resource.collection) itself, not a relation path (\"\(field)\")"))
        } else if !ResourceConfig.isFieldName(field, allowDash: false) {
            problems.append(("field", "must name a Directus field: letters, digits and _ (got \"\(field)\")"))
        } else if ResourceConfig.concealedFields.contains(field) {
            problems.append(("field", "\"\(field)\" is concealed by Directus and cannot be filtered on"))
        }
        switch op {
        case .null where type != .boolean:
            problems.append(("type", "op null takes true or false: its type is boolean (or left out), not \(type.rawValue)"))
        case .contains where type != .string:
            problems.append(("type", "op contains compares text: its type must be string, not \(type.rawValue)"))
        case .gt, .gte, .lt, .lte:
            // (A `where` clause would guard only the last pattern of the case.)
            if type == .boolean || type == .uuid {
                problems.append(("type", "op \(op.rawValue) cannot order \(type.rawValue) values (use eq, neq or in)"))
            }
        case .in where type == .boolean:
            problems.append(("type", "op in with boolean values: use eq"))
        default:
            break
        }
        if let value, let problem = fixedProblem(value) { problems.append(("value", problem)) }
        return problems
    }

    /// What is wrong with `fixed` as this filter's fixed value, or nil.
    private func fixedProblem(_ fixed: Fixed) -> String? {
        if case .string(Self.currentUser) = fixed {
            guard op == .eq || op == .neq else { return "\"\(Self.currentUser)\" needs op eq or neq" }
            guard type == .string || type == .uuid else {
                return "\"\(Self.currentUser)\" is a user id: the type must be string or uuid, not \(type.rawValue)"
            }
            return nil
        }
        switch (op, fixed) {
        case (.in, .list(let values)):
            guard (1...ResourceConfig.maxInValues).contains(values.count) else {
                return "op in takes 1 to \(ResourceConfig.maxInValues) values"
            }
            for (i, value) in values.enumerated() {
                if let problem = scalarProblem(value) { return "[\(i)] \(problem)" }
                if case .string(let text) = value, text.contains(",") { return "[\(i)] an in value cannot hold a comma" }
            }
            return nil
        case (.in, _):
            return "op in takes an array of values"
        case (_, .list):
            return "only op in takes an array"
        case (.null, .boolean):
            return nil
        case (.null, _):
            return "op null takes true (is null) or false (is not null)"
        default:
            return scalarProblem(fixed)
        }
    }

    /// What is wrong with one fixed scalar for `type`, or nil.
    private func scalarProblem(_ fixed: Fixed) -> String? {
        switch (type, fixed) {
        case (.integer, .integer), (.boolean, .boolean):
            return nil
        case (.string, .string(let text)):
            if text.isEmpty { return "must not be empty" }
            if op != .contains, let reason = ValueType.reinterpretation(of: text) { return reason }
            return nil
        case (.uuid, .string(let text)), (.datetime, .string(let text)):
            return type.directusText(text) == nil ? "must be \(type.expectation) (got \"\(text)\")" : nil
        default:
            return "must be \(type.expectation) for type \(type.rawValue)"
        }
    }
}

extension FilterConfig.Fixed {
    /// The value in the file's shape.
    var json: JSONValue {
        switch self {
        case .string(let text): return .string(text)
        case .integer(let value): return .int(value)
        case .boolean(let flag): return .bool(flag)
        case .list(let values): return .array(values.map(\.json))
        }
    }
}
