import DirectusPlan
import FoundationEssentials
import PosternHTTP

/// `postern bootstrap`: prepares a Directus 11 for Postern through its REST API, idempotently.
///
/// Follows docs/bootstrap.md: wait for health, log in, check the version, then for each
/// piece (collection, relations, role, policy, access, permissions, Public registration, settings) look it
/// up first and create or update it only when it is missing or different, so a second run sends no writes.
package struct DirectusBootstrap: Sendable {
    /// How long to wait for `/server/health` to answer 200, in seconds.
    var readinessTimeout: Double = 60
    /// The pause between two readiness probes, in seconds.
    var retryInterval: Double = 1

    private let client: DirectusClient
    private let config: PosternConfig
    private let credentials: BootstrapCredentials
    private let log: @Sendable (String) -> Void
    private let context = CallFields(requestID: "postern-bootstrap", clientIP: "127.0.0.1")

    /// Prepares a bootstrap against `client` (whose transport points at `config.directus.url`).
    init(client: DirectusClient, config: PosternConfig, credentials: BootstrapCredentials,
                log: @escaping @Sendable (String) -> Void) {
        self.client = client
        self.config = config
        self.credentials = credentials
        self.log = log
    }

    /// Runs every step; throws the first problem with a one-line reason.
    func run() async throws(BootstrapError) -> BootstrapReport {
        var steps: [BootstrapReport.Step] = []
        func record(_ name: String, _ outcome: BootstrapOutcome, _ detail: String = "") {
            steps.append(BootstrapReport.Step(name: name, outcome: outcome))
            let verb = outcome == .unchanged ? "already in place" : outcome.rawValue
            log("\(name): \(verb)\(detail.isEmpty ? "" : " (\(detail))")")
        }

        try await waitUntilHealthy()
        let admin = Admin(client: client, token: try await adminToken(), context: context, url: config.directus.url)
        let version = try await checkVersion(admin)

        // The collection, its fields and the m2o relations to directus_users.
        let collection = BootstrapPlan.collection
        for (name, outcome) in try await ensureCollection(admin, collection, body: BootstrapPlan.collectionBody,
                                                          fields: BootstrapPlan.fields) {
            record(name, outcome.0, outcome.1)
        }
        for field in BootstrapPlan.userFields {
            let (name, outcome) = try await ensureRelation(admin, BootstrapPlan.relationBody(field: field))
            record(name, outcome)
        }
        // The demo's comments (docs/bootstrap.md, 5b): the collection, the alias `posts.comments`, `comments.post` → posts
        // (with the alias as its one-to-many side) and `comments.user_created` → directus_users.
        for (name, outcome) in try await ensureCollection(admin, BootstrapPlan.commentsCollection,
                                                          body: BootstrapPlan.commentsCollectionBody,
                                                          fields: BootstrapPlan.commentFields) {
            record(name, outcome.0, outcome.1)
        }
        let aliasName = "field \(collection).\(BootstrapPlan.commentsAlias) (one-to-many alias)"
        if try await admin.lookup(aliasName, "/fields/\(collection)/\(BootstrapPlan.commentsAlias)") == nil {
            _ = try await admin.send(aliasName, .post, "/fields/\(collection)", BootstrapPlan.commentsAliasField)
            record(aliasName, .created)
        } else {
            record(aliasName, .unchanged)
        }
        for body in [BootstrapPlan.commentPostRelationBody, BootstrapPlan.commentUserRelationBody] {
            let (name, outcome) = try await ensureRelation(admin, body)
            record(name, outcome)
        }

        // The app role, its policy, the access row between them, and the policy's rules.
        let roleID = try await findOrCreate(admin, "role \"\(BootstrapPlan.appName)\"", "/roles",
                                            filter: [("filter[name][_eq]", BootstrapPlan.appName)],
                                            body: BootstrapPlan.roleBody, record: &steps)
        let policyID = try await findOrCreate(admin, "policy \"\(BootstrapPlan.appName)\"", "/policies",
                                              filter: [("filter[name][_eq]", BootstrapPlan.appName)],
                                              body: BootstrapPlan.policyBody, record: &steps)
        _ = try await findOrCreate(admin, "access role → policy", "/access",
                                   filter: [("filter[role][_eq]", roleID), ("filter[policy][_eq]", policyID)],
                                   body: .object([("role", .string(roleID)), ("policy", .string(policyID))]),
                                   record: &steps)
        for (name, outcome) in try await reconcile(admin, policy: policyID, rules: BootstrapPlan.appPermissions,
                                                   label: "permission") {
            record(name, outcome)
        }

        // Registration: in `users` mode a Public create on directus_users (email, password, role preset); in
        // `register` mode none, since it would leave Directus's own /users open beside Postern's limits (and
        // RECORD_NOT_UNIQUE tells which emails exist): one left from an earlier `users` run is removed.
        let publicPolicyID = try await publicPolicy(admin)
        if config.directus.registration == "register" {
            for (name, outcome) in try await removePublicUserCreate(admin, policy: publicPolicyID, role: roleID) {
                record(name, outcome)
            }
            record("settings /users/register", try await registrationSettings(admin, role: roleID))
        } else {
            for (name, outcome) in try await reconcile(admin, policy: publicPolicyID,
                                                       rules: [BootstrapPlan.publicRegistration(role: roleID)],
                                                       label: "Public permission") {
                record(name, outcome)
            }
        }

        let report = BootstrapReport(version: version, roleID: roleID, policyID: policyID,
                                     publicPolicyID: publicPolicyID, steps: steps)
        log(report.summary)
        return report
    }

    // MARK: - Readiness, credentials, version

    /// Polls `GET /server/health` until it answers 200, for at most `readinessTimeout` seconds.
    private func waitUntilHealthy() async throws(BootstrapError) {
        let url = config.directus.url
        let deadline = Date().addingTimeInterval(readinessTimeout)
        var waiting = false
        while true {
            let problem: BootstrapError
            do {
                _ = try await client.call(.get, "/server/health", body: nil, token: nil, context: context)
                log("Directus at \(url) is up")
                return
            } catch {
                problem = Admin.translate(error, step: "health check", url: url)
            }
            // A non-2xx health answer (e.g. 503 while the database or uploads are not ready) is "unhealthy".
            var mapped = problem
            if case .step(_, let reason) = problem { mapped = .unhealthy(url: url, status: reason) }
            if case .credentialsRejected = mapped { throw mapped }
            if Date() >= deadline { throw mapped }
            if !waiting {
                log("waiting up to \(Int(readinessTimeout)) s for Directus at \(url) …")
                waiting = true
            }
            try? await Task.sleep(nanoseconds: UInt64(max(0, retryInterval) * 1_000_000_000))
        }
    }

    /// The static token, or the access token of an admin login (no Authorization header on `/auth/*`).
    private func adminToken() async throws(BootstrapError) -> String {
        if let token = credentials.token {
            log("using the admin static token")
            return token
        }
        guard let email = credentials.email, let password = credentials.password else { throw .missingCredentials }
        do {
            let tokens = try await client.login(email: email, password: password, context: context)
            log("logged in to Directus as \(email)")
            return tokens.accessToken
        } catch {
            throw Admin.translate(error, step: "admin login", url: config.directus.url)
        }
    }

    /// Reads `/server/info` and probes `/policies`: only Directus 11 (policies and access) is supported.
    private func checkVersion(_ admin: Admin) async throws(BootstrapError) -> String {
        let info = try await admin.send("version check", .get, "/server/info")
        let version = info?["version"]?.stringValue
        if let version {
            let major = Int(version.prefix { $0.isNumber }) ?? 0
            if major < 11 {
                throw .unsupportedVersion(version: version, reason: "it uses role-based permissions; Postern needs "
                    + "Directus 11.x (policies). Use directus/directus:11.x")
            }
            if major > 11 {
                throw .unsupportedVersion(version: version, reason: "Postern supports Directus 11.x only "
                    + "(its access model was not checked against \(major).x). Use directus/directus:11.x")
            }
        }
        do {
            _ = try await client.call(.get, "/policies?limit=1&fields=id", body: nil, token: admin.token, context: context)
        } catch {
            if error.status == 404 {
                throw .unsupportedVersion(version: version ?? "older than 10.8.3",
                                          reason: "it has no /policies (role-based permissions); Postern needs "
                                              + "Directus 11.x. Use directus/directus:11.x")
            }
            throw Admin.translate(error, step: "version check", url: config.directus.url, path: "/policies")
        }
        guard let version else {
            throw .unsupportedVersion(version: "unknown", reason: "/server/info did not report a version")
        }
        log("Directus \(version): supported (policies)")
        return version
    }

    // MARK: - Schema

    /// Creates `name` with `body` when missing, else adds the fields of `fields` it lacks; refuses a folder.
    private func ensureCollection(_ admin: Admin, _ name: String, body: JSONValue,
                                  fields: [JSONValue]) async throws(BootstrapError) -> [(String, (BootstrapOutcome, String))] {
        let step = "collection \(name)"
        let existing = try await admin.lookup(step, "/collections/\(name)")
        if let row = existing, row["schema"]?.isNull ?? false {
            // A folder: a directus_collections row without a table. Directus answers 403 on its fields, which
            // is not about admin rights.
            throw .step(name: step, reason: "\"\(name)\" exists in Directus as a folder "
                + "(a collection with no table: schema is null), so it cannot hold items; delete it or make it a "
                + "collection with a table (Settings → Data Model), then run `postern bootstrap` again")
        }
        if existing == nil {
            _ = try await admin.send(step, .post, "/collections", body)
            return [(step, (.created, "\(fields.count) fields"))]
        }
        var outcomes: [(String, (BootstrapOutcome, String))] = [(step, (.unchanged, ""))]
        let present = Set((try await admin.send("fields of \(name)", .get, "/fields/\(name)"))?
            .arrayValue?.compactMap { $0["field"]?.stringValue } ?? [])
        for field in fields {
            guard let fieldName = field["field"]?.stringValue, !present.contains(fieldName) else { continue }
            _ = try await admin.send("field \(name).\(fieldName)", .post, "/fields/\(name)", field)
            outcomes.append(("field \(name).\(fieldName)", (.created, "")))
        }
        return outcomes
    }

    /// Creates the relation `body` describes when its field has none; when it has one whose one-to-many side
    /// (`meta.one_field`) differs from the wanted one, sets it with `PATCH /relations/:collection/:field`.
    private func ensureRelation(_ admin: Admin, _ body: JSONValue) async throws(BootstrapError) -> (String, BootstrapOutcome) {
        let collection = body["collection"]?.stringValue ?? ""
        let field = body["field"]?.stringValue ?? ""
        let related = body["related_collection"]?.stringValue ?? ""
        let name = "relation \(collection).\(field) → \(related)"
        guard let existing = try await admin.lookup(name, "/relations/\(collection)/\(field)") else {
            _ = try await admin.send(name, .post, "/relations", body)
            return (name, .created)
        }
        if let wanted = body["meta"]?["one_field"]?.stringValue, existing["meta"]?["one_field"]?.stringValue != wanted {
            _ = try await admin.send(name, .patch, "/relations/\(collection)/\(field)",
                                     .object([("meta", .object([("one_field", .string(wanted))]))]))
            return (name, .updated)
        }
        return (name, .unchanged)
    }

    // MARK: - Steps

    /// Looks a row up by `filter` and returns its id, creating it with `body` when there is none.
    private func findOrCreate(_ admin: Admin, _ name: String, _ path: String, filter: [(String, String)],
                              body: JSONValue, record steps: inout [BootstrapReport.Step]) async throws(BootstrapError) -> String {
        let query = QueryString.build(filter + [("fields", "id"), ("limit", "-1")])
        let rows = try await admin.send(name, .get, "\(path)?\(query)")?.arrayValue ?? []
        if let id = rows.compactMap({ Admin.id($0["id"]) }).first {
            steps.append(BootstrapReport.Step(name: name, outcome: .unchanged))
            log("\(name): already in place (\(id))\(rows.count > 1 ? ", \(rows.count) matches, using the first" : "")")
            return id
        }
        let created = try await admin.send(name, .post, path, body)
        guard let id = Admin.id(created?["id"]) else { throw .step(name: name, reason: "Directus answered without an id") }
        steps.append(BootstrapReport.Step(name: name, outcome: .created))
        log("\(name): created (\(id))")
        return id
    }

    /// Makes the rules of `policy` say what `rules` say: PATCHes differing rows, POSTs missing ones (one array).
    private func reconcile(_ admin: Admin, policy: String, rules: [DirectusPermissionRow],
                           label: String) async throws(BootstrapError) -> [(String, BootstrapOutcome)] {
        var filter: [(String, String)] = [("filter[policy][_eq]", policy)]
        let collections = Set(rules.map(\.collection))
        if collections.count == 1, let only = collections.first { filter.append(("filter[collection][_eq]", only)) }
        let query = QueryString.build(filter + [("fields", "id,collection,action,fields,permissions,validation,presets"),
                                                ("limit", "-1")])
        // Built-in "app minimal" rows come back with `id: null`: they are not stored, skip them.
        let existing = (try await admin.send("\(label)s", .get, "/permissions?\(query)"))?.arrayValue?
            .filter { Admin.id($0["id"]) != nil } ?? []
        var outcomes: [(String, BootstrapOutcome)] = []
        var missing: [DirectusPermissionRow] = []
        // Several rules may share a collection and action (directus_users read: one's own row, every row's
        // names): each rule claims one row, first one saying the same, else one left unclaimed to PATCH.
        var claimed = Set<String>()
        var pending: [(DirectusPermissionRow, String)] = []
        for rule in rules {
            let name = "\(label) \(rule.collection) \(rule.action)"
            if let row = existing.first(where: { row in
                Admin.id(row["id"]).map { !claimed.contains($0) } ?? false && rule.matches(row)
            }), let id = Admin.id(row["id"]) {
                claimed.insert(id)
                outcomes.append((name, .unchanged))
            } else {
                pending.append((rule, name))
            }
        }
        for (rule, name) in pending {
            if let row = existing.first(where: { row in
                guard let id = Admin.id(row["id"]), !claimed.contains(id) else { return false }
                return row["collection"]?.stringValue == rule.collection && row["action"]?.stringValue == rule.action
            }), let id = Admin.id(row["id"]) {
                claimed.insert(id)
                _ = try await admin.send(name, .patch, "/permissions/\(QueryString.encode(id))", .object(rule.changes))
                outcomes.append((name, .updated))
            } else {
                missing.append(rule)
                outcomes.append((name, .created))
            }
        }
        if !missing.isEmpty {
            _ = try await admin.send("\(label)s", .post, "/permissions", .array(missing.map { $0.body(policy: policy) }))
        }
        return outcomes
    }

    /// Deletes the Public create rules on `directus_users` that the `users` mode left (their preset role is the
    /// app role); other such rules were added by someone else and are only reported.
    private func removePublicUserCreate(_ admin: Admin, policy: String,
                                        role: String) async throws(BootstrapError) -> [(String, BootstrapOutcome)] {
        let name = "Public permission directus_users create"
        let query = QueryString.build([("filter[policy][_eq]", policy), ("filter[collection][_eq]", "directus_users"),
                                       ("filter[action][_eq]", "create"), ("fields", "id,presets"), ("limit", "-1")])
        let rows = (try await admin.send("\(name)s", .get, "/permissions?\(query)"))?.arrayValue?
            .filter { Admin.id($0["id"]) != nil } ?? []
        var outcomes: [(String, BootstrapOutcome)] = []
        for row in rows {
            guard let id = Admin.id(row["id"]) else { continue }
            if row["presets"]?["role"]?.stringValue == role {
                _ = try await admin.send(name, .delete, "/permissions/\(QueryString.encode(id))")
                outcomes.append((name, .removed))
            } else {
                log("warning: the Public policy has another create rule on directus_users (id \(id)); "
                    + "it leaves Directus's /users open to anyone: remove it unless it is wanted")
            }
        }
        return outcomes
    }

    /// The Public policy: the access rows with neither role nor user (the fixed id first, else the first found).
    private func publicPolicy(_ admin: Admin) async throws(BootstrapError) -> String {
        let query = QueryString.build([("filter[role][_null]", "true"), ("filter[user][_null]", "true"),
                                       ("fields", "policy.id,policy.name"), ("limit", "-1")])
        let rows = try await admin.send("Public policy", .get, "/access?\(query)")?.arrayValue ?? []
        let ids = rows.compactMap { row in Admin.id(row["policy"]?["id"]) ?? Admin.id(row["policy"]) }
        if ids.contains(BootstrapPlan.publicPolicyID) || ids.isEmpty { return BootstrapPlan.publicPolicyID }
        return ids[0]
    }

    /// `PATCH /settings` for `/users/register` when the current values differ.
    private func registrationSettings(_ admin: Admin, role: String) async throws(BootstrapError) -> BootstrapOutcome {
        let wanted = BootstrapPlan.registrationSettings(role: role)
        let query = QueryString.build([("fields", wanted.map(\.0).joined(separator: ","))])
        let current = try await admin.send("settings", .get, "/settings?\(query)")
        if wanted.allSatisfy({ current?[$0.0] == $0.1 }) { return .unchanged }
        _ = try await admin.send("settings /users/register", .patch, "/settings", .object(wanted))
        return .updated
    }
}

