import PosternHTTP

/// The demo's relations (docs/bootstrap.md, 5b): the `comments` collection, its many-to-one `post` with the
/// one-to-many alias `comments` on `posts`, and the read rules the mapped relations need.
extension BootstrapPlan {
    /// The collection of comments.
    package static let commentsCollection = "comments"
    /// The many-to-one field of `comments` that points at `posts`.
    static let commentPostField = "post"
    /// The one-to-many alias field on `posts` that lists a post's comments.
    package static let commentsAlias = "comments"
    /// The fields of `directus_users` every row of which the app policy may read (the mapped `author` names).
    static let publicUserFields = ["id", "first_name"]
    /// The fields of `comments` the shipped config maps (§8.4), all the app policy may read.
    static let commentReadFields = ["id", "post", "body", "user_created", "date_created"]
    /// The fields a signed-in user may write on a comment (the config's writable `post`, `text` ← `body`).
    static let commentWriteFields = ["post", "body"]

    /// The fields of `comments`, in order, as `POST /collections` and `POST /fields/comments` take them.
    package static let commentFields: [JSONValue] = [
        .object([
            ("field", .string("id")), ("type", .string("integer")),
            ("meta", .object([("hidden", .bool(true)), ("interface", .string("input")), ("readonly", .bool(true))])),
            ("schema", .object([("is_primary_key", .bool(true)), ("has_auto_increment", .bool(true))])),
        ]),
        .object([
            ("field", .string(commentPostField)), ("type", .string("integer")),
            ("meta", .object([("interface", .string("select-dropdown-m2o")), ("special", .array([.string("m2o")])),
                              ("required", .bool(true))])),
            ("schema", .object([("is_nullable", .bool(false))])),
        ]),
        .object([
            ("field", .string("body")), ("type", .string("text")),
            ("meta", .object([("interface", .string("input-multiline")), ("required", .bool(true))])),
            ("schema", .object([("is_nullable", .bool(false))])),
        ]),
        commentUserField,
        commentDateField,
    ]

    /// The body of `POST /collections` for `comments`.
    package static var commentsCollectionBody: JSONValue {
        .object([
            ("collection", .string(commentsCollection)),
            ("meta", .object([("icon", .string("chat")), ("singleton", .bool(false))])),
            ("schema", .object([])),
            ("fields", .array(commentFields)),
        ])
    }

    /// The body of `POST /fields/posts` for the one-to-many alias: no column (`type: alias`, `schema: null`),
    /// `special: ["o2m"]`; the relation's `meta.one_field` names it.
    package static let commentsAliasField: JSONValue = .object([
        ("field", .string(commentsAlias)), ("type", .string("alias")),
        ("meta", .object([("special", .array([.string("o2m")])), ("interface", .string("list-o2m"))])),
        ("schema", .null),
    ])

    /// The body of `POST /relations` for `comments.post` → `posts`, with the alias `posts.comments`
    /// (deleting a post deletes its comments).
    package static let commentPostRelationBody: JSONValue = .object([
        ("collection", .string(commentsCollection)),
        ("field", .string(commentPostField)),
        ("related_collection", .string(collection)),
        ("meta", .object([("one_field", .string(commentsAlias)), ("sort_field", .null),
                          ("one_deselect_action", .string("nullify"))])),
        ("schema", .object([("on_delete", .string("CASCADE"))])),
    ])

    /// The body of `POST /relations` for `comments.user_created` → `directus_users`.
    package static var commentUserRelationBody: JSONValue {
        .object([
            ("collection", .string(commentsCollection)),
            ("field", .string("user_created")),
            ("related_collection", .string("directus_users")),
            ("schema", .object([("on_delete", .string("SET NULL"))])),
        ])
    }

    /// The read rules on the related collections and the comment rules: every user row's `id` and
    /// `first_name`; the mapped fields of every comment; create by any signed-in user; update and delete
    /// one's own.
    static let relatedPermissions: [DirectusPermissionRow] = [
        DirectusPermissionRow(collection: "directus_users", action: "read", fields: publicUserFields),
        DirectusPermissionRow(collection: commentsCollection, action: "create", fields: commentWriteFields),
        DirectusPermissionRow(collection: commentsCollection, action: "read", fields: commentReadFields),
        DirectusPermissionRow(collection: commentsCollection, action: "update", fields: commentWriteFields,
                              permissions: ownRows),
        DirectusPermissionRow(collection: commentsCollection, action: "delete", fields: ["*"], permissions: ownRows),
    ]

    private static let commentUserField: JSONValue = .object([
        ("field", .string("user_created")), ("type", .string("uuid")),
        ("meta", .object([
            ("special", .array([.string("user-created")])), ("interface", .string("select-dropdown-m2o")),
            ("display", .string("user")), ("readonly", .bool(true)), ("hidden", .bool(true)), ("width", .string("half")),
        ])),
        ("schema", .object([])),
    ])

    private static let commentDateField: JSONValue = .object([
        ("field", .string("date_created")), ("type", .string("timestamp")),
        ("meta", .object([
            ("special", .array([.string("date-created")])), ("interface", .string("datetime")),
            ("display", .string("datetime")), ("readonly", .bool(true)), ("hidden", .bool(true)), ("width", .string("half")),
        ])),
        ("schema", .object([])),
    ])
}
