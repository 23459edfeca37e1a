import DirectusPlan
import FoundationEssentials
import PosternHTTP

/// The demo's `comments` collection (docs/bootstrap.md, 5b) and the relational reads of any collection: `/items/comments`
/// entirely, and `/items/posts` reads that name relations (the flat reads keep the fast path in
/// `DirectusStandIn+Items.swift`).
extension DirectusStandIn {
    /// A row of `comments`.
    struct Comment: Sendable {
        /// Integer primary key.
        var id: Int64
        /// The post it belongs to (many-to-one to `posts`, NOT NULL).
        var post: Int64
        /// NOT NULL text.
        var body: String
        /// Creator uuid (set on create).
        var userCreated: String?
        /// Creation time, ISO with milliseconds and `Z`.
        var dateCreated: String?

        /// The columns in schema order.
        static let columns = ["id", "post", "body", "user_created", "date_created"]

        /// The value of one column, nil when there is no such column.
        func value(_ field: String) -> JSONValue? {
            switch field {
            case "id": return .int(id)
            case "post": return .int(post)
            case "body": return .string(body)
            case "user_created": return userCreated.map(JSONValue.string) ?? .null
            case "date_created": return dateCreated.map(JSONValue.string) ?? .null
            default: return nil
            }
        }
    }

    /// Whether a request on `posts` must go through the relational reader: a read naming a relation, an alias,
    /// a field that is no column (403 there too), a sort by a dot path, or `deep`.
    static func needsRelationalRead(_ query: ItemQuery, method: HTTPMethod) -> Bool {
        guard method == .get || method == .other("SEARCH") else { return false }
        if query.deep != nil { return true }
        if (query.sort ?? []).contains(where: { $0.contains(".") }) { return true }
        return namesRelations(query.fields)
    }

    /// Whether `fields` names a relation, an alias or a field that is no column of `posts`.
    static func namesRelations(_ fields: [String]?) -> Bool {
        (fields ?? []).contains { $0 != "*" && ($0.contains(".") || PostField(rawValue: $0) == nil) }
    }

    /// The rows a flat write of `posts` answered with, read again with the request's relational `fields`; 204
    /// when the caller may not read them (the controller swallows the read-back's 403).
    func relationalReadBack(_ written: HTTPResponse, query: ItemQuery, caller: Caller, now: Double) throws -> HTTPResponse {
        guard written.status == 200, let data = (try? JSONValue.parse(written.body))?["data"] else { return written }
        let batch = data.arrayValue != nil
        var rows: [JSONValue] = []
        for row in data.arrayValue ?? [data] {
            guard let id = row["id"]?.intValue else { continue }
            do {
                let one = try relationalRead(query, collection: "posts", id: String(id), caller: caller, now: now)
                rows.append((try? JSONValue.parse(one.body))?["data"] ?? .null)
            } catch let error as StandInError where error.status == 403 {
                return Self.noContent()
            }
        }
        guard !rows.isEmpty else { return Self.noContent() }
        return Self.dataResponse(batch ? .array(rows) : rows[0])
    }

    /// `/items/:collection[/:id]` through the relational reader and, for `comments`, its writes.
    func relationalItems(_ context: Context, collection: String, id: String?, body: JSONValue?, caller: Caller,
                         query: ItemQuery) throws -> HTTPResponse {
        let method = context.request.method
        switch (method, id) {
        case (.get, _), (.other("SEARCH"), nil):
            return try relationalRead(query, collection: collection, id: id, caller: caller, now: context.now)
        case (.post, nil):
            return try createComments(body, caller: caller, query: query, now: context.now)
        case (.patch, let id?):
            return try updateComments(keys: [id], data: body ?? .object([]), batch: false, caller: caller, query: query,
                                      now: context.now)
        case (.patch, nil):
            guard let keys = body?["keys"]?.arrayValue, let data = body?["data"], data.objectValue != nil else {
                throw StandInError.invalidPayload("\"keys\" is required")
            }
            return try updateComments(keys: keys.map { $0.stringValue ?? $0.text }, data: data, batch: true,
                                      caller: caller, query: query, now: context.now)
        case (.delete, let id?):
            return try deleteComments(keys: [id], caller: caller, now: context.now)
        case (.delete, nil):
            guard let keys = body?.arrayValue ?? body?["keys"]?.arrayValue else {
                throw StandInError.invalidPayload("\"keys\" is required")
            }
            return try deleteComments(keys: keys.map { $0.stringValue ?? $0.text }, caller: caller, now: context.now)
        default:
            throw StandInError.routeNotFound(context.request.path)
        }
    }

