import FoundationEssentials
import PosternHTTP

/// The OpenAPI path and schema of one composite endpoint (docs/api.md, Composite endpoints).
struct CompositeDescription {
    let composite: CompositeConfig
    /// The config it is served under (its resources name the parts' schemas; `directus.timeout_ms`).
    let config: PosternConfig
    /// The schema name: the composite's name in upper camel case with `Composite` (`post_page` → `PostPageComposite`).
    let typeName: String

    /// Describes `composite` under `config`.
    init(_ composite: CompositeConfig, config: PosternConfig) {
        self.composite = composite
        self.config = config
        typeName = composite.name.split(whereSeparator: { $0 == "_" || $0 == "-" })
            .map { $0.prefix(1).uppercased() + $0.dropFirst() }.joined() + "Composite"
    }

    /// `GET <path>`.
    func paths() -> [(String, JSONValue)] {
        typealias D = OpenAPIDocument
        let parameters: [JSONValue] = composite.placeholders.map { name in
            .object([("name", .string(name)), ("in", .string("path")), ("required", .bool(true)),
                     ("description", .string("Put into the parts' paths and query values; each part validates it as its route does.")),
                     ("schema", .object([("type", .string("string"))]))])
        }
        let parts = composite.parts.map { "`\($0.key)` (\($0.route)\($0.required ? ", required" : ""))" }.joined(separator: ", ")
        let description = "One call for a screen: the parts \(parts) run at once with the caller's identity, each through "
            + "its own route's rules, mapping and micro-cache, and each part's value is the body its direct call gives. "
            + "A failed optional part is null, with its error under `errors`, and `X-Postern-Complete: false`; a failed "
            + "required part answers the composite with its status and error (the first in config order). A part not done "
            + "within \(composite.timeoutMs(under: config.directus)) ms has failed with 504 `upstream_timeout`. "
            + "Permission `\(composite.permission.description)`."
        let complete = JSONValue.object([
            ("description", .string("`true` when every part succeeded, else `false`.")),
            ("schema", .object([("type", .string("string")), ("enum", D.strings("true", "false"))])),
        ])
        let operation = D.operation(
            id: "composite" + typeName.dropLast("Composite".count), tag: "composites", summary: "The \(composite.name) screen.",
            description: description, security: composite.permission == .public ? .public : .bearer, body: nil,
            parameters: parameters,
            responses: [("200", D.response("Every part's answer under its key.", D.jsonContent(D.ref(typeName)),
                                           headers: [("X-Postern-Complete", complete)]))]
                + D.errors([400, 401, 403, 404, 413, 414, 429, 500, 502, 503, 504]),
            extensions: [("x-postern-rule", .string(composite.permission.description))])
        return [(composite.path, .object([("get", operation)]))]
    }

    /// `<Name>Composite`: one member per part (its route's answer schema; null allowed when optional) and `errors`.
    func schemas() -> [(String, JSONValue)] {
        typealias D = OpenAPIDocument
        var properties: [(String, JSONValue)] = composite.parts.map { part in
            let answer = answerSchema(part)
            return (part.key, part.required ? answer : .object([("oneOf", .array([answer, .object([("type", .string("null"))])]))]))
        }
        let failure = JSONValue.object([
            ("type", .string("object")),
            ("properties", .object([
                ("status", .object([("type", .string("integer"))])),
                ("code", .object([("type", .string("string"))])),
                ("error", .object([("type", .string("string"))])),
            ])),
            ("required", D.strings("status", "code", "error")),
        ])
        properties.append(("errors", .object([
            ("type", .string("object")),
            ("description", .string("The optional parts that failed, by key (only when one did).")),
            ("additionalProperties", failure),
        ])))
        return [(typeName, .object([
            ("type", .string("object")),
            ("properties", .object(properties)),
            ("required", .array(composite.parts.map { .string($0.key) })),
        ]))]
    }

    /// The answer schema of a part's route.
    private func answerSchema(_ part: CompositePartConfig) -> JSONValue {
        switch config.partTarget(part.methodAndPath.path) {
        case .list(let resource)?:
            return OpenAPIDocument.ref(ResourceDescription(resource).typeName + "List")
        case .read(let resource)?:
            return OpenAPIDocument.ref(ResourceDescription(resource).readAnswerType)
        case .me?:
            return OpenAPIDocument.ref("MeAnswer")
        case nil:
            return .object([("type", .string("object"))])
        }
    }
}
