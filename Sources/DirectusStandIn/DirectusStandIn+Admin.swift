import DirectusPlan
import FoundationEssentials
import PosternHTTP
import PosternIO

/// The admin API of Directus 11 that `postern bootstrap` uses (docs/bootstrap.md): collections,
/// fields, relations, roles, policies, access, permissions and settings, kept as JSON rows so that GETs see
/// what POSTs created. The stored rules also decide who may use `posts` and who may register.
extension DirectusStandIn {
    /// The fixed id of the Public policy on every v11 install.
    package static let publicPolicyID = "abf8a154-5b1c-4a46-ac9c-7300570f4f17"
    /// The id of the "Administrator" policy.
    package static let adminPolicyID = "5b3c1e2d-7a4f-4e8b-9c0d-1e2f3a4b5c6d"
    /// The id of the seeded "App User" policy.
    package static let appUserPolicyID = "7c8d9e0f-1a2b-4c3d-8e4f-5a6b7c8d9e0f"

    /// System collections that exist on every install (readable through `/collections/:c` by admins).
    static let systemCollections: Set<String> = [
        "directus_users", "directus_roles", "directus_policies", "directus_access", "directus_permissions",
        "directus_settings", "directus_collections", "directus_fields", "directus_relations", "directus_files",
    ]

    /// The schema and access-control tables, as rows in the shape the API returns.
    struct AdminState {
        /// `directus_collections` (user collections only): `{collection, meta, schema}`.
        var collections: [JSONValue] = []
        /// `directus_fields` of user collections: `{collection, field, type, meta, schema}`.
        var fields: [JSONValue] = []
        /// `directus_relations`: `{collection, field, related_collection, schema, meta}`.
        var relations: [JSONValue] = []
        /// `directus_roles` without alias fields.
        var roles: [JSONValue] = []
        /// `directus_policies` without alias fields.
        var policies: [JSONValue] = []
        /// `directus_access`.
        var access: [JSONValue] = []
        /// `directus_permissions` (fields stored as an array).
        var permissions: [JSONValue] = []
        /// The next `directus_permissions.id`.
        var nextPermissionID: Int64 = 1
        /// The next `directus_relations.id`.
        var nextRelationID: Int64 = 1
        /// The `directus_settings` singleton.
        var settings: JSONValue = .object([])

        /// Whether `collection` is a user collection with a table (not a folder).
        func hasTable(_ collection: String) -> Bool {
            collections.contains { $0["collection"]?.stringValue == collection && !($0["schema"]?.isNull ?? true) }
        }

        /// The policy ids that apply to `caller`: its role's, its own, and the Public ones.
        func policies(of caller: Caller) -> Set<String> {
            var ids = Set<String>()
            for row in access {
                let role = row["role"]?.stringValue
                let user = row["user"]?.stringValue
                let applies = (role == nil && user == nil) || (role != nil && role == caller.role)
                    || (user != nil && user == caller.userID)
                if applies, let policy = row["policy"]?.stringValue { ids.insert(policy) }
            }
            return ids
        }

        /// The stored rules for `collection` and `action` under any of `policies`.
        func rules(_ collection: String, _ action: String, policies: Set<String>) -> [JSONValue] {
            permissions.filter {
                $0["collection"]?.stringValue == collection && $0["action"]?.stringValue == action
                    && policies.contains($0["policy"]?.stringValue ?? "")
            }
        }

        /// The Public policy ids (access rows with neither role nor user).
        var publicPolicies: Set<String> {
            Set(access.filter { $0["role"]?.isNull ?? true }.filter { $0["user"]?.isNull ?? true }
                .compactMap { $0["policy"]?.stringValue })
        }
    }

    // MARK: - Seed