    // MARK: - Read

    /// A list or one row of `collection` with relations, under the caller's rules on every collection reached.
    func relationalRead(_ query: ItemQuery, collection: String, id: String?, caller: Caller, now: Double) throws -> HTTPResponse {
        let rules = try tableRules(caller, collection: collection, now: now)
        _ = try rules.require("read", collection)
        let snapshot = snapshot()
        let plan = try readPlan(query, collection: collection, rules: rules, snapshot: snapshot, caller: caller, now: now)
        var keys: [(path: [String], descending: Bool)] = []
        for raw in query.sort ?? [] {
            let key = Self.sortKey(raw)
            try checkSortPath(key.path, collection: collection, rules: rules, snapshot: snapshot, caller: caller, now: now)
            keys.append(key)
        }
        let filter = try query.filter.map { try Self.compileRowFilter($0, collection: collection, caller: caller, now: now) }
        if let id {
            let key = Int64(id).map { String($0) } ?? id
            guard let row = snapshot.index[collection]?[key], rules.canRead(row) else { throw StandInError.forbidden }
            return Self.dataResponse(render(row, plan, snapshot))
        }
        let visible = (snapshot.rows[collection] ?? []).filter { rules.canRead($0) }
        let needle = query.search.flatMap { $0.isEmpty ? nil : $0.lowercased() }
        var selected = visible.filter { row in
            if let filter, !filter.holds(row) { return false }
            guard let needle else { return true }
            return Self.searchMatches(row, collection: collection, needle: needle)
        }
        if !keys.isEmpty { selected = Self.sorted(selected, collection: collection, by: keys, snapshot: snapshot) }
        let filterCount = selected.count
        selected = Array(selected[Self.window(count: selected.count, limit: query.limit, offset: query.offset, page: query.page)])
        var members: [(String, JSONValue)] = []
        if !query.meta.isEmpty {
            members.append(("meta", .object(Self.meta(query.meta, total: visible.count, filtered: filterCount))))
        }
        members.append(("data", .array(selected.map { render($0, plan, snapshot) })))
        var out: [UInt8] = []
        JSONValue.object(members).write(into: &out)
        return HTTPResponse(status: 200, headers: Self.commonHeaders, body: Data(out))
    }

    /// The plan of the query's `fields` (default `*`).
    private func readPlan(_ query: ItemQuery, collection: String, rules: TableRules, snapshot: Snapshot, caller: Caller,
                          now: Double) throws -> RelationalPlan {
        var tree = FieldTree()
        for raw in query.fields ?? ["*"] { tree.insert(raw.split(separator: ".", omittingEmptySubsequences: false).map(String.init)) }
        return try plan(tree, collection: collection, rules: rules, deep: query.deep, snapshot: snapshot, caller: caller,
                        now: now, queriedIn: "root", prefix: "")
    }

    /// A sort path must run through many-to-one relations the caller may read and end in a readable column.
    private func checkSortPath(_ path: [String], collection: String, rules: TableRules, snapshot: Snapshot,
                               caller: Caller, now: Double) throws {
        var holder = collection
        var holderRules = rules
        var queriedIn = "root"
        for (index, segment) in path.enumerated() {
            guard Self.columns(of: holder).contains(segment), holderRules.readableFields?.contains(segment) ?? true else {
                throw StandInError.forbiddenField(segment, collection: holder, queriedIn: queriedIn)
            }
            if index == path.count - 1 { return }
            guard let related = snapshot.manyToOne(holder, segment) else {
                throw StandInError.forbiddenField(path.joined(separator: "."), collection: collection)
            }
            holderRules = try tableRules(caller, collection: related, now: now)
            _ = try holderRules.require("read", related, queriedIn: segment)
            holder = related
            queriedIn = segment
        }
    }

