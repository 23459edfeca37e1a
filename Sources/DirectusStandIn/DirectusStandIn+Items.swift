import DirectusPlan
import FoundationEssentials
import PosternHTTP
import PosternIO

extension DirectusStandIn {
    /// `/items/:collection[/:id]`, under the stored rules of the caller's policies (`itemRules`).
    func items(_ context: Context, collection: String, id: String?, body: JSONValue?, caller: Caller) throws -> HTTPResponse {
        let method = context.request.method
        let query = try ItemQuery.parse(context.queryItems)
        if collection == BootstrapPlan.commentsCollection
            || (collection == "posts" && Self.needsRelationalRead(query, method: method)) {
            return try relationalItems(context, collection: collection, id: id, body: body, caller: caller, query: query)
        }
        guard collection == "posts" else { throw StandInError.forbiddenCollection(collection) }
        if method == .post || method == .patch, Self.namesRelations(query.fields) {
            // Write with the flat path, then read the rows back through the relations (`fields=…,user_created.x`).
            var flat = query
            flat.fields = ["id"]
            let written = try postItems(context, id: id, body: body, caller: caller, query: flat)
            return try relationalReadBack(written, query: query, caller: caller, now: context.now)
        }
        return try postItems(context, id: id, body: body, caller: caller, query: query)
    }

    /// `/items/posts[/:id]` on the flat fast path.
    private func postItems(_ context: Context, id: String?, body: JSONValue?, caller: Caller,
                           query: ItemQuery) throws -> HTTPResponse {
        let method = context.request.method
        let collection = "posts"
        let rules = try itemRules(caller, collection: collection, now: context.now)
        guard rules.admin || !rules.byAction.isEmpty else { throw StandInError.forbiddenCollection(collection) }
        var plan = try ReadPlan(query: query, caller: caller, now: context.now)
        if let readable = rules.readableFields {
            // Explicitly requested fields the caller may not read are 403; `*` leaves them out.
            for name in query.fields ?? [] where name != "*" {
                let head = String(name.prefix { $0 != "." })
                if !readable.contains(head) { throw StandInError.forbiddenField(name, collection: collection) }
            }
            plan.fields.removeAll { !readable.contains($0.field.rawValue) }
        }

        switch (method, id) {
        case (.get, nil), (.other("SEARCH"), nil):
            _ = try rules.require("read", collection)
            return list(plan, readFilter: rules.readFilter)
        case (.get, let id?):
            _ = try rules.require("read", collection)
            guard let key = Int64(id), let post = lock.withLock({ state.postIndex(key).map { state.posts[$0] } }),
                  rules.readFilter?.contains(where: { $0.covers(post) }) ?? true else {
                throw StandInError.forbidden
            }
            if plan.selectsWholeRow {
                var out = Array(#"{"data":"#.utf8)
                out += post.serialized
                out.append(UInt8(ascii: "}"))
                return HTTPResponse(status: 200, headers: Self.commonHeaders, body: Data(out))
            }
            return Self.dataResponse(render([post], plan)[0])
        case (.post, nil):
            return try create(body, caller: caller, rules: rules, plan: plan, now: context.now)
        case (.patch, let id?):
            return try update(keys: [id], data: body ?? .object([]), batch: false, caller: caller, rules: rules,
                              plan: plan, now: context.now)
        case (.patch, nil):
            return try batchUpdate(body, caller: caller, rules: rules, plan: plan, now: context.now)
        case (.delete, let id?):
            return try delete(keys: [id], rules: rules)
        case (.delete, nil):
            return try delete(keys: try Self.batchKeys(body), rules: rules)
        default:
            throw StandInError.routeNotFound(context.request.path)
        }
    }

    // MARK: - Read

    private func list(_ plan: ReadPlan, readFilter: [ItemRules.Rule]?) -> HTTPResponse {
        let (all, users) = lock.withLock { (state.posts, plan.needsUsers ? state.users : [:]) }
        // Work on indexes into the snapshot: copying `Post` values costs many retains.
        // Rows the caller may not read are left out, of the counts too.
        var visible = Array(all.indices)
        if let readFilter { visible = visible.filter { row in readFilter.contains { $0.covers(all[row]) } } }
        var selected: [Int]
        if plan.predicate != nil || plan.search != nil {
            selected = visible.filter { plan.matches(all[$0]) }
        } else {
            selected = visible
        }
        if !plan.sort.isEmpty {
            selected.sort { a, b in
                for (field, descending) in plan.sort {
                    let order = Post.order(all[a], all[b], by: field)
                    if order != .orderedSame { return descending ? order == .orderedDescending : order == .orderedAscending }
                }
                return all[a].id < all[b].id
            }
        }
        let filterCount = selected.count
        selected = Array(selected[Self.window(count: selected.count, limit: plan.limit, offset: plan.offset, page: plan.page)])
        // Written by hand so that whole rows can be spliced in from their cached serialization.
        var out: [UInt8] = []
        out.reserveCapacity(64 + selected.count * (all.first?.serialized.count ?? 64))
        out.append(UInt8(ascii: "{"))
        if !plan.meta.isEmpty {
            let meta = Self.meta(plan.meta, total: visible.count, filtered: filterCount)
            out += Array(#""meta":"#.utf8)
            JSONValue.object(meta).write(into: &out)
            out.append(UInt8(ascii: ","))
        }
        out += Array(#""data":["#.utf8)
        if plan.selectsWholeRow {
            for (index, row) in selected.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                out += all[row].serialized
            }
        } else if let columns = plan.plainColumns {
            let keys = columns.map(\.quotedKey)
            for (index, row) in selected.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                out.append(UInt8(ascii: "{"))
                for (position, column) in columns.enumerated() {
                    if position > 0 { out.append(UInt8(ascii: ",")) }
                    out += keys[position]
                    out += all[row].serializedFields[column.index]
                }
                out.append(UInt8(ascii: "}"))
            }
        } else {
            for (index, row) in render(selected.map { all[$0] }, plan, users: users).enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                row.write(into: &out)
            }
        }
        out += Array("]}".utf8)
        return HTTPResponse(status: 200, headers: Self.commonHeaders, body: Data(out))
    }

