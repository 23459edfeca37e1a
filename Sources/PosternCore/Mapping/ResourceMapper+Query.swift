/// List query translation (docs/api.md, Resources).
extension ResourceMapper {
    /// The longest `search` text, in UTF-8 bytes (docs/api.md, Limits and defaults).
    static let maxSearchBytes = 200

    /// Translates the client's decoded list query into the Directus query pairs to send:
    /// `fields`, `limit`, `offset` (also from `page`), `sort` (mapped, `-` kept), `search` (as a filter, see
    /// `searchFilter`), `meta=filter_count`.
    ///
    /// A bad value of a known parameter, or a known parameter repeated with different values, is
    /// 400 `invalid_request` naming the parameter. Unknown parameters (`filter`, `fields`, `deep`…) are dropped.
    /// Declared filters (`declaredFilterPairs`) follow the search; `userID` is the caller's (nil: anonymous).
    func listQuery(_ clientQuery: [(name: String, value: String)], userID: String? = nil) throws(GatewayError) -> [(String, String)] {
        let known = queryParameters
        var given: [String: String] = [:]
        for (name, value) in clientQuery where known.contains(name) {
            if let earlier = given[name], earlier != value {
                throw .invalidRequest("query parameter \"\(name)\" is given twice with different values")
            }
            given[name] = value
        }

        let maxLimit = max(1, resource.maxLimit)
        var limit = min(max(1, resource.defaultLimit), maxLimit)
        if let text = given["limit"] {
            guard let value = Self.integer(text), (1...maxLimit).contains(value) else {
                throw .invalidRequest("query parameter \"limit\" must be an integer from 1 to \(maxLimit)")
            }
            limit = value
        }

        var offset = 0
        switch (given["offset"], given["page"]) {
        case (.some, .some):
            throw .invalidRequest("query parameters \"offset\" and \"page\" cannot be used together")
        case (.some(let text), nil):
            guard let value = Self.integer(text), value >= 0 else {
                throw .invalidRequest("query parameter \"offset\" must be an integer of 0 or more")
            }
            offset = value
        case (nil, .some(let text)):
            guard let page = Self.integer(text), page >= 1 else {
                throw .invalidRequest("query parameter \"page\" must be an integer of 1 or more")
            }
            let (product, overflow) = limit.multipliedReportingOverflow(by: page - 1)
            guard !overflow else { throw .invalidRequest("query parameter \"page\" is too large") }
            offset = product
        case (nil, nil):
            break
        }

        var out: [(String, String)] = [("fields", directusFieldList)] + deepQuery
            + [("limit", String(limit)), ("offset", String(offset))]
        if let text = given["sort"] {
            out.append(("sort", try directusSort(text)))
        }
        if let search = given["search"], !search.isEmpty {
            out += try searchFilter(search)
        }
        if !given.isEmpty {
            out += try declaredFilterPairs(given, userID: userID)
        }
        out.append(("meta", "filter_count"))
        return out
    }

    /// True when `clientQuery` names no list parameter and no declared filter: its upstream query is then
    /// `defaultListQuery` (what `listQuery` gives it, built once), whatever else the query holds.
    func isDefaultListQuery(_ clientQuery: [(name: String, value: String)]) -> Bool {
        clientQuery.isEmpty || !clientQuery.contains { queryParameters.contains($0.name) }
    }

    /// The filter pairs for a client `search`: `filter[_or][i][<field>][_icontains]=<term>` over the search
    /// fields (docs/api.md, Upstream and edge rules). Never Directus's own `search`, which also looks in
    /// fields the resource does not expose. A resource with no search fields refuses `search` with 400.
    ///
    /// Directus ANDs top-level filter keys, so an owner filter beside these still applies. The term is
    /// sent once per field, so it is limited to `maxSearchBytes`: Node refuses a request whose request
    /// line and headers pass 16 KiB, and 20 fields × 200 bytes percent-encoded stays under that.
    func searchFilter(_ term: String) throws(GatewayError) -> [(String, String)] {
        guard !searchDirectusFields.isEmpty else {
            throw .invalidRequest("query parameter \"search\" is not supported: \(resource.name) has no search fields")
        }
        guard term.utf8.count <= Self.maxSearchBytes else {
            throw .invalidRequest("query parameter \"search\" is longer than \(Self.maxSearchBytes) bytes")
        }
        let value = Self.literalFilterValue(term)
        return searchDirectusFields.enumerated().map { index, field in
            ("filter[_or][\(index)][\(field)][_icontains]", value)
        }
    }

    /// `term` changed so that Directus reads it as plain text in a case-insensitive filter: ASCII letters
    /// lowercased (so `$NOW`, `$CURRENT_USER…` are no dynamic variables), and `true`, `false`, `null`
    /// capitalised (Directus coerces those exact strings, and `_icontains` then fails on a non-string).
    /// Directus lowercases the value itself, so the match is unchanged.
    static func literalFilterValue(_ term: String) -> String {
        let lowered = String(decoding: term.utf8.map { (0x41...0x5A).contains($0) ? $0 | 0x20 : $0 }, as: UTF8.self)
        switch lowered {
        case "true", "false", "null": return lowered.prefix(1).uppercased() + lowered.dropFirst()
        default: return lowered
        }
    }

    /// Maps a client `sort` CSV (`-title,id`) to Directus names, keeping `-`; an empty or unmapped field is 400.
    private func directusSort(_ text: String) throws(GatewayError) -> String {
        var mapped: [String] = []
        for part in text.split(separator: ",", omittingEmptySubsequences: false) {
            let item = part.trimmingSpaces()
            let descending = item.hasPrefix("-")
            let name = descending ? String(item.dropFirst()) : item
            guard !name.isEmpty else {
                throw .invalidRequest("query parameter \"sort\" has an empty field")
            }
            switch table.directusPath(ofOutput: name) {
            case .success(let path)?:
                mapped.append((descending ? "-" : "") + path)
            case .failure(.list)?:
                throw .invalidRequest("query parameter \"sort\" cannot sort by \"\(name)\": it is a list")
            case .failure(.object)?:
                throw .invalidRequest("query parameter \"sort\" cannot sort by \"\(name)\": it is an object (name one of its fields)")
            case nil:
                throw .invalidRequest("query parameter \"sort\" names unknown field \"\(name)\"")
            }
        }
        return mapped.joined(separator: ",")
    }

    /// A decimal integer of ASCII digits with an optional leading `-` (so that `-1` reads as out of range), else nil.
    private static func integer(_ text: String) -> Int? {
        let digits = text.hasPrefix("-") ? text.utf8.dropFirst() : text.utf8[...]
        guard !digits.isEmpty, digits.count <= 18, digits.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return nil }
        return Int(text)
    }
}

private extension Substring {
    /// The text without leading and trailing spaces.
    func trimmingSpaces() -> String {
        String(drop { $0 == " " }.reversed().drop { $0 == " " }.reversed())
    }
}
