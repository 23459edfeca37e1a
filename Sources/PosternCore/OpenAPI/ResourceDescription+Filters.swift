import PosternHTTP

/// The declared filters of a resource as OpenAPI query parameters of its list (docs/api.md, Declared filters).
extension ResourceDescription {
    /// One optional query parameter per declared filter, in config order.
    func filterParameters() -> [JSONValue] {
        resource.filters.map { filter in
            .object([("name", .string(filter.name)), ("in", .string("query")), ("required", .bool(false)),
                     ("description", .string(Self.describe(filter))), ("schema", .object(Self.schema(filter)))])
        }
    }

    /// What the filter keeps, in words.
    private static func describe(_ filter: FilterConfig) -> String {
        let field = "`\(filter.field)`"
        if let value = filter.value {
            let what: String
            if case .string(FilterConfig.currentUser) = value {
                what = filter.op == .eq ? "only the caller's own items (\(field) is the caller's user id; 401 without a token)"
                    : "only items whose \(field) is not the caller's user id (401 without a token)"
            } else {
                what = "only items where \(field) \(words(filter.op)) \(text(value))"
            }
            return "Flag: `true` keeps \(what); `false` or leaving it out does not filter."
        }
        switch filter.op {
        case .null:
            return "`true` keeps items whose \(field) is empty (null), `false` items whose \(field) has a value."
        case .in:
            return "Keeps items whose \(field) is one of these comma-separated values (at most \(ResourceConfig.maxInValues)), each \(filter.type.expectation)."
        case .contains:
            return "Keeps items whose \(field) contains this text, case-insensitively."
        default:
            return "Keeps items whose \(field) \(words(filter.op)) this value (\(filter.type.expectation))."
        }
    }

    private static func words(_ op: FilterConfig.Operation) -> String {
        switch op {
        case .eq: return "equals"
        case .neq: return "does not equal"
        case .gt: return "is greater than"
        case .gte: return "is at least"
        case .lt: return "is less than"
        case .lte: return "is at most"
        case .in: return "is one of"
        case .contains: return "contains"
        case .null: return "is null:"
        }
    }

    private static func text(_ value: FilterConfig.Fixed) -> String {
        switch value {
        case .string(let s): return "`\(s)`"
        case .integer(let i): return "`\(i)`"
        case .boolean(let b): return "`\(b)`"
        case .list(let values): return values.map(text).joined(separator: ", ")
        }
    }

    /// The schema of the parameter's value.
    private static func schema(_ filter: FilterConfig) -> [(String, JSONValue)] {
        if filter.value != nil || filter.op == .null { return [("type", .string("boolean"))] }
        if filter.op == .in {
            return [("type", .string("string")), ("minLength", .int(1)),
                    ("pattern", .string("^[^,]+(,[^,]+){0,\(ResourceConfig.maxInValues - 1)}$"))]
        }
        switch filter.type {
        case .string: return [("type", .string("string")), ("minLength", .int(1))]
        case .integer: return [("type", .string("integer")), ("format", .string("int64")),
                                   ("minimum", .int(-999_999_999_999_999_999)), ("maximum", .int(999_999_999_999_999_999))]
        case .uuid: return [("type", .string("string")), ("format", .string("uuid"))]
        case .datetime: return [("type", .string("string")), ("format", .string("date-time"))]
        case .boolean: return [("type", .string("boolean"))]
        }
    }
}