    /// The rows as the read plan's `fields` select them.
    func render(_ rows: [Post], _ plan: ReadPlan, users: [String: User]? = nil) -> [JSONValue] {
        let users = users ?? (plan.needsUsers ? lock.withLock { state.users } : [:])
        return rows.map { post in
            .object(plan.fields.map { selection in
                switch selection {
                case .plain(let field):
                    return (field.rawValue, post.value(field))
                case .relation(let field, let subfields):
                    guard let id = post.value(field).stringValue, let user = users[id] else { return (field.rawValue, .null) }
                    return (field.rawValue, .object(subfields.compactMap { name in user.value(name).map { (name, $0) } }))
                }
            })
        }
    }

    /// Compares two scalars of the same kind (numbers with numbers, strings with strings).
    static func compare(_ a: JSONValue, _ b: JSONValue) -> ComparisonResult? {
        switch (a, b) {
        case let (.int(x), .int(y)): return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
        case let (.string(x), .string(y)): return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
        case let (.bool(x), .bool(y)): return x == y ? .orderedSame : (!x ? .orderedAscending : .orderedDescending)
        default:
            if let x = Self.number(a), let y = Self.number(b) {
                return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
            }
            return nil
        }
    }

    private static func number(_ value: JSONValue) -> Double? {
        switch value {
        case .int(let i): return Double(i)
        case .double(let d): return d
        default: return nil
        }
    }

    // MARK: - Create

    private func create(_ body: JSONValue?, caller: Caller, rules: ItemRules, plan: ReadPlan, now: Double) throws -> HTTPResponse {
        let createRules = rules.admin ? [] : try rules.require("create", "posts")
        let payload = body ?? .object([])
        let batch = payload.arrayValue != nil
        let rows = payload.arrayValue ?? [payload]
        let date = Self.isoTimestamp(now)
        var drafts: [(id: Int64?, post: Post)] = []
        for given in rows {
            guard let members = given.objectValue else { throw StandInError.invalidPayload("\"value\" must be of type object") }
            var row = given
            if !rules.admin {
                // One rule must allow every payload field; its presets sit under the payload.
                guard let rule = createRules.first(where: { rule in members.allSatisfy { rule.allows($0.0) } }) else {
                    let extra = members.first { field in !createRules.contains { $0.allows(field.0) } } ?? members[0]
                    throw StandInError.forbiddenField(extra.0, collection: "posts")
                }
                row = Self.merge(.object(rule.presets), members)
            }
            var explicitID: Int64?
            if rules.admin, let id = row["id"], !id.isNull {
                guard let key = id.intValue ?? id.stringValue.flatMap({ Int64($0) }) else {
                    throw StandInError.invalidPayload("Invalid value for field \"id\"")
                }
                explicitID = key
            }
            guard let titleValue = row["title"] else {
                throw StandInError.failedValidation(field: "title", type: "required", message: "Value is required.")
            }
            let title = try Self.text(titleValue, field: "title")
            guard let title else {
                throw StandInError.failedValidation(field: "title", type: "nnull", message: "Value can't be null.")
            }
            let content = try row["content"].flatMap { try Self.text($0, field: "content") }
            drafts.append((explicitID, Post(id: 0, title: title, content: content, userCreated: caller.userID,
                                             dateCreated: date, userUpdated: nil, dateUpdated: nil)))
        }
        let created: [Post] = try lock.withLock {
            var seen = Set<Int64>()
            for draft in drafts {
                if let id = draft.id, state.postIndex(id) != nil || !seen.insert(id).inserted {
                    throw StandInError(status: 400, code: "RECORD_NOT_UNIQUE",
                                        message: "Value \"\(id)\" for field \"id\" in collection \"posts\" has to be unique.",
                                        extensions: [("collection", .string("posts")), ("field", .string("id")),
                                                     ("value", .string(String(id)))])
                }
            }
            return drafts.map { draft in
                var post = draft.post
                post.id = draft.id ?? state.nextPostID
                return state.insert(post)
            }
        }
        let data = render(created, plan)
        return Self.dataResponse(batch ? .array(data) : data[0])
    }