    /// `search`: text columns contain the text (case-insensitively), or the integer key equals it.
    private static func searchMatches(_ row: Record, collection: String, needle: String) -> Bool {
        let texts: [String]
        switch collection {
        case "posts": texts = ["title", "content"]
        case BootstrapPlan.commentsCollection: texts = ["body"]
        default: texts = ["first_name", "last_name", "email"]
        }
        if texts.contains(where: { row[$0]?.stringValue?.lowercased().contains(needle) ?? false }) { return true }
        if let number = Int64(needle), row["id"] == .int(number) { return true }
        return false
    }

    // MARK: - Writes on comments

    private func createComments(_ body: JSONValue?, caller: Caller, query: ItemQuery, now: Double) throws -> HTTPResponse {
        let collection = BootstrapPlan.commentsCollection
        let rules = try tableRules(caller, collection: collection, now: now)
        let createRules = try rules.require("create", collection)
        let payload = body ?? .object([])
        let batch = payload.arrayValue != nil
        let date = Self.isoTimestamp(now)
        var drafts: [Comment] = []
        for given in payload.arrayValue ?? [payload] {
            guard let members = given.objectValue else { throw StandInError.invalidPayload("\"value\" must be of type object") }
            var row = given
            if !rules.admin {
                guard let rule = createRules.first(where: { rule in members.allSatisfy { rule.allows($0.0) } }) else {
                    let extra = members.first { field in !createRules.contains { $0.allows(field.0) } } ?? members[0]
                    throw StandInError.forbiddenField(extra.0, collection: collection)
                }
                row = Self.merge(.object(rule.presets), members)
            }
            let post = try commentPost(row["post"], required: true) ?? nil
            let text = try commentBody(row["body"], required: true) ?? nil
            drafts.append(Comment(id: 0, post: post ?? 0, body: text ?? "", userCreated: caller.userID, dateCreated: date))
        }
        let created: [Comment] = lock.withLock {
            drafts.map { draft in
                var comment = draft
                comment.id = state.nextCommentID
                state.nextCommentID += 1
                state.comments.append(comment)
                return comment
            }
        }
        return try readBack(created.map(\.id), batch: batch, caller: caller, query: query, now: now)
    }

    private func updateComments(keys: [String], data given: JSONValue, batch: Bool, caller: Caller, query: ItemQuery,
                                now: Double) throws -> HTTPResponse {
        let collection = BootstrapPlan.commentsCollection
        guard let members = given.objectValue else { throw StandInError.invalidPayload("\"value\" must be of type object") }
        let rules = try tableRules(caller, collection: collection, now: now)
        let updateRules = try rules.require("update", collection)
        let data = rules.admin ? given : Self.merge(.object(updateRules.flatMap(\.presets)), members)
        let fieldList = members.map { "\"\($0.0)\"" }.joined(separator: ", ")
        let denied = members.isEmpty
            ? StandInError.forbidden("You don't have permission to perform \"update\" for collection \"\(collection)\" or it does not exist.")
            : StandInError.forbidden("You don't have permissions to perform \"update\" for the field(s) \(fieldList) in collection \"\(collection)\" or it does not exist.")
        let post = try commentPost(data["post"], required: false) ?? nil
        let text = try commentBody(data["body"], required: false) ?? nil
        let snapshot = snapshot()
        var ids: [Int64] = []
        for key in keys {
            guard let id = Int64(key), let row = snapshot.index[collection]?[String(id)] else {
                if rules.admin { continue }
                throw denied
            }
            if !rules.admin, !updateRules.contains(where: { $0.covers(row) }) { throw denied }
            ids.append(id)
        }
        if !rules.admin, let extra = members.first(where: { field in !updateRules.contains { $0.allows(field.0) } }) {
            throw StandInError.forbiddenField(extra.0, collection: collection)
        }
        lock.withLock {
            for index in state.comments.indices where ids.contains(state.comments[index].id) {
                if let post { state.comments[index].post = post }
                if let text { state.comments[index].body = text }
            }
        }
        if ids.isEmpty { return Self.noContent() }
        return try readBack(ids, batch: batch, caller: caller, query: query, now: now)
    }