    /// A fresh install (admin role and policy, Public policy, settings), plus with `seedSchema` the tutorial
    /// schema as `postern bootstrap` leaves it (App User role with the fixed id, its policy and rules).
    func seedSystem() {
        var admin = AdminState()
        admin.roles = [.object([("id", .string(Self.adminRoleID)), ("name", .string("Administrator")),
                                ("icon", .string("verified")), ("description", .string("$t:admin_description")),
                                ("parent", .null)])]
        admin.policies = [
            Self.policyRow(id: Self.adminPolicyID, name: "Administrator", icon: "verified", admin: true, app: true),
            Self.policyRow(id: Self.publicPolicyID, name: "$t:public_label", icon: "public", admin: false, app: false),
        ]
        admin.access = [
            .object([("id", .string(Self.uuid())), ("role", .string(Self.adminRoleID)), ("user", .null),
                     ("policy", .string(Self.adminPolicyID)), ("sort", .null)]),
            .object([("id", .string(Self.uuid())), ("role", .null), ("user", .null),
                     ("policy", .string(Self.publicPolicyID)), ("sort", .int(1))]),
        ]
        admin.settings = .object([
            ("id", .int(1)), ("project_name", .string("Directus stand-in")), ("auth_login_attempts", .int(25)),
            ("public_registration", .bool(false)), ("public_registration_role", .null),
            ("public_registration_verify_email", .bool(true)), ("public_registration_email_filter", .null),
        ])
        if options.seedSchema {
            // The bootstrap's own plan is the seed: the seeded stand-in is what a bootstrapped Directus looks like.
            _ = try? Self.createCollection(BootstrapPlan.collectionBody, in: &admin)
            for field in BootstrapPlan.userFields {
                _ = try? Self.createRelation(BootstrapPlan.relationBody(field: field), in: &admin)
            }
            _ = try? Self.createCollection(BootstrapPlan.commentsCollectionBody, in: &admin)
            _ = try? Self.createField(BootstrapPlan.commentsAliasField, collection: BootstrapPlan.collection, in: &admin)
            _ = try? Self.createRelation(BootstrapPlan.commentPostRelationBody, in: &admin)
            _ = try? Self.createRelation(BootstrapPlan.commentUserRelationBody, in: &admin)
            admin.roles.append(.object([("id", .string(Self.appUserRoleID)), ("name", .string("App User")),
                                        ("icon", .string("person")), ("description", .null), ("parent", .null)]))
            admin.policies.append(Self.policyRow(id: Self.appUserPolicyID, name: "App User", icon: "badge",
                                                 admin: false, app: false))
            admin.access.append(.object([("id", .string(Self.uuid())), ("role", .string(Self.appUserRoleID)),
                                         ("user", .null), ("policy", .string(Self.appUserPolicyID)), ("sort", .null)]))
            var rows = BootstrapPlan.appPermissions.map { $0.body(policy: Self.appUserPolicyID) }
            if options.publicUserCreate {
                rows.append(BootstrapPlan.publicRegistration(role: Self.appUserRoleID).body(policy: Self.publicPolicyID))
            }
            _ = try? Self.createPermissions(.array(rows), in: &admin)
            admin.settings = Self.merge(admin.settings, [
                ("public_registration", .bool(options.publicRegistration)),
                ("public_registration_role", .string(Self.appUserRoleID)),
                ("public_registration_verify_email", .bool(false)),
            ])
        }
        lock.withLock { state.admin = admin }
    }

    private static func policyRow(id: String, name: String, icon: String, admin: Bool, app: Bool) -> JSONValue {
        .object([("id", .string(id)), ("name", .string(name)), ("icon", .string(icon)), ("description", .null),
                 ("ip_access", .null), ("enforce_tfa", .bool(false)), ("admin_access", .bool(admin)),
                 ("app_access", .bool(app))])
    }

    // MARK: - Routing

