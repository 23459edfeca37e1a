import FoundationEssentials
import PosternHTTP

extension DirectusStandIn {
    /// A row of `directus_users` (only what the stand-in needs).
    struct User: Sendable {
        /// The uuid primary key.
        var id: String
        /// The email as registered (compared case-insensitively).
        var email: String?
        /// The password in clear (a test double; real Directus stores argon2).
        var password: String?
        /// `first_name`.
        var firstName: String?
        /// `last_name`.
        var lastName: String?
        /// The role uuid.
        var role: String?
        /// `active`, `suspended`, `unverified`, …
        var status: String
        /// Whether the role has admin access.
        var admin: Bool
        /// A static token, if one was set.
        var token: String?

        /// The row as `GET /users/me` shows it to its owner.
        var json: JSONValue {
            .object([
                ("id", .string(id)),
                ("email", email.map(JSONValue.string) ?? .null),
                ("first_name", firstName.map(JSONValue.string) ?? .null),
                ("last_name", lastName.map(JSONValue.string) ?? .null),
                ("role", role.map(JSONValue.string) ?? .null),
            ])
        }

        /// The value of one readable field (`password` concealed), nil when the field is unknown.
        func value(_ field: String) -> JSONValue? {
            switch field {
            case "id": return .string(id)
            case "email": return email.map(JSONValue.string) ?? .null
            case "first_name": return firstName.map(JSONValue.string) ?? .null
            case "last_name": return lastName.map(JSONValue.string) ?? .null
            case "role": return role.map(JSONValue.string) ?? .null
            case "status": return .string(status)
            case "password": return password == nil ? .null : .string("**********")
            case "token": return token == nil ? .null : .string("**********")
            default: return nil
            }
        }

        /// Every field `*` expands to on a user.
        static let allFields = ["id", "first_name", "last_name", "email", "password", "status", "role", "token"]
    }

    /// A row of `posts`.
    struct Post: Sendable {
        /// Integer primary key.
        var id: Int64
        /// NOT NULL title.
        var title: String
        /// Nullable text.
        var content: String?
        /// Creator uuid (set on create).
        var userCreated: String?
        /// Creation time, ISO with milliseconds and `Z`.
        var dateCreated: String?
        /// Last updater uuid.
        var userUpdated: String?
        /// Last update time.
        var dateUpdated: String?
        /// The whole row serialized (`fields=*`), kept up to date by `refreshCache()`.
        private(set) var serialized: [UInt8] = []
        /// `title` lowercased, for `search`.
        private(set) var lowerTitle: [UInt8] = []
        /// `content` lowercased, for `search`.
        private(set) var lowerContent: [UInt8] = []

        /// Builds a row; call `refreshCache()` before storing it.
        init(id: Int64, title: String, content: String?, userCreated: String?, dateCreated: String?,
             userUpdated: String?, dateUpdated: String?) {
            self.id = id
            self.title = title
            self.content = content
            self.userCreated = userCreated
            self.dateCreated = dateCreated
            self.userUpdated = userUpdated
            self.dateUpdated = dateUpdated
        }

        /// Each column's value serialized, in `PostField.allCases` order.
        private(set) var serializedFields: [[UInt8]] = []

        /// Orders two rows by one column like SQL, `NULLS LAST` when ascending.
        static func order(_ a: Post, _ b: Post, by field: PostField) -> ComparisonResult {
            func compare<T: Comparable>(_ x: T?, _ y: T?) -> ComparisonResult {
                switch (x, y) {
                case (nil, nil): return .orderedSame
                case (nil, _): return .orderedDescending
                case (_, nil): return .orderedAscending
                case let (x?, y?): return x < y ? .orderedAscending : x > y ? .orderedDescending : .orderedSame
                }
            }
            switch field {
            case .id: return compare(a.id, b.id)
            case .title: return compare(a.title, b.title)
            case .content: return compare(a.content, b.content)
            case .userCreated: return compare(a.userCreated, b.userCreated)
            case .dateCreated: return compare(a.dateCreated, b.dateCreated)
            case .userUpdated: return compare(a.userUpdated, b.userUpdated)
            case .dateUpdated: return compare(a.dateUpdated, b.dateUpdated)
            }
        }

        /// Recomputes the serialized row and the search texts after a change.
        mutating func refreshCache() {
            serializedFields = PostField.allCases.map { field in
                var bytes: [UInt8] = []
                value(field).write(into: &bytes)
                return bytes
            }
            var out: [UInt8] = [UInt8(ascii: "{")]
            for (index, field) in PostField.allCases.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                out += field.quotedKey
                out += serializedFields[index]
            }
            out.append(UInt8(ascii: "}"))
            serialized = out
            lowerTitle = Array(title.lowercased().utf8)
            lowerContent = Array((content ?? "").lowercased().utf8)
        }

