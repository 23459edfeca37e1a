/// Decoding and checking `composites` (docs/api.md, Composite endpoints): every problem named by its key path.
import PosternHTTP

extension ConfigKeys {
    /// `composites[i]`.
    static let composite = ["name", "path", "permission", "timeout_ms", "parts"]
    /// `composites[i].parts[j]`.
    static let compositePart = ["key", "route", "required", "query"]
}

extension PosternConfig {
    /// Decodes the file's `composites` into `config`, returning each decoded composite's key path. A file that sets
    /// `resources` but not `composites` has none: the shipped composites read the shipped resources.
    static func decodeComposites(_ root: JSONValue, into config: inout PosternConfig,
                                 reader: inout ConfigReader) -> [String] {
        guard let top = root.objectValue else { return config.composites.indices.map { "composites[\($0)]" } }
        let members = Dictionary(top.map { ($0.0, $0.1) }, uniquingKeysWith: { first, _ in first })
        guard let value = members["composites"] else {
            if members["resources"] != nil { config.composites = [] }
            return config.composites.indices.map { "composites[\($0)]" }
        }
        config.composites = []
        guard let elements = value.arrayValue else {
            reader.report("composites", "must be an array of composite objects, not \(value.typeName)")
            return []
        }
        var paths: [String] = []
        for (i, element) in elements.enumerated() {
            let path = "composites[\(i)]"
            if let composite = decodeComposite(element, at: path, reader: &reader) {
                config.composites.append(composite)
                paths.append(path)
            }
        }
        return paths
    }

    /// One composite object; a missing `name`, `path` or `parts` stays empty for the checks to report.
    static func decodeComposite(_ value: JSONValue, at path: String, reader: inout ConfigReader) -> CompositeConfig? {
        guard let o = reader.object(value, at: path, keys: ConfigKeys.composite) else { return nil }
        var parts: [CompositePartConfig] = []
        if let partsValue = o["parts"] {
            if let elements = partsValue.arrayValue {
                for (j, element) in elements.enumerated() {
                    let partPath = "\(path).parts[\(j)]"
                    // A part that cannot be decoded keeps its place (empty), so that later parts keep their key paths.
                    parts.append(decodePart(element, at: partPath, reader: &reader) ?? CompositePartConfig(key: "", route: ""))
                }
            } else {
                reader.report("\(path).parts", "must be an array of part objects, not \(partsValue.typeName)")
            }
        }
        var composite = CompositeConfig(name: reader.string(o, "name", at: path) ?? "",
                                        path: reader.string(o, "path", at: path) ?? "", parts: parts)
        if let text = reader.string(o, "permission", at: path) {
            if let rule = PermissionRule(text) {
                composite.permission = rule
            } else {
                reader.report("\(path).permission", "unknown rule \"\(text)\" (public, authenticated, role:<id>, nobody)")
            }
        }
        if let v = reader.int(o, "timeout_ms", at: path, rule: .timeoutMs) { composite.timeoutMs = v }
        return composite
    }

    /// One part object.
    static func decodePart(_ value: JSONValue, at path: String, reader: inout ConfigReader) -> CompositePartConfig? {
        guard let o = reader.object(value, at: path, keys: ConfigKeys.compositePart) else { return nil }
        var part = CompositePartConfig(key: reader.string(o, "key", at: path) ?? "", route: reader.string(o, "route", at: path) ?? "")
        if let v = reader.bool(o, "required", at: path) { part.required = v }
        if let queryValue = o["query"] {
            let queryPath = "\(path).query"
            if let members = queryValue.objectValue {
                for (name, member) in members {
                    let memberPath = "\(queryPath).\(name)"
                    if part.query.contains(where: { $0.0 == name }) {
                        reader.report(memberPath, "duplicate key")
                    } else if let text = member.stringValue {
                        part.query.append((name, text))
                    } else if let number = member.intValue {
                        part.query.append((name, String(number)))
                    } else if case .bool(let flag) = member {
                        part.query.append((name, flag ? "true" : "false"))
                    } else {
                        reader.report(memberPath, "must be a string, an integer or a boolean, not \(member.typeName)")
                    }
                }
            } else {
                reader.report(queryPath, "must be an object of query parameter → value, not \(queryValue.typeName)")
            }
        }
        return part
    }