    /// Answers the admin routes, or nil when `segments` is not one of them.
    func adminRoute(_ context: Context, segments: [String], body: JSONValue?, caller: Caller) throws -> HTTPResponse? {
        let tables: Set<String> = ["collections", "fields", "relations", "roles", "policies", "access", "permissions", "settings"]
        guard let head = segments.first, tables.contains(head) else { return nil }
        let method = context.request.method
        // `/policies` and `/access` appear in v11.0.0.
        if (head == "policies" || head == "access"), (Int(options.version.prefix { $0.isNumber }) ?? 11) < 11 {
            throw StandInError.routeNotFound(context.request.path)
        }
        guard caller.admin else { throw StandInError.forbidden }
        return try lock.withLock { () throws -> HTTPResponse in
            switch (method, head, segments.count) {
            case (.get, "collections", 1):
                return list(state.admin.collections, context)
            case (.get, "collections", 2):
                if Self.systemCollections.contains(segments[1]) {
                    return Self.dataResponse(.object([("collection", .string(segments[1])), ("meta", .null),
                                                      ("schema", .object([("name", .string(segments[1]))]))]))
                }
                guard let row = state.admin.collections.first(where: { $0["collection"]?.stringValue == segments[1] }) else {
                    throw StandInError.forbidden
                }
                return Self.dataResponse(row)
            case (.post, "collections", 1):
                return Self.dataResponse(try Self.createCollection(try Self.object(body), in: &state.admin))
            case (.get, "fields", 2):
                // A folder (a collection without a table, `schema: null`) has no fields: 403 like a missing one.
                guard state.admin.hasTable(segments[1]) else { throw StandInError.forbidden }
                return Self.dataResponse(.array(state.admin.fields.filter { $0["collection"]?.stringValue == segments[1] }))
            case (.get, "fields", 3):
                guard let row = Self.field(segments[1], segments[2], in: state.admin) else { throw StandInError.forbidden }
                return Self.dataResponse(row)
            case (.post, "fields", 2):
                return Self.dataResponse(try Self.createField(body, collection: segments[1], in: &state.admin))
            case (.get, "relations", 1):
                return list(state.admin.relations, context)
            case (.get, "relations", 2):
                guard state.admin.hasTable(segments[1]) else { throw StandInError.forbidden }
                return Self.dataResponse(.array(state.admin.relations.filter { $0["collection"]?.stringValue == segments[1] }))
            case (.get, "relations", 3):
                guard let row = state.admin.relations.first(where: {
                    $0["collection"]?.stringValue == segments[1] && $0["field"]?.stringValue == segments[2]
                }) else { throw StandInError.forbidden }
                return Self.dataResponse(row)
            case (.post, "relations", 1):
                return Self.dataResponse(try Self.createRelation(try Self.object(body), in: &state.admin))
            case (.patch, "relations", 3):
                return Self.dataResponse(try Self.updateRelation(segments[1], segments[2], try Self.object(body),
                                                                 in: &state.admin))
            case (.get, "roles", 1), (.get, "policies", 1), (.get, "access", 1), (.get, "permissions", 1):
                return list(rows(head), context)
            case (.get, "roles", 2), (.get, "policies", 2), (.get, "access", 2), (.get, "permissions", 2):
                guard let row = rows(head).first(where: { Self.key($0["id"]) == segments[1] }) else { throw StandInError.forbidden }
                return Self.dataResponse(row)
            case (.post, "roles", 1):
                return Self.dataResponse(decorate(try createRole(try Self.object(body)), table: "roles"))
            case (.post, "policies", 1):
                return Self.dataResponse(decorate(try createPolicy(try Self.object(body)), table: "policies"))
            case (.post, "access", 1):
                return Self.dataResponse(try createAccess(try Self.object(body)))
            case (.post, "permissions", 1):
                return Self.dataResponse(try Self.createPermissions(body ?? .object([]), in: &state.admin))
            case (.patch, "permissions", 2):
                return Self.dataResponse(try updatePermission(segments[1], try Self.object(body)))
            case (.delete, "permissions", 2):
                guard let index = state.admin.permissions.firstIndex(where: { Self.key($0["id"]) == segments[1] }) else {
                    throw StandInError.forbidden
                }
                state.admin.permissions.remove(at: index)
                return Self.noContent()
            case (.get, "settings", 1):
                return Self.dataResponse(project(state.admin.settings, fields: context.query("fields")))
            case (.patch, "settings", 1):
                let allowed = Set(state.admin.settings.objectValue?.map(\.0) ?? []).subtracting(["id"])
                let changes = try Self.object(body).objectValue?.filter { allowed.contains($0.0) } ?? []
                state.admin.settings = Self.merge(state.admin.settings, changes)
                return Self.dataResponse(state.admin.settings)
            default:
                throw StandInError.routeNotFound(context.request.path)
            }
        }
    }

