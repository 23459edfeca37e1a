/// Declared filters on a list (docs/api.md, Declared filters): the client's `?<name>=<value>` for each filter
/// the resource declares, checked against its type and turned into a Directus filter.
///
/// Each applied filter is one item of `filter[_and]`, in config order: Directus ANDs it with the other top-level
/// keys (the `search` filter's `_or`, the owner rule's `<owner>` key), and no two filters can collide on one
/// key (two filters on one field and operator would otherwise become an array Directus cannot read).
extension ResourceMapper {
    /// The Directus filter pairs of the declared filters `given` names (parameter name → value); nil `userID`
    /// is an anonymous caller. A value that does not fit is 400 `invalid_request` naming the parameter; a
    /// `$CURRENT_USER` flag without a caller is 401, since only a signed-in caller has items of their own.
    func declaredFilterPairs(_ given: [String: String], userID: String?) throws(GatewayError) -> [(String, String)] {
        var pairs: [(String, String)] = []
        for filter in resource.filters {
            guard let text = given[filter.name],
                  let (op, value) = try filter.directusTest(text, userID: userID) else { continue }
            pairs.append(("filter[_and][\(pairs.count)][\(filter.field)][\(op)]", value))
        }
        return pairs
    }
}

extension FilterConfig {
    /// The Directus operator and value for the client's `text`, or nil for a flag given `false`.
    func directusTest(_ text: String, userID: String?) throws(GatewayError) -> (String, String)? {
        if let value {
            switch text {
            case "true": break
            case "false": return nil
            default: throw .invalidRequest("query parameter \"\(name)\" must be true or false")
            }
            return try fixedTest(value, userID: userID)
        }
        switch op {
        case .null:
            switch text {
            case "true": return ("_null", "true")
            case "false": return ("_nnull", "true")
            default: throw .invalidRequest("query parameter \"\(name)\" must be true or false")
            }
        case .in:
            let parts = text.split(separator: ",", omittingEmptySubsequences: false)
            guard parts.count <= ResourceConfig.maxInValues else {
                throw .invalidRequest("query parameter \"\(name)\" takes at most \(ResourceConfig.maxInValues) comma-separated values")
            }
            var values: [String] = []
            values.reserveCapacity(parts.count)
            for part in parts { values.append(try directusValue(String(part), listed: true)) }
            return ("_in", values.joined(separator: ","))
        case .contains:
            guard !text.isEmpty else { throw .invalidRequest("query parameter \"\(name)\" must not be empty") }
            try checkLength(text)
            return ("_icontains", ResourceMapper.literalFilterValue(text))
        default:
            return ("_" + op.rawValue, try directusValue(text, listed: false))
        }
    }

    /// One client value as Directus is sent it (400 naming the parameter when it does not fit the type).
    private func directusValue(_ text: String, listed: Bool) throws(GatewayError) -> String {
        guard let value = type.directusText(text) else {
            let what = listed ? "each value of query parameter \"\(name)\"" : "query parameter \"\(name)\""
            throw .invalidRequest("\(what) must be \(type.expectation)")
        }
        if type == .string {
            try checkLength(value)
            if let reason = ValueType.reinterpretation(of: value) {
                throw .invalidRequest("query parameter \"\(name)\" cannot be matched: \(reason)")
            }
        }
        return value
    }

    /// The longest text value (or `in` item), in UTF-8 bytes, as for `search` (docs/api.md, Limits and defaults):
    /// the upstream request head stays within what Node accepts.
    static let maxTextBytes = 200

    /// 400 naming the parameter when `text` is longer than `maxTextBytes`.
    private func checkLength(_ text: String) throws(GatewayError) {
        guard text.utf8.count <= Self.maxTextBytes else {
            throw .invalidRequest("query parameter \"\(name)\" is longer than \(Self.maxTextBytes) bytes")
        }
    }

    /// A flag's fixed value as a Directus operator and value (`postern check` made sure it fits).
    private func fixedTest(_ fixed: Fixed, userID: String?) throws(GatewayError) -> (String, String) {
        if case .string(Self.currentUser) = fixed {
            guard let userID else {
                throw .unauthorized("query parameter \"\(name)\" needs a signed-in caller")
            }
            return ("_" + op.rawValue, userID)
        }
        switch (op, fixed) {
        case (.null, .boolean(let isNull)):
            return (isNull ? "_null" : "_nnull", "true")
        case (.contains, .string(let text)):
            return ("_icontains", ResourceMapper.literalFilterValue(text))
        default:
            return ("_" + op.rawValue, directusText(fixed))
        }
    }

    /// The text of a fixed value (a list comma-separated).
    private func directusText(_ fixed: Fixed) -> String {
        switch fixed {
        case .string(let text): return type.directusText(text) ?? text
        case .integer(let value): return String(value)
        case .boolean(let flag): return flag ? "true" : "false"
        case .list(let values): return values.map(directusText).joined(separator: ",")
        }
    }
}