    /// The problems of `composites`, each composite named by its place in the file (`paths`).
    func compositeProblems(paths: [String]) -> [ConfigProblem] {
        var problems: [ConfigProblem] = []
        var names: [String: String] = [:]
        // Every route of the public listener a composite path may collide with, and who declared it.
        var taken = fixedPublicRoutes.map { (pattern: $0, owner: "the route \($0)") }
        for resource in resources where !resource.name.isEmpty {
            taken.append(("/api/v1/\(resource.name)", "resource \(resource.name) (/api/v1/\(resource.name))"))
            taken.append(("/api/v1/\(resource.name)/{id}", "resource \(resource.name) (/api/v1/\(resource.name)/{id})"))
        }
        for (composite, path) in zip(composites, paths) {
            func report(_ key: String, _ message: String) {
                problems.append(ConfigProblem(path: key.isEmpty ? path : "\(path).\(key)", message: message))
            }
            if composite.name.isEmpty {
                report("name", "is required")
            } else if !ResourceConfig.isName(composite.name) {
                report("name", "must match [a-z][a-z0-9_-]* (got \"\(composite.name)\")")
            } else if let first = names[composite.name] {
                report("name", "duplicate composite name \"\(composite.name)\" (also \(first))")
            } else {
                names[composite.name] = path
            }
            if let problem = CompositeConfig.pathProblem(composite.path) {
                report("path", problem)
            } else if let other = taken.first(where: { CompositeConfig.collide($0.pattern, composite.path) }) {
                report("path", "\"\(composite.path)\" collides with \(other.owner)")
            } else {
                taken.append((composite.path, "composite \(composite.name) (\(path).path)"))
            }
            if composite.permission == .owner {
                report("permission", "\"owner\" needs an item; a composite may be public, authenticated, role:<id> or nobody")
            }
            if let timeout = composite.timeoutMs, !IntRule.timeoutMs.allows(timeout) {
                report("timeout_ms", IntRule.timeoutMs.message)
            }
            if composite.parts.isEmpty {
                report("parts", "needs at least one part")
            } else if composite.parts.count > CompositeConfig.maxParts {
                report("parts", "at most \(CompositeConfig.maxParts) parts (got \(composite.parts.count))")
            }
            let placeholders = composite.placeholders
            var keys: [String: Int] = [:]
            for (j, part) in composite.parts.enumerated() {
                let partPath = "parts[\(j)]"
                if part.key.isEmpty {
                    report("\(partPath).key", "is required")
                } else if !ResourceConfig.isFieldName(part.key, allowDash: false) {
                    report("\(partPath).key", "must match [A-Za-z_][A-Za-z0-9_]* (got \"\(part.key)\")")
                } else if part.key == "errors" {
                    report("\(partPath).key", "\"errors\" is the answer's own member (the failed parts)")
                } else if let first = keys[part.key] {
                    report("\(partPath).key", "duplicate key \"\(part.key)\" (also parts[\(first)])")
                } else {
                    keys[part.key] = j
                }
                for problem in partProblems(part, placeholders: placeholders) { report("\(partPath).\(problem.key)", problem.message) }
            }
        }
        return problems
    }

    /// The GET and POST routes of the public listener that no config declares.
    var fixedPublicRoutes: [String] {
        ["/healthz", "/readyz", "/api/v1/openapi.json", "/api/v1/user/login", "/api/v1/user/refresh", "/api/v1/user/logout",
         "/api/v1/user/me", "/api/v1/user"]
    }

    /// What is wrong with `part` (relative key paths: `route`, `query.<name>`).
    private func partProblems(_ part: CompositePartConfig, placeholders: [String]) -> [(key: String, message: String)] {
        var problems: [(key: String, message: String)] = []
        guard !part.route.isEmpty else { return [("route", "is required (e.g. \"GET /api/v1/books\")")] }
        let (method, path) = part.methodAndPath
        guard method == "GET" else {
            return [("route", "must be a GET route of this config, written \"GET <path>\" (got \"\(part.route)\")")]
        }
        guard let target = partTarget(path) else {
            return [("route", "\"\(path)\" is not a GET route of this config (a resource's /api/v1/<name> or "
                        + "/api/v1/<name>/{id}, or /api/v1/user/me)")]
        }
        for segment in path.split(separator: "/") {
            if let name = CompositeConfig.placeholder(in: segment), !placeholders.contains(name) {
                problems.append(("route", "{\(name)} is not a placeholder of the composite's path"))
            }
        }
        let accepted = target.acceptedQuery
        for (name, value) in part.query {
            if !accepted.contains(name) {
                let takes = accepted.isEmpty ? "takes no query parameters" : "takes \(accepted.joined(separator: ", "))"
                problems.append(("query.\(name)", "\(path) does not accept \"\(name)\" (it \(takes))"))
            }
            for name in CompositeConfig.placeholders(inValue: value) where !placeholders.contains(name) {
                problems.append(("query.\(name)", "{\(name)} is not a placeholder of the composite's path"))
            }
        }
        return problems
    }