    /// The rows of a table with alias fields filled in. Call with the lock held.
    private func rows(_ table: String) -> [JSONValue] {
        switch table {
        case "roles": return state.admin.roles.map { decorate($0, table: table) }
        case "policies": return state.admin.policies.map { decorate($0, table: table) }
        case "access": return state.admin.access
        default: return state.admin.permissions
        }
    }

    /// Adds the o2m/m2m alias fields `GET` returns with `fields=*`. Call with the lock held.
    private func decorate(_ row: JSONValue, table: String) -> JSONValue {
        let id = row["id"]?.stringValue
        let links = state.admin.access.filter { $0[table == "roles" ? "role" : "policy"]?.stringValue == id }
        let linkIDs = JSONValue.array(links.compactMap { $0["id"] })
        if table == "roles" {
            let users = state.users.values.filter { $0.role == id }.map { JSONValue.string($0.id) }
            return Self.merge(row, [("children", .array([])), ("policies", linkIDs), ("users", .array(users))])
        }
        let permissions = state.admin.permissions.filter { $0["policy"]?.stringValue == id }.compactMap { $0["id"] }
        return Self.merge(row, [("permissions", .array(permissions)), ("users", .array([])), ("roles", linkIDs)])
    }

    // MARK: - Creating rows

    /// `POST /collections`: a table (with `schema`) or a folder (without), its fields, an `id` when none is a key.
    static func createCollection(_ body: JSONValue, in admin: inout AdminState) throws -> JSONValue {
        guard let name = body["collection"]?.stringValue, !name.isEmpty else {
            throw StandInError.invalidPayload("\"collection\" is required")
        }
        if name.hasPrefix("directus_") { throw StandInError.invalidPayload("Collections can't start with \"directus_\"") }
        if admin.collections.contains(where: { $0["collection"]?.stringValue == name }) {
            throw StandInError.invalidPayload("Collection \"\(name)\" already exists")
        }
        if let fields = body["fields"], fields.arrayValue == nil {
            throw StandInError.invalidPayload("\"fields\" must be an array")
        }
        let isTable = body["schema"].map { !$0.isNull } ?? false
        let row = JSONValue.object([
            ("collection", .string(name)),
            ("meta", merge(body["meta"] ?? .object([]), [("collection", .string(name))])),
            ("schema", isTable ? .object([("name", .string(name))]) : .null),
        ])
        var fields: [JSONValue] = []
        if isTable {
            fields = try (body["fields"]?.arrayValue ?? []).map { try checkedField($0, collection: name) }
            let hasKey = fields.contains { $0["schema"]?["is_primary_key"] == .bool(true) || $0["schema"]?["has_auto_increment"] == .bool(true) }
            if !hasKey {
                fields.insert(.object([("collection", .string(name)), ("field", .string("id")), ("type", .string("integer")),
                                       ("meta", .object([("hidden", .bool(true))])),
                                       ("schema", .object([("is_primary_key", .bool(true)), ("has_auto_increment", .bool(true))]))]),
                              at: 0)
            }
        }
        admin.collections.append(row)
        admin.fields += fields
        return row
    }

    /// `POST /fields/:collection`: one field object.
    static func createField(_ body: JSONValue?, collection: String, in admin: inout AdminState) throws -> JSONValue {
        guard admin.hasTable(collection) else { throw StandInError.forbidden }
        let row = try checkedField(try object(body), collection: collection)
        if let name = row["field"]?.stringValue, field(collection, name, in: admin) != nil {
            throw StandInError.invalidPayload("Field \"\(name)\" already exists in collection \"\(collection)\"")
        }
        admin.fields.append(row)
        return row
    }

