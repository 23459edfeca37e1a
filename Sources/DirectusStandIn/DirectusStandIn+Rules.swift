import DirectusPlan
import FoundationEssentials
import PosternHTTP
import PosternIO

/// How the stored schema and rules (`DirectusStandIn+Admin.swift`) decide who may use `posts` and who may
/// register, in front of the fixed behaviour of the items and users routes.
extension DirectusStandIn {
    /// The caller as the items route sees it: 403 unless the collection has a table (the collection-exists
    /// middleware runs before any permission check).
    func itemCaller(_ caller: Caller, collection: String) throws -> Caller {
        guard lock.withLock({ state.admin.hasTable(collection) }) else { throw StandInError.forbiddenCollection(collection) }
        return caller
    }

    /// What the stored rules of the caller's policies allow on `collection` (`DirectusStandIn+StoredRules.swift`).
    /// A filter with an operator Directus does not know is 400 `INVALID_QUERY`.
    func itemRules(_ caller: Caller, collection: String, now: Double) throws -> ItemRules {
        try storedRules(caller, collection: collection) { try ReadPlan.compile($0, caller: caller, now: now) }
    }

    /// The rules of one caller on one collection, with filters on posts.
    typealias ItemRules = StoredRules<Predicate>

    /// `POST /users`: the Public may create users only under a Public `create` rule on `directus_users`,
    /// with its fields, and the new users get the rule's preset role.
    func createUsersUnderRules(_ context: Context, body: JSONValue?, caller: Caller) throws -> HTTPResponse {
        guard caller.userID == nil, !caller.admin else { return try createUsers(context, body: body, caller: caller) }
        let rule = lock.withLock {
            state.admin.rules("directus_users", "create", policies: state.admin.publicPolicies).first
        }
        guard let rule else { throw StandInError.forbiddenCollection("directus_users") }
        let allowed = Set(DirectusPermissionRow.fieldListForStandIn(rule["fields"]))
        let rows = body?.arrayValue ?? [body ?? .object([])]
        if !allowed.contains("*") {
            for row in rows {
                if let extra = row.objectValue?.first(where: { !allowed.contains($0.0) }) {
                    throw StandInError.forbiddenField(extra.0, collection: "directus_users")
                }
            }
        }
        let response = try createUsers(context, body: body, caller: caller)
        let role = rule["presets"]?["role"]?.stringValue
        lock.withLock {
            for email in rows.compactMap({ $0["email"]?.stringValue }) {
                guard var user = state.user(email: email) else { continue }
                user.role = role
                state.put(user)
            }
        }
        return response
    }

    /// `POST /users/register`: open only when the settings say so; new users get the settings' role, and
    /// stay `unverified` while email verification is on.
    func registerUnderSettings(body: JSONValue?) throws -> HTTPResponse {
        let settings = lock.withLock { state.admin.settings }
        // With `publicRegistration` off, `register` refuses by itself (after validating the payload).
        if settings["public_registration"] != .bool(true), options.publicRegistration { throw StandInError.forbidden }
        let email = body?["email"]?.stringValue
        let existed = email.map { address in lock.withLock { state.user(email: address) != nil } } ?? true
        let response = try register(body: body)
        if !existed, let email {
            lock.withLock {
                guard var user = state.user(email: email) else { return }
                user.role = settings["public_registration_role"]?.stringValue
                if settings["public_registration_verify_email"] != .bool(false) { user.status = "unverified" }
                state.put(user)
            }
        }
        return response
    }
}

extension DirectusPermissionRow {
    /// `fields` of a stored rule as a list (array or CSV).
    static func fieldListForStandIn(_ value: JSONValue?) -> [String] {
        if let list = value?.arrayValue { return list.compactMap(\.stringValue) }
        return value?.stringValue?.split(separator: ",").map(String.init) ?? []
    }
}

extension DirectusStandIn.StoredRules.Rule where Filter == DirectusStandIn.Predicate {
    /// Whether the rule covers `post`.
    func covers(_ post: DirectusStandIn.Post) -> Bool { filter.map { DirectusStandIn.ReadPlan.evaluate($0, post) } ?? true }
}

extension DirectusStandIn.StoredRules where Filter == DirectusStandIn.Predicate {
    /// Whether `post` may be read (nil: every row may).
    var readFilter: [Rule]? {
        if admin { return nil }
        let rules = byAction["read"] ?? []
        return rules.contains(where: { $0.filter == nil }) ? nil : rules
    }
}