    /// A string column value from the payload: strings as they are, numbers and booleans as text, null as nil.
    private static func text(_ value: JSONValue, field: String) throws -> String? {
        switch value {
        case .null: return nil
        case .string(let s): return s
        case .int, .double, .bool: return value.text
        case .array, .object: throw StandInError.invalidPayload("Invalid value for field \"\(field)\"")
        }
    }

    // MARK: - Update and delete

    private func batchUpdate(_ body: JSONValue?, caller: Caller, rules: ItemRules, plan: ReadPlan, now: Double) throws -> HTTPResponse {
        guard let body else { throw StandInError.invalidPayload("\"value\" must be of type object") }
        if let keys = body["keys"]?.arrayValue, let data = body["data"], data.objectValue != nil {
            return try update(keys: keys.map { $0.stringValue ?? $0.text }, data: data, batch: true,
                              caller: caller, rules: rules, plan: plan, now: now)
        }
        throw StandInError.invalidPayload("\"keys\" is required")
    }

    private static func batchKeys(_ body: JSONValue?) throws -> [String] {
        if let keys = body?.arrayValue ?? body?["keys"]?.arrayValue {
            return keys.map { $0.stringValue ?? $0.text }
        }
        throw StandInError.invalidPayload("\"keys\" is required")
    }

    private func update(keys: [String], data given: JSONValue, batch: Bool, caller: Caller, rules: ItemRules,
                        plan: ReadPlan, now: Double) throws -> HTTPResponse {
        guard let members = given.objectValue else { throw StandInError.invalidPayload("\"value\" must be of type object") }
        let updateRules = rules.admin ? [] : try rules.require("update", "posts")
        // Presets of the update rules sit under the payload.
        let data = rules.admin ? given : Self.merge(.object(updateRules.flatMap(\.presets)), members)
        let fieldList = members.map { "\"\($0.0)\"" }.joined(separator: ", ")
        let denied = members.isEmpty
            ? StandInError.forbidden("You don't have permission to perform \"update\" for collection \"posts\" or it does not exist.")
            : StandInError.forbidden("You don't have permissions to perform \"update\" for the field(s) \(fieldList) in collection \"posts\" or it does not exist.")
        let date = Self.isoTimestamp(now)
        let updated: [Post] = try lock.withLock {
            var indexes: [Int] = []
            for key in keys {
                guard let id = Int64(key), let index = state.postIndex(id) else {
                    if rules.admin { continue }
                    throw denied
                }
                // The row must pass a rule's filter (e.g. `user_created = $CURRENT_USER`).
                if !rules.admin, !updateRules.contains(where: { $0.covers(state.posts[index]) }) { throw denied }
                indexes.append(index)
            }
            if !rules.admin, let extra = members.first(where: { field in !updateRules.contains { $0.allows(field.0) } }) {
                throw StandInError.forbiddenField(extra.0, collection: "posts")
            }
            var title: String??
            var content: String??
            if let value = data["title"] {
                guard let text = try Self.text(value, field: "title") else {
                    throw StandInError.failedValidation(field: "title", type: "nnull", message: "Value can't be null.")
                }
                title = .some(text)
            }
            if let value = data["content"] { content = .some(try Self.text(value, field: "content")) }
            return indexes.map { index in
                var post = state.posts[index]
                if let title, let text = title { post.title = text }
                if let content { post.content = content }
                // `user-created` only acts on create: an update may change it where the rule's fields allow it.
                if let value = data["user_created"] { post.userCreated = value.stringValue }
                post.userUpdated = caller.userID
                post.dateUpdated = date
                post.refreshCache()
                state.posts[index] = post
                return post
            }
        }
        // An admin PATCH of a missing id reads nothing back: 204 (directus/directus#12604).
        if updated.isEmpty { return Self.noContent() }
        let rendered = render(updated, plan)
        return Self.dataResponse(batch ? .array(rendered) : rendered[0])
    }

    private func delete(keys: [String], rules: ItemRules) throws -> HTTPResponse {
        let deleteRules = rules.admin ? [] : try rules.require("delete", "posts")
        let denied = StandInError.forbidden("You don't have permission to perform \"delete\" for collection \"posts\" or it does not exist.")
        try lock.withLock {
            var ids: Set<Int64> = []
            for key in keys {
                guard let id = Int64(key), let index = state.postIndex(id) else {
                    if rules.admin { continue }
                    throw denied
                }
                if !rules.admin, !deleteRules.contains(where: { $0.covers(state.posts[index]) }) { throw denied }
                ids.insert(id)
            }
            if !ids.isEmpty {
                state.posts.removeAll { ids.contains($0.id) }
                // `comments.post` is ON DELETE CASCADE.
                state.comments.removeAll { ids.contains($0.post) }
            }
        }
        return Self.noContent()
    }
}