    /// A field definition validated like the fields controller's Joi schema, with its collection.
    private static func checkedField(_ body: JSONValue, collection: String) throws -> JSONValue {
        guard body.objectValue != nil else { throw StandInError.invalidPayload("\"value\" must be of type object") }
        guard let name = body["field"]?.stringValue, !name.isEmpty else { throw StandInError.invalidPayload("\"field\" is required") }
        let types: Set<String> = ["alias", "bigInteger", "boolean", "date", "dateTime", "decimal", "float", "integer", "json",
                                  "string", "text", "time", "timestamp", "binary", "uuid", "hash", "csv"]
        guard let type = body["type"]?.stringValue, types.contains(type) else {
            throw StandInError.invalidPayload("\"type\" must be one of [\(types.sorted().joined(separator: ", "))]")
        }
        // An alias field (`o2m`, …) has no column: `schema` is null whatever was sent (fields.ts skips the column).
        let schema = type == "alias" ? JSONValue.null : body["schema"] ?? .object([])
        return .object([("collection", .string(collection)), ("field", .string(name)), ("type", .string(type)),
                        ("meta", body["meta"] ?? .null), ("schema", schema)])
    }

    /// The field `name` of `collection`, if it exists.
    private static func field(_ collection: String, _ name: String, in admin: AdminState) -> JSONValue? {
        admin.fields.first { $0["collection"]?.stringValue == collection && $0["field"]?.stringValue == name }
    }

    /// `POST /relations` as `RelationsService.createOne` checks it (docs/bootstrap.md): `collection` and `field`
    /// required, both existing, the field not the primary key, the related collection existing, one relation per
    /// field; the meta row is the body's `meta` with `many_collection`, `many_field` and `one_collection` set, and
    /// a related collection gets a foreign key. The answer is the relation read back.
    static func createRelation(_ body: JSONValue, in admin: inout AdminState) throws -> JSONValue {
        guard let collection = body["collection"]?.stringValue else { throw StandInError.invalidPayload("\"collection\" is required") }
        guard let name = body["field"]?.stringValue else { throw StandInError.invalidPayload("\"field\" is required") }
        guard admin.hasTable(collection) else { throw StandInError.invalidPayload("Collection \"\(collection)\" doesn't exist") }
        guard let fieldRow = field(collection, name, in: admin) else {
            throw StandInError.invalidPayload("Field \"\(name)\" doesn't exist in collection \"\(collection)\"")
        }
        if fieldRow["schema"]?["is_primary_key"] == .bool(true) {
            throw StandInError.invalidPayload("Field \"\(name)\" in collection \"\(collection)\" is a primary key")
        }
        let related = body["related_collection"]?.stringValue
        if let related, !admin.hasTable(related), !systemCollections.contains(related) {
            throw StandInError.invalidPayload("Collection \"\(related)\" doesn't exist")
        }
        if admin.relations.contains(where: { $0["collection"]?.stringValue == collection && $0["field"]?.stringValue == name }) {
            throw StandInError.invalidPayload("Field \"\(name)\" in collection \"\(collection)\" already has an associated relationship")
        }
        let onDelete = body["schema"]?["on_delete"]?.stringValue ?? "NO ACTION"
        let actions: Set<String> = ["NO ACTION", "SET NULL", "SET DEFAULT", "CASCADE", "RESTRICT"]
        guard actions.contains(onDelete) else { throw StandInError.invalidPayload("\"schema.on_delete\" is not valid") }
        let id = admin.nextRelationID
        admin.nextRelationID += 1
        let defaults: [(String, JSONValue)] = [
            ("id", .int(id)), ("many_collection", .null), ("many_field", .null), ("one_collection", .null),
            ("one_field", .null), ("one_collection_field", .null), ("one_allowed_collections", .null),
            ("junction_field", .null), ("sort_field", .null), ("one_deselect_action", .string("nullify")),
        ]
        let given = (body["meta"]?.objectValue ?? []).filter { $0.0 != "id" }
        let meta = merge(merge(.object(defaults), given), [
            ("many_collection", .string(collection)), ("many_field", .string(name)),
            ("one_collection", related.map(JSONValue.string) ?? .null),
        ])
        let row = JSONValue.object([
            ("collection", .string(collection)), ("field", .string(name)),
            ("related_collection", related.map(JSONValue.string) ?? .null),
            ("schema", related.map { related in
                JSONValue.object([("table", .string(collection)), ("column", .string(name)),
                                  ("foreign_key_schema", .string("public")),
                                  ("foreign_key_table", .string(related)),
                                  ("foreign_key_column", .string("id")), ("constraint_name", .string("\(collection)_\(name)_foreign")),
                                  ("on_update", .string(body["schema"]?["on_update"]?.stringValue ?? "NO ACTION")),
                                  ("on_delete", .string(onDelete))])
            } ?? .null),
            ("meta", meta),
        ])
        admin.relations.append(row)
        return row
    }