    /// The GET route of this config that a part's path names (its placeholders standing for `{id}`), else nil.
    func partTarget(_ path: String) -> CompositePartTarget? {
        if path == "/api/v1/user/me" { return .me }
        let segments = path.split(separator: "/", omittingEmptySubsequences: false)
        guard segments.count == 4 || segments.count == 5, segments[0].isEmpty, segments[1] == "api", segments[2] == "v1",
              let resource = resources.first(where: { $0.name == segments[3] }) else { return nil }
        if segments.count == 4 { return .list(resource) }
        return segments[4].isEmpty ? nil : .read(resource)
    }
}

/// What a composite part calls.
enum CompositePartTarget: Sendable {
    /// `GET /api/v1/user/me`.
    case me
    /// A resource's list.
    case list(ResourceConfig)
    /// A resource's read.
    case read(ResourceConfig)

    /// The query parameters the route reads (docs/api.md, Resources): a list's (its declared filters included), none
    /// for a read or `me`.
    var acceptedQuery: [String] {
        guard case .list(let resource) = self else { return [] }
        return resource.listQueryParameters
    }
}

extension CompositeConfig {
    /// What is wrong with a composite's `path`, or nil: under `/api/`, `/`-separated non-empty segments of URL-safe
    /// characters or `{name}` placeholders (`[a-z_][a-z0-9_]*`, each once), no trailing slash.
    static func pathProblem(_ path: String) -> String? {
        guard !path.isEmpty else { return "is required (e.g. \"/api/v1/home\")" }
        guard path.hasPrefix("/api/") else { return "must start with /api/ (got \"\(path)\")" }
        var seen: Set<String> = []
        for segment in path.split(separator: "/", omittingEmptySubsequences: false).dropFirst() {
            guard !segment.isEmpty else { return "must not have an empty segment or a trailing slash (got \"\(path)\")" }
            if let name = placeholder(in: segment) {
                guard isPlaceholderName(name) else { return "placeholder {\(name)} must match [a-z_][a-z0-9_]*" }
                guard seen.insert(name).inserted else { return "placeholder {\(name)} appears twice" }
            } else if !segment.unicodeScalars.allSatisfy({ isPathCharacter($0) }) {
                return "segment \"\(segment)\" may hold only letters, digits, -, ., _ and ~, or be a {name} placeholder"
            }
        }
        return nil
    }

    /// Whether two route patterns answer some path alike: as many segments, and at each, the same literal or a
    /// placeholder on either side.
    static func collide(_ a: String, _ b: String) -> Bool {
        let x = a.split(separator: "/"), y = b.split(separator: "/")
        guard x.count == y.count else { return false }
        return zip(x, y).allSatisfy { $0 == $1 || placeholder(in: $0) != nil || placeholder(in: $1) != nil }
    }

    /// The `{name}` placeholders in a query value.
    static func placeholders(inValue value: String) -> [String] {
        var names: [String] = []
        var rest = Substring(value)
        while let open = rest.firstIndex(of: "{"), let close = rest[open...].firstIndex(of: "}") {
            let name = String(rest[rest.index(after: open)..<close])
            if isPlaceholderName(name) { names.append(name) }
            rest = rest[rest.index(after: close)...]
        }
        return names
    }

    /// `[a-z_][a-z0-9_]*`.
    static func isPlaceholderName(_ name: String) -> Bool {
        guard let first = name.unicodeScalars.first, ("a"..."z").contains(first) || first == "_" else { return false }
        return name.unicodeScalars.allSatisfy { ("a"..."z").contains($0) || ("0"..."9").contains($0) || $0 == "_" }
    }

    private static func isPathCharacter(_ c: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(c) || ("A"..."Z").contains(c) || ("0"..."9").contains(c) || "-._~".unicodeScalars.contains(c)
    }
}
