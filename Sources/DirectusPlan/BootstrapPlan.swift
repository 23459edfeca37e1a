import FoundationEssentials
import PosternHTTP
import PosternIO

/// What `postern bootstrap` wants a Directus 11 to contain (docs/bootstrap.md).
package enum BootstrapPlan {
    /// The collection the shipped resources serve.
    package static let collection = "posts"
    /// The name of the app role and of its policy (names are not unique in Directus: always looked up first).
    package static let appName = "App User"
    /// The Public policy's fixed id on every v11 install (`PUBLIC_POLICY_ID`), the fallback when the lookup finds none.
    package static let publicPolicyID = "abf8a154-5b1c-4a46-ac9c-7300570f4f17"
    /// The filter that limits a rule to the caller's own rows.
    static let ownRows: JSONValue = .object([("user_created", .object([("_eq", .string("$CURRENT_USER"))]))])

    /// The fields of `posts`, in order, as `POST /collections` and `POST /fields/posts` take them.
    package static let fields: [JSONValue] = [
        .object([
            ("field", .string("id")), ("type", .string("integer")),
            ("meta", .object([("hidden", .bool(true)), ("interface", .string("input")), ("readonly", .bool(true))])),
            ("schema", .object([("is_primary_key", .bool(true)), ("has_auto_increment", .bool(true))])),
        ]),
        .object([
            ("field", .string("title")), ("type", .string("string")),
            ("meta", .object([("interface", .string("input")), ("required", .bool(true))])),
            ("schema", .object([("is_nullable", .bool(false))])),
        ]),
        .object([
            ("field", .string("content")), ("type", .string("text")),
            ("meta", .object([("interface", .string("input-multiline"))])),
            ("schema", .object([])),
        ]),
        userField("user_created", special: "user-created"),
        dateField("date_created", special: "date-created"),
        userField("user_updated", special: "user-updated"),
        dateField("date_updated", special: "date-updated"),
    ]

    /// The user fields that get an m2o relation to `directus_users`.
    package static let userFields = ["user_created", "user_updated"]

    /// The body of `POST /collections`.
    package static var collectionBody: JSONValue {
        .object([
            ("collection", .string(collection)),
            ("meta", .object([("icon", .string("article")), ("singleton", .bool(false))])),
            // Without `schema: {}` Directus creates a folder, not a table.
            ("schema", .object([])),
            ("fields", .array(fields)),
        ])
    }

    /// The body of `POST /relations` for one user field (`SET NULL`, the Data Studio's m2o default).
    package static func relationBody(field: String) -> JSONValue {
        .object([
            ("collection", .string(collection)),
            ("field", .string(field)),
            ("related_collection", .string("directus_users")),
            ("schema", .object([("on_delete", .string("SET NULL"))])),
        ])
    }

    /// The body of `POST /roles`.
    package static let roleBody: JSONValue = .object([
        ("name", .string(appName)), ("icon", .string("person")), ("description", .string("Postern tutorial users")),
    ])

    /// The body of `POST /policies`: API only, no admin, no Data Studio.
    package static let policyBody: JSONValue = .object([
        ("name", .string(appName)), ("icon", .string("badge")), ("description", .string("Postern tutorial")),
        ("admin_access", .bool(false)), ("app_access", .bool(false)), ("enforce_tfa", .bool(false)), ("ip_access", .null),
    ])

    /// The App User policy's rules: create and read posts, update and delete only their own, read their own user row.
    package static let appPermissions: [DirectusPermissionRow] = [
        DirectusPermissionRow(collection: collection, action: "create", fields: ["title", "content"]),
        DirectusPermissionRow(collection: collection, action: "read", fields: ["*"]),
        DirectusPermissionRow(collection: collection, action: "update", fields: ["title", "content"], permissions: ownRows),
        DirectusPermissionRow(collection: collection, action: "delete", fields: ["*"], permissions: ownRows),
        DirectusPermissionRow(collection: "directus_users", action: "read", fields: ["id", "email", "first_name", "last_name"],
                       permissions: .object([("id", .object([("_eq", .string("$CURRENT_USER"))]))])),
    ] + relatedPermissions

    /// The Public rule that lets anyone register through `POST /users` with email and password only, as `role`.
    package static func publicRegistration(role: String) -> DirectusPermissionRow {
        DirectusPermissionRow(collection: "directus_users", action: "create", fields: ["email", "password"],
                       presets: .object([("role", .string(role))]))
    }

    /// The `/settings` values of the `/users/register` mode (verification off: no email is configured).
    package static func registrationSettings(role: String) -> [(String, JSONValue)] {
        [("public_registration", .bool(true)), ("public_registration_role", .string(role)),
         ("public_registration_verify_email", .bool(false))]
    }

    private static func userField(_ name: String, special: String) -> JSONValue {
        .object([
            ("field", .string(name)), ("type", .string("uuid")),
            ("meta", .object([
                ("special", .array([.string(special)])), ("interface", .string("select-dropdown-m2o")),
                ("display", .string("user")), ("readonly", .bool(true)), ("hidden", .bool(true)), ("width", .string("half")),
            ])),
            ("schema", .object([])),
        ])
    }

    private static func dateField(_ name: String, special: String) -> JSONValue {
        .object([
            ("field", .string(name)), ("type", .string("timestamp")),
            ("meta", .object([
                ("special", .array([.string(special)])), ("interface", .string("datetime")),
                ("display", .string("datetime")), ("readonly", .bool(true)), ("hidden", .bool(true)), ("width", .string("half")),
            ])),
            ("schema", .object([])),
        ])
    }
}