        /// The value of `field` as JSON.
        func value(_ field: PostField) -> JSONValue {
            switch field {
            case .id: return .int(id)
            case .title: return .string(title)
            case .content: return content.map(JSONValue.string) ?? .null
            case .userCreated: return userCreated.map(JSONValue.string) ?? .null
            case .dateCreated: return dateCreated.map(JSONValue.string) ?? .null
            case .userUpdated: return userUpdated.map(JSONValue.string) ?? .null
            case .dateUpdated: return dateUpdated.map(JSONValue.string) ?? .null
            }
        }
    }

    /// The columns of `posts`, in schema order.
    enum PostField: String, CaseIterable, Sendable {
        case id, title, content
        case userCreated = "user_created"
        case dateCreated = "date_created"
        case userUpdated = "user_updated"
        case dateUpdated = "date_updated"

        /// `"name":` as UTF-8, for writing rows by hand.
        var quotedKey: [UInt8] { Array("\"\(rawValue)\":".utf8) }

        /// The position in `allCases`.
        var index: Int {
            switch self {
            case .id: return 0
            case .title: return 1
            case .content: return 2
            case .userCreated: return 3
            case .dateCreated: return 4
            case .userUpdated: return 5
            case .dateUpdated: return 6
            }
        }

        /// Whether the column holds a user uuid (an M2O to `directus_users`).
        var isUserRelation: Bool { self == .userCreated || self == .userUpdated }
    }

    /// A refresh-token row of `directus_sessions`.
    struct Session: Sendable {
        /// The user the session belongs to.
        var userID: String
        /// Expiry, seconds since 1970.
        var expires: Double
    }

    /// Who is calling (Directus "accountability").
    struct Caller: Sendable {
        /// The user id, nil for the public role.
        var userID: String?
        /// The role id.
        var role: String?
        /// Admin access.
        var admin: Bool

        /// The public role.
        static let anonymous = Caller(userID: nil, role: nil, admin: false)
    }

    /// Everything mutable, guarded by `lock`.
    struct State {
        /// Users by id.
        var users: [String: User] = [:]
        /// Lowercased email → user id.
        var emailIndex: [String: String] = [:]
        /// Refresh token → session.
        var sessions: [String: Session] = [:]
        /// Posts sorted by id.
        var posts: [Post] = []
        /// The next autoincrement value.
        var nextPostID: Int64 = 1
        /// Comments sorted by id (`DirectusStandIn+Comments.swift`).
        var comments: [Comment] = []
        /// The next comment id.
        var nextCommentID: Int64 = 1
        /// Signature of each access JWT issued since the last `expireAllAccessTokens` → its `exp`.
        var issuedAccess: [String: Int64] = [:]
        /// Signatures forced to be expired by `expireAllAccessTokens` → their `exp`.
        var expiredAccess: [String: Int64] = [:]
        /// The largest `iat` issued so far.
        var lastIssuedAt: Int64 = 0
        /// The smallest `iat` a new token may carry, so that it differs from every token expired by the hook.
        var issueFloor: Int64 = 0
        /// Tokens whose signature was checked → their claims and signature.
        var verifiedTokens: [String: (claims: StandInJWT.Claims, signature: String)] = [:]
        /// Successful `/auth/refresh` calls.
        var refreshCount = 0
        /// Recorded requests.
        var received: [HTTPRequest] = []
        /// Schema, roles, policies, access, permissions and settings (`DirectusStandIn+Admin.swift`).
        var admin = AdminState()
        /// The clock.
        var clock: @Sendable () -> Date = { Date() }

        /// Index of the post with `id`, by binary search.
        func postIndex(_ id: Int64) -> Int? {
            var low = 0
            var high = posts.count - 1
            while low <= high {
                let mid = (low + high) / 2
                if posts[mid].id == id { return mid }
                if posts[mid].id < id { low = mid + 1 } else { high = mid - 1 }
            }
            return nil
        }

        /// Inserts a post keeping the id order.
        @discardableResult
        mutating func insert(_ row: Post) -> Post {
            var post = row
            post.refreshCache()
            if let last = posts.last, last.id > post.id {
                let index = posts.firstIndex { $0.id > post.id } ?? posts.count
                posts.insert(post, at: index)
            } else {
                posts.append(post)
            }
            nextPostID = max(nextPostID, post.id + 1)
            return post
        }

        /// The user with this email, compared case-insensitively.
        func user(email: String) -> User? {
            emailIndex[email.lowercased()].flatMap { users[$0] }
        }

        /// Adds or replaces a user and indexes its email.
        mutating func put(_ user: User) {
            users[user.id] = user
            if let email = user.email { emailIndex[email.lowercased()] = user.id }
        }
    }
}