    private func deleteComments(keys: [String], caller: Caller, now: Double) throws -> HTTPResponse {
        let collection = BootstrapPlan.commentsCollection
        let rules = try tableRules(caller, collection: collection, now: now)
        let deleteRules = try rules.require("delete", collection)
        let denied = StandInError.forbidden("You don't have permission to perform \"delete\" for collection \"\(collection)\" or it does not exist.")
        let snapshot = snapshot()
        var ids: Set<Int64> = []
        for key in keys {
            guard let id = Int64(key), let row = snapshot.index[collection]?[String(id)] else {
                if rules.admin { continue }
                throw denied
            }
            if !rules.admin, !deleteRules.contains(where: { $0.covers(row) }) { throw denied }
            ids.insert(id)
        }
        lock.withLock { state.comments.removeAll { ids.contains($0.id) } }
        return Self.noContent()
    }

    /// The written rows read back with the request's `fields`; 204 when the caller may not read them.
    private func readBack(_ ids: [Int64], batch: Bool, caller: Caller, query: ItemQuery, now: Double) throws -> HTTPResponse {
        let collection = BootstrapPlan.commentsCollection
        let rules = try tableRules(caller, collection: collection, now: now)
        guard rules.admin || !(rules.byAction["read"] ?? []).isEmpty else { return Self.noContent() }
        let snapshot = snapshot()
        let plan = try readPlan(query, collection: collection, rules: rules, snapshot: snapshot, caller: caller, now: now)
        let rows = ids.compactMap { snapshot.index[collection]?[String($0)] }.filter { rules.canRead($0) }
        guard rows.count == ids.count else { return Self.noContent() }
        let rendered = rows.map { render($0, plan, snapshot) }
        return Self.dataResponse(batch ? .array(rendered) : rendered[0])
    }

    /// `post` of a payload: NOT NULL, an integer, the key of an existing post (else `INVALID_FOREIGN_KEY`).
    private func commentPost(_ value: JSONValue?, required: Bool) throws -> Int64?? {
        guard let value else {
            if required { throw StandInError.failedValidation(field: "post", type: "required", message: "Value is required.") }
            return .none
        }
        if value.isNull { throw StandInError.failedValidation(field: "post", type: "nnull", message: "Value can't be null.") }
        guard let id = value.intValue ?? value.stringValue.flatMap({ Int64($0) }) else {
            throw StandInError.invalidPayload("Invalid value for field \"post\"")
        }
        guard lock.withLock({ state.postIndex(id) != nil }) else {
            throw StandInError(status: 400, code: "INVALID_FOREIGN_KEY",
                               message: "Invalid foreign key for field \"post\" in collection \"comments\".",
                               extensions: [("collection", .string("comments")), ("field", .string("post"))])
        }
        return .some(id)
    }

    /// `body` of a payload: NOT NULL text (numbers and booleans as text).
    private func commentBody(_ value: JSONValue?, required: Bool) throws -> String?? {
        guard let value else {
            if required { throw StandInError.failedValidation(field: "body", type: "required", message: "Value is required.") }
            return .none
        }
        switch value {
        case .null: throw StandInError.failedValidation(field: "body", type: "nnull", message: "Value can't be null.")
        case .string(let text): return .some(text)
        case .int, .double, .bool: return .some(value.text)
        case .array, .object: throw StandInError.invalidPayload("Invalid value for field \"body\"")
        }
    }
}