/// One row of `directus_permissions` as the bootstrap wants it (without its policy).
package struct DirectusPermissionRow: Sendable, Equatable {
    /// The collection.
    package var collection: String
    /// `create`, `read`, `update`, `delete` or `share`.
    package var action: String
    /// The fields the rule allows (`*` for all).
    package var fields: [String]
    /// The item filter (`null` = every item).
    package var permissions: JSONValue = .null
    /// The validation filter.
    var validation: JSONValue = .null
    /// Values set on create or update.
    package var presets: JSONValue = .null

    /// Builds a rule.
    package init(collection: String, action: String, fields: [String], permissions: JSONValue = .null,
                validation: JSONValue = .null, presets: JSONValue = .null) {
        self.collection = collection
        self.action = action
        self.fields = fields
        self.permissions = permissions
        self.validation = validation
        self.presets = presets
    }

    /// The body of `POST /permissions` for this rule under `policy`.
    package func body(policy: String) -> JSONValue {
        .object([("policy", .string(policy)), ("collection", .string(collection)), ("action", .string(action))] + changes)
    }

    /// The members `PATCH /permissions/<id>` sets.
    package var changes: [(String, JSONValue)] {
        [("fields", .array(fields.map(JSONValue.string))), ("permissions", permissions), ("validation", validation),
         ("presets", presets)]
    }

    /// Whether an existing row (as `GET /permissions` returns it) already says what this rule says.
    package func matches(_ row: JSONValue) -> Bool {
        guard row["collection"]?.stringValue == collection, row["action"]?.stringValue == action else { return false }
        return Set(Self.fieldList(row["fields"])) == Set(fields)
            && Self.same(row["permissions"], permissions) && Self.same(row["validation"], validation)
            && Self.same(row["presets"], presets)
    }

    /// `fields` as Directus returns it: an array, a CSV string (older versions), or null.
    static func fieldList(_ value: JSONValue?) -> [String] {
        if let list = value?.arrayValue { return list.compactMap(\.stringValue) }
        if let csv = value?.stringValue { return csv.split(separator: ",").map { $0.trimmedSpaces() } }
        return []
    }

    /// Equal filters, where null, missing and `{}` all mean "none".
    package static func same(_ stored: JSONValue?, _ wanted: JSONValue) -> Bool {
        func normal(_ value: JSONValue?) -> JSONValue {
            guard let value, !value.isNull else { return .null }
            if let members = value.objectValue, members.isEmpty { return .null }
            return value
        }
        return normal(stored) == normal(wanted)
    }
}
