import FoundationEssentials
import PosternHTTP
import PosternIO

extension DirectusStandIn {
    /// `POST /users`: admin create, or the tutorial's Public create (email and password only, role preset).
    func createUsers(_ context: Context, body: JSONValue?, caller: Caller) throws -> HTTPResponse {
        let publicCreate = caller.userID == nil && options.publicUserCreate
        guard caller.admin || publicCreate else { throw StandInError.forbiddenCollection("directus_users") }
        let payload = body ?? .object([])
        let batch = payload.arrayValue != nil
        let rows = payload.arrayValue ?? [payload]
        let adminFields: Set<String> = ["email", "password", "first_name", "last_name", "role", "status", "token"]

        // Permission checks first (fields outside the permission's list), then validation (`preMutationError`).
        var users: [User] = []
        for row in rows {
            guard let members = row.objectValue else {
                throw StandInError.invalidPayload("\"value\" must be of type object")
            }
            if publicCreate, let extra = members.first(where: { $0.0 != "email" && $0.0 != "password" }) {
                throw StandInError.forbiddenField(extra.0, collection: "directus_users")
            }
            var user = User(id: Self.uuid(), email: nil, password: nil, firstName: nil, lastName: nil,
                            role: publicCreate ? Self.appUserRoleID : nil, status: "active", admin: false, token: nil)
            for (key, value) in members where adminFields.contains(key) {
                guard value.stringValue != nil || value.isNull else {
                    throw StandInError.invalidPayload("\"\(key)\" must be a string")
                }
                let text = value.stringValue
                switch key {
                case "email": user.email = text
                case "password": user.password = text
                case "first_name": user.firstName = text
                case "last_name": user.lastName = text
                case "role": user.role = text
                case "status": user.status = text ?? "active"
                default: user.token = text
                }
            }
            user.admin = user.role == Self.adminRoleID
            users.append(user)
        }
        for user in users {
            if let email = user.email, !Self.isValidEmail(email) {
                throw StandInError.failedValidation(field: "email", type: "email",
                                                     message: "Value has to be a valid email address.")
            }
        }
        try lock.withLock {
            var seen = Set<String>()
            for user in users {
                guard let email = user.email else { continue }
                if state.user(email: email) != nil || !seen.insert(email.lowercased()).inserted {
                    let value = "[\(email)]"
                    throw StandInError(status: 400, code: "RECORD_NOT_UNIQUE",
                                        message: "Value \"\(value)\" for field \"email\" in collection \"directus_users\" has to be unique.",
                                        extensions: [("collection", .string("directus_users")), ("field", .string("email")),
                                                     ("value", .string(value))])
                }
            }
            for user in users { state.put(user) }
        }
        // The Public role cannot read the new row back, so the controller answers 204.
        guard caller.admin else { return Self.noContent() }
        let data = users.map(\.json)
        return Self.dataResponse(batch ? .array(data) : data[0])
    }

    /// `GET /users`: admins only (the App User role has no read permission on `directus_users`).
    func listUsers(_ caller: Caller) throws -> HTTPResponse {
        guard caller.admin else { throw StandInError.forbiddenCollection("directus_users") }
        let users = lock.withLock { Array(state.users.values) }.sorted { ($0.email ?? "") < ($1.email ?? "") }
        return Self.dataResponse(.array(users.map(\.json)))
    }

    /// `GET /users/me`: 401 when anonymous, else the caller's own row.
    func me(_ caller: Caller) throws -> HTTPResponse {
        guard let id = caller.userID else { throw StandInError.invalidCredentials }
        guard let user = lock.withLock({ state.users[id] }) else { throw StandInError.forbidden }
        return Self.dataResponse(user.json)
    }

    /// `POST /users/register`: 204 also for a taken email (a silent no-op), 403 when registration is closed.
    func register(body: JSONValue?) throws -> HTTPResponse {
        let payload = try Self.object(body)
        let email = try Self.joiString(payload, "email", required: true, email: true)
        let password = try Self.joiString(payload, "password", required: true)
        let firstName = try Self.joiString(payload, "first_name", required: false)
        let lastName = try Self.joiString(payload, "last_name", required: false)
        let verificationURL = try Self.joiString(payload, "verification_url", required: false)
        let known: Set<String> = ["email", "password", "first_name", "last_name", "verification_url"]
        if let extra = payload.objectValue?.first(where: { !known.contains($0.0) }) {
            throw StandInError.invalidPayload("\"\(extra.0)\" is not allowed")
        }
        guard options.publicRegistration else { throw StandInError.forbidden }
        if let verificationURL {
            throw StandInError.invalidPayload("URL \"\(verificationURL)\" can't be used to verify registered users")
        }
        // Both were required by the validator above.
        guard let email, let password else { throw StandInError.invalidCredentials }
        lock.withLock {
            guard state.user(email: email) == nil else { return }
            state.put(User(id: Self.uuid(), email: email, password: password, firstName: firstName, lastName: lastName,
                           role: Self.appUserRoleID, status: "active", admin: false, token: nil))
        }
        return Self.noContent()
    }
}