    /// `PATCH /relations/:collection/:field` (`RelationsService.updateOne`): anything under `meta`, and
    /// `schema.on_delete`; 400 when the field has no relation.
    static func updateRelation(_ collection: String, _ name: String, _ body: JSONValue,
                               in admin: inout AdminState) throws -> JSONValue {
        guard admin.hasTable(collection) else { throw StandInError.invalidPayload("Collection \"\(collection)\" doesn't exist") }
        guard field(collection, name, in: admin) != nil else {
            throw StandInError.invalidPayload("Field \"\(name)\" doesn't exist in collection \"\(collection)\"")
        }
        guard let index = admin.relations.firstIndex(where: {
            $0["collection"]?.stringValue == collection && $0["field"]?.stringValue == name
        }) else {
            throw StandInError.invalidPayload("Field \"\(name)\" in collection \"\(collection)\" doesn't have a relationship.")
        }
        var row = admin.relations[index]
        if let changes = body["meta"]?.objectValue {
            row = merge(row, [("meta", merge(row["meta"] ?? .object([]), changes.filter { $0.0 != "id" }))])
        }
        if let onDelete = body["schema"]?["on_delete"], let schema = row["schema"], !schema.isNull {
            row = merge(row, [("schema", merge(schema, [("on_delete", onDelete)]))])
        }
        admin.relations[index] = row
        return row
    }

    /// `POST /roles`. Call with the lock held.
    private func createRole(_ body: JSONValue) throws -> JSONValue {
        guard let name = body["name"]?.stringValue, !name.isEmpty else {
            throw StandInError.failedValidation(field: "name", type: "required", message: "Value is required.")
        }
        let row = JSONValue.object([("id", .string(body["id"]?.stringValue ?? Self.uuid())), ("name", .string(name)),
                                    ("icon", body["icon"] ?? .string("supervised_user_circle")),
                                    ("description", body["description"] ?? .null), ("parent", body["parent"] ?? .null)])
        state.admin.roles.append(row)
        return row
    }

    /// `POST /policies` (nested `roles: [{role}]` creates access rows). Call with the lock held.
    private func createPolicy(_ body: JSONValue) throws -> JSONValue {
        guard let name = body["name"]?.stringValue, !name.isEmpty else {
            throw StandInError.failedValidation(field: "name", type: "required", message: "Value is required.")
        }
        var row = Self.policyRow(id: body["id"]?.stringValue ?? Self.uuid(), name: name,
                                 icon: body["icon"]?.stringValue ?? "badge",
                                 admin: body["admin_access"] == .bool(true), app: body["app_access"] == .bool(true))
        row = Self.merge(row, [("description", body["description"] ?? .null), ("ip_access", body["ip_access"] ?? .null),
                               ("enforce_tfa", body["enforce_tfa"] ?? .bool(false))])
        state.admin.policies.append(row)
        for link in body["roles"]?.arrayValue ?? [] {
            _ = try createAccess(Self.merge(link, [("policy", row["id"] ?? .null)]))
        }
        return row
    }

