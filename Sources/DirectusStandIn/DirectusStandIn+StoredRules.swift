import DirectusPlan
import FoundationEssentials
import PosternHTTP

/// The stored permission rows of a caller's policies on one collection, compiled, as Directus evaluates them: per
/// action, each row's `permissions` filter (with `$CURRENT_USER` and the other variables), its `fields` (`*` for
/// all) and its `presets`. The items routes compile the filters against `posts` (`ItemRules`), the relational
/// reads against any collection (`TableRules`).
extension DirectusStandIn {
    /// The rules of one caller on one collection, with filters of type `Filter`.
    struct StoredRules<Filter: Sendable>: Sendable {
        /// One stored permission row, compiled.
        struct Rule: Sendable {
            /// Allowed fields; nil for all (`*`).
            var fields: Set<String>?
            /// The item filter; nil for every item.
            var filter: Filter?
            /// Values merged under the payload.
            var presets: [(String, JSONValue)]

            /// Whether the rule allows `field`.
            func allows(_ field: String) -> Bool { fields?.contains(field) ?? true }
        }

        /// Admin access: everything.
        var admin: Bool
        /// Rules by action (`create`, `read`, `update`, `delete`).
        var byAction: [String: [Rule]]

        /// The rules for `action` (none for an admin, who needs none); 403 on the collection when there is none.
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
    }

    /// The rules of the caller's policies on `collection`, each row's `permissions` compiled by `compile`.
    func storedRules<Filter: Sendable>(_ caller: Caller, collection: String,
                                       compile: (JSONValue) throws -> Filter) throws -> StoredRules<Filter> {
        if caller.admin { return StoredRules(admin: true, byAction: [:]) }
        let rows = lock.withLock { () -> [JSONValue] in
            let policies = state.admin.policies(of: caller)
            return state.admin.permissions.filter {
                $0["collection"]?.stringValue == collection && policies.contains($0["policy"]?.stringValue ?? "")
            }
        }
        var byAction: [String: [StoredRules<Filter>.Rule]] = [:]
        for row in rows {
            guard let action = row["action"]?.stringValue else { continue }
            let fields = DirectusPermissionRow.fieldListForStandIn(row["fields"])
            var filter: Filter?
            if let stored = row["permissions"], !stored.isNull, !(stored.objectValue?.isEmpty ?? false) {
                filter = try compile(stored)
            }
            byAction[action, default: []].append(.init(fields: fields.contains("*") ? nil : Set(fields), filter: filter,
                                                        presets: row["presets"]?.objectValue ?? []))
        }
        return StoredRules(admin: false, byAction: byAction)
    }
}