/// The admin's calls: each answer's `data`, or a `BootstrapError` naming the step.
private struct Admin: Sendable {
    /// The client every call goes through.
    let client: DirectusClient
    /// The admin's access or static token.
    let token: String
    /// Request id and forwarded address of every call.
    let context: CallFields
    /// The Directus base URL, for messages.
    let url: String

    /// Sends one call and returns its `data` (nil for an empty answer).
    func send(_ step: String, _ method: HTTPMethod, _ target: String, _ body: JSONValue? = nil) async throws(BootstrapError) -> JSONValue? {
        do {
            let response = try await client.call(method, target, body: body, token: token, context: context)
            guard !response.body.isEmpty else { return nil }
            guard let json = try? JSONValue.parse(response.body) else {
                throw BootstrapError.step(name: step, reason: "Directus answered \(response.status) with a body that is not JSON")
            }
            return json["data"]
        } catch let error as BootstrapError {
            throw error
        } catch let error as DirectusError {
            throw Self.translate(error, step: step, url: url, path: target)
        } catch {
            throw BootstrapError.step(name: step, reason: "\(error)")
        }
    }

    /// Like `send`, but a 403 `FORBIDDEN` means "does not exist" (Directus hides missing schema behind 403).
    func lookup(_ step: String, _ target: String) async throws(BootstrapError) -> JSONValue? {
        do {
            let response = try await client.call(.get, target, body: nil, token: token, context: context)
            return (try? JSONValue.parse(response.body))?["data"] ?? .null
        } catch {
            if error.status == 403, error.code == .forbidden { return nil }
            throw Self.translate(error, step: step, url: url, path: target)
        }
    }

    /// A primary key as text (uuid strings and integer ids alike).
    static func id(_ value: JSONValue?) -> String? {
        guard let value else { return nil }
        if let text = value.stringValue, !text.isEmpty { return text }
        return value.intValue.map { String($0) }
    }

    /// A Directus failure as a bootstrap error with a clear reason.
    static func translate(_ error: DirectusError, step: String, url: String, path: String? = nil) -> BootstrapError {
        switch error {
        case .transport(.unreachable(let why)): return .unreachable(url: url, reason: why)
        case .transport(.timeout): return .unreachable(url: url, reason: "no answer in time")
        case .transport(.closed): return .step(name: step, reason: "Directus closed the connection")
        case .transport(.badResponse(let why)): return .step(name: step, reason: "bad HTTP answer: \(why)")
        case .badAnswer(let why): return .step(name: step, reason: why)
        case .api(let status, let errors):
            if status == 401 { return .credentialsRejected }
            if status == 403, errors.first?.code == .forbidden, let path { return .notAdmin(path: path) }
            let first = errors.first
            return .step(name: step, reason: "Directus answered \(status) \(first?.code.rawValue ?? "")"
                + (first.map { ": \($0.message)" } ?? ""))
        }
    }
}