    /// `POST /access`: `policy` is NOT NULL; role, user and policy must exist. Call with the lock held.
    private func createAccess(_ body: JSONValue) throws -> JSONValue {
        guard let policy = body["policy"]?.stringValue else {
            throw StandInError(status: 400, code: "NOT_NULL_VIOLATION",
                                message: "Value for field \"policy\" in collection \"directus_access\" can't be null.",
                                extensions: [("collection", .string("directus_access")), ("field", .string("policy"))])
        }
        let role = body["role"]?.stringValue
        let user = body["user"]?.stringValue
        guard state.admin.policies.contains(where: { $0["id"]?.stringValue == policy }),
              role.map({ r in state.admin.roles.contains { $0["id"]?.stringValue == r } }) ?? true,
              user.map({ state.users[$0] != nil }) ?? true else {
            throw StandInError(status: 400, code: "INVALID_FOREIGN_KEY", message: "Invalid foreign key.",
                                extensions: [("collection", .string("directus_access"))])
        }
        let row = JSONValue.object([("id", .string(Self.uuid())), ("role", role.map(JSONValue.string) ?? .null),
                                    ("user", user.map(JSONValue.string) ?? .null), ("policy", .string(policy)),
                                    ("sort", body["sort"] ?? .null)])
        state.admin.access.append(row)
        return row
    }

    /// `POST /permissions` with one row or an array (the answer has the same shape).
    static func createPermissions(_ body: JSONValue, in admin: inout AdminState) throws -> JSONValue {
        let input = body.arrayValue ?? [body]
        var rows: [JSONValue] = []
        var next = admin.nextPermissionID
        for item in input {
            guard item.objectValue != nil else { throw StandInError.invalidPayload("\"value\" must be of type object") }
            guard let policy = item["policy"]?.stringValue else {
                throw StandInError(status: 400, code: "NOT_NULL_VIOLATION",
                                    message: "Value for field \"policy\" in collection \"directus_permissions\" can't be null.",
                                    extensions: [("collection", .string("directus_permissions")), ("field", .string("policy"))])
            }
            guard admin.policies.contains(where: { $0["id"]?.stringValue == policy }) else {
                throw StandInError(status: 400, code: "INVALID_FOREIGN_KEY", message: "Invalid foreign key.",
                                    extensions: [("collection", .string("directus_permissions")), ("field", .string("policy"))])
            }
            guard let collection = item["collection"]?.stringValue else {
                throw StandInError.failedValidation(field: "collection", type: "required", message: "Value is required.")
            }
            let actions: Set<String> = ["create", "read", "update", "delete", "share"]
            guard let action = item["action"]?.stringValue, actions.contains(action) else {
                throw StandInError.failedValidation(field: "action", type: "in", message: "Value has to be one of create, read, update, delete, share.")
            }
            rows.append(.object([("id", .int(next)), ("policy", .string(policy)), ("collection", .string(collection)),
                                 ("action", .string(action)), ("fields", fieldArray(item["fields"])),
                                 ("permissions", item["permissions"] ?? .null), ("validation", item["validation"] ?? .null),
                                 ("presets", item["presets"] ?? .null)]))
            next += 1
        }
        admin.nextPermissionID = next
        admin.permissions += rows
        return body.arrayValue != nil ? .array(rows) : rows[0]
    }

    /// `PATCH /permissions/:id`. Call with the lock held.
    private func updatePermission(_ id: String, _ body: JSONValue) throws -> JSONValue {
        guard let index = state.admin.permissions.firstIndex(where: { Self.key($0["id"]) == id }) else {
            throw StandInError.forbidden
        }
        let editable: Set<String> = ["collection", "action", "fields", "permissions", "validation", "presets"]
        var changes = (body.objectValue ?? []).filter { editable.contains($0.0) }
        changes = changes.map { $0.0 == "fields" ? ($0.0, Self.fieldArray($0.1)) : $0 }
        state.admin.permissions[index] = Self.merge(state.admin.permissions[index], changes)
        return state.admin.permissions[index]
    }

    /// `fields` as stored (CSV) and read back: an array, or null.
    private static func fieldArray(_ value: JSONValue?) -> JSONValue {
        if let list = value?.arrayValue { return .array(list) }
        if let csv = value?.stringValue { return .array(csv.split(separator: ",").map { .string(String($0)) }) }
        return .null
    }

    // MARK: - Queries

    /// A list answer honouring `filter[field][op]=v` (`_eq`, `_neq`, `_null`, `_nnull`, `_in`), `fields`
    /// (with `a.b` expanding access's `policy`/`role`) and `limit` (default 100, -1 for all). Call with the lock held.
    private func list(_ rows: [JSONValue], _ context: Context) -> HTTPResponse {
        var selected = rows
        for item in context.queryItems where item.name.hasPrefix("filter[") && item.name.hasSuffix("]") {
            let parts = item.name.dropFirst("filter[".count).dropLast().components(separatedBy: "][")
            guard parts.count == 2 else { continue }
            selected = selected.filter { Self.matches($0[parts[0]], parts[1], item.value) }
        }
        if let limit = context.query("limit").flatMap(Int.init), limit >= 0 {
            selected = Array(selected.prefix(limit))
        } else if context.query("limit") == nil {
            selected = Array(selected.prefix(100))
        }
        return Self.dataResponse(.array(selected.map { project($0, fields: context.query("fields")) }))
    }

    /// Whether a stored value passes one filter operator.
    private static func matches(_ value: JSONValue?, _ op: String, _ operand: String) -> Bool {
        let isNull = value?.isNull ?? true
        let text = value.flatMap { $0.stringValue ?? ($0.isNull ? nil : $0.text) }
        switch op {
        case "_eq": return text == operand
        case "_neq": return text != operand
        case "_null": return operand == "true" || operand == "1" ? isNull : !isNull
        case "_nnull": return operand == "true" || operand == "1" ? !isNull : isNull
        case "_in": return text.map { operand.split(separator: ",").map(String.init).contains($0) } ?? false
        default: return true
        }
    }

    /// The row restricted to `fields` (comma list; `*` or none = all). Call with the lock held for expansions.
    private func project(_ row: JSONValue, fields: String?) -> JSONValue {
        guard let fields, !fields.split(separator: ",").contains("*"), let members = row.objectValue else { return row }
        var out: [(String, JSONValue)] = []
        for name in fields.split(separator: ",").map(String.init) {
            let path = name.split(separator: ".", maxSplits: 1).map(String.init)
            guard let value = members.first(where: { $0.0 == path[0] })?.1 else { continue }
            if path.count == 2 {
                let nested = out.first { $0.0 == path[0] }?.1.objectValue ?? []
                out.removeAll { $0.0 == path[0] }
                let target = related(path[0], Self.key(value))
                out.append((path[0], .object(nested + [(path[1], target?[path[1]] ?? (path[1] == "id" ? value : .null))])))
            } else {
                out.append((path[0], value))
            }
        }
        return .object(out)
    }

    /// The row an m2o member points at (`policy`, `role`, `user`). Call with the lock held.
    private func related(_ field: String, _ id: String?) -> JSONValue? {
        guard let id else { return nil }
        switch field {
        case "policy": return state.admin.policies.first { $0["id"]?.stringValue == id }
        case "role": return state.admin.roles.first { $0["id"]?.stringValue == id }
        case "user": return state.users[id]?.json
        default: return nil
        }
    }

    /// A primary key as text.
    private static func key(_ value: JSONValue?) -> String? {
        value.flatMap { $0.stringValue ?? $0.intValue.map { String($0) } }
    }

    /// `row` with `changes` set (replacing or appending members).
    static func merge(_ row: JSONValue, _ changes: [(String, JSONValue)]) -> JSONValue {
        var members = row.objectValue ?? []
        for (key, value) in changes {
            if let index = members.firstIndex(where: { $0.0 == key }) { members[index].1 = value } else { members.append((key, value)) }
        }
        return .object(members)
    }
}
