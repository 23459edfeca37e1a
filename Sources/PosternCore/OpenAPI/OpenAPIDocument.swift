import FoundationEssentials
import PosternHTTP

/// The OpenAPI 3.1 description of the public API, generated from the loaded config (docs/api.md, OpenAPI):
/// the user and operations routes, and every configured resource with its fields, writable fields, rules,
/// list parameters, statuses and error shape. Built once at start-up; no I/O.
package struct OpenAPIDocument: Sendable {
    /// The path the gateway serves the document at.
    static let path = "/api/v1/openapi.json"

    /// The document as a JSON value (object keys in a stable order).
    let value: JSONValue

    /// Generates the document for `config`.
    package init(config: PosternConfig) {
        var paths: [(String, JSONValue)] = OpenAPIDocument.userPaths() + OpenAPIDocument.operationsPaths()
        var schemas: [(String, JSONValue)] = OpenAPIDocument.commonSchemas()
        var tags: [JSONValue] = [
            .object([("name", .string("user")), ("description", .string("Sign-in, tokens and registration."))]),
            .object([("name", .string("operations")), ("description", .string("Liveness, readiness and this document."))]),
        ]
        for resource in config.resources {
            let described = ResourceDescription(resource)
            paths += described.paths()
            schemas += described.schemas()
            tags.append(.object([("name", .string(resource.name)),
                                 ("description", .string("Items of the Directus collection \"\(resource.collection)\"."))]))
        }
        for composite in config.composites {
            let described = CompositeDescription(composite, config: config)
            paths += described.paths()
            schemas += described.schemas()
        }
        if !config.composites.isEmpty {
            tags.append(.object([("name", .string("composites")),
                                 ("description", .string("Screens: several GET routes answered in one call."))]))
        }
        value = .object([
            ("openapi", .string("3.1.0")),
            ("info", .object([
                ("title", .string("Postern")),
                ("version", .string(PosternVersion.current)),
                ("description", .string(OpenAPIDocument.description(config))),
            ])),
            ("tags", .array(tags)),
            ("paths", .object(paths)),
            ("components", .object([
                ("schemas", .object(schemas)),
                ("securitySchemes", .object([
                    ("bearerAuth", .object([
                        ("type", .string("http")), ("scheme", .string("bearer")),
                        ("description", .string("Postern's own token (`user.token` of the login answer, `pst_…`).")),
                    ])),
                ])),
            ])),
        ])
    }

    /// The document as UTF-8 JSON bytes.
    package func data() -> Data { value.serialized() }

    private static func description(_ config: PosternConfig) -> String {
        let names = config.resources.map { "`/api/v1/\($0.name)`" }.joined(separator: ", ")
        return """
            Postern is a backend-for-frontend gateway in front of Directus. Sign in with \
            `POST /api/v1/user/login`, then send `Authorization: Bearer <user.token>`. Resources: \(names). \
            Every error has the shape `{"error","code","request_id"}`; on resource routes it also carries the \
            resource's collection key (an empty array) and `"total": 0`. Every answer carries `X-Request-Id`; \
            a valid W3C `traceparent` is continued (the answer then carries `traceresponse`), else a trace is started. \
            Any route answers 414 `uri_too_long` for a request target above 8 KiB, and 405 `method_not_allowed` \
            (with `Allow`) for a method it does not serve.
            """
    }

    // MARK: User and operations routes

    private static func userPaths() -> [(String, JSONValue)] {
        let tokenAnswer = jsonContent(ref("TokenAnswer"))
        return [
            ("/api/v1/user/login", .object([("post", operation(
                id: "login", tag: "user", summary: "Sign in with an email and password.",
                description: "Answers 200 with Postern's token in `user.token` (and again, with a refresh token, in `data`). "
                    + "`username` is accepted for `email`. Failed logins are limited per client IP and per email (429 with `Retry-After`).",
                security: .public, body: ref("LoginRequest"),
                responses: [("200", response("Signed in.", tokenAnswer))] + errors([400, 401, 413, 414, 429, 500, 502, 503, 504])))])),
            ("/api/v1/user/refresh", .object([("post", operation(
                id: "refresh", tag: "user", summary: "Trade a refresh token for a new token pair.",
                description: "Each refresh token works once; both old tokens are dead afterwards. Presenting a used refresh token revokes the whole session.",
                security: .public, body: ref("RefreshRequest"),
                responses: [("200", response("A new token pair.", tokenAnswer))] + errors([400, 401, 413, 414, 500, 502, 503, 504])))])),
            ("/api/v1/user", .object([("post", operation(
                id: "register", tag: "user", summary: "Register, then sign in.",
                description: "Answers like login. 409 when the email is already registered, 403 when registration is disabled in Directus.",
                security: .public, body: ref("RegisterRequest"),
                responses: [("200", response("Registered and signed in.", tokenAnswer))]
                    + errors([400, 403, 409, 413, 414, 429, 500, 502, 503, 504])))])),
            ("/api/v1/user/logout", .object([("post", operation(
                id: "logout", tag: "user", summary: "End the session.",
                description: "The token is dead at once; Directus's refresh token is logged out upstream. No request body.",
                security: .bearer, body: nil,
                responses: [("204", response("Signed out.", nil))] + errors([401, 413, 414, 429, 500, 503])))])),
            ("/api/v1/user/me", .object([("get", operation(
                id: "me", tag: "user", summary: "The signed-in user.", description: nil, security: .bearer, body: nil,
                responses: [("200", response("The caller.", jsonContent(ref("MeAnswer"))))] + errors([401, 414, 429, 500, 503])))])),
        ]
    }

    private static func operationsPaths() -> [(String, JSONValue)] {
        [
            ("/healthz", .object([("get", operation(
                id: "healthz", tag: "operations", summary: "The process is alive (no upstream call).", description: nil,
                security: .public, body: nil,
                responses: [("200", response("Alive.", jsonContent(ref("Status"))))] + errors([414])))])),
            ("/readyz", .object([("get", operation(
                id: "readyz", tag: "operations", summary: "Directus answers `/server/ping`, the circuit breaker is closed and the session store is available.",
                description: nil, security: .public, body: nil,
                responses: [("200", response("Ready.", jsonContent(ref("Status"))))] + errors([414, 503])))])),
            (OpenAPIDocument.path, .object([("get", operation(
                id: "openapi", tag: "operations", summary: "This document (OpenAPI 3.1), generated from the loaded config.",
                description: nil, security: .public, body: nil,
                responses: [("200", response("The document.", .object([("application/json", .object([
                    ("schema", .object([("type", .string("object"))])),
                ]))])))] + errors([414])))])),
        ]
    }

    private static func commonSchemas() -> [(String, JSONValue)] {
        let nonEmpty = JSONValue.object([("type", .string("string")), ("minLength", .int(1))])
        // Directus refuses a login or registration whose email is not an email address (400); Postern refuses
        // one over 254 bytes, and a password over 1,024 (400 before counting the attempt: `UserHandlers`).
        let email = JSONValue.object([("type", .string("string")), ("format", .string("email")), ("maxLength", .int(254)),
                                      ("description", .string("At most 254 bytes (UTF-8)."))])
        let password = JSONValue.object([("type", .string("string")), ("minLength", .int(1)), ("maxLength", .int(1024)),
                                         ("description", .string("At most 1,024 bytes (UTF-8)."))])
        return [
            ("Error", errorSchema(collection: nil)),
            ("LoginRequest", .object([
                ("type", .string("object")),
                ("properties", .object([("email", email), ("username", email), ("password", password)])),
                ("required", strings("password")),
                ("anyOf", .array([.object([("required", strings("email"))]), .object([("required", strings("username"))])])),
                ("description", .string("`username` is accepted for `email` (clients written for the access-and-refresh-token pattern).")),
            ])),
            ("RefreshRequest", .object([
                ("type", .string("object")),
                ("properties", .object([("refreshToken", nonEmpty), ("refresh_token", nonEmpty)])),
                ("anyOf", .array([.object([("required", strings("refreshToken"))]), .object([("required", strings("refresh_token"))])])),
            ])),
            ("RegisterRequest", .object([
                ("type", .string("object")),
                ("properties", .object([
                    ("email", email),
                    ("password", password),
                ])),
                ("required", strings("email", "password")),
            ])),
            ("TokenAnswer", .object([
                ("type", .string("object")),
                ("properties", .object([
                    ("user", .object([
                        ("type", .string("object")),
                        ("properties", .object([
                            ("id", .object([("type", .string("string")), ("description", .string("The Directus user id."))])),
                            ("email", .object([("type", .string("string"))])),
                            ("token", .object([("type", .string("string")), ("description", .string("Postern's bearer token (`pst_…`)."))])),
                            ("expires_at", .object([("type", .string("string")), ("format", .string("date-time")),
                                                    ("description", .string("The token's current expiry (RFC 3339, UTC); it slides with use."))])),
                        ])),
                        ("required", strings("id", "email", "token", "expires_at")),
                    ])),
                    ("data", .object([
                        ("type", .string("object")),
                        ("properties", .object([
                            ("accessToken", .object([("type", .string("string")), ("description", .string("The same value as `user.token`."))])),
                            ("refreshToken", .object([("type", .string("string")), ("description", .string("Postern's refresh token (`psr_…`); works once."))])),
                        ])),
                        ("required", strings("accessToken", "refreshToken")),
                    ])),
                ])),
                ("required", strings("user", "data")),
            ])),
            ("MeAnswer", .object([
                ("type", .string("object")),
                ("properties", .object([
                    ("user", .object([
                        ("type", .string("object")),
                        ("properties", .object([("id", .object([("type", .string("string"))])), ("email", .object([("type", .string("string"))]))])),
                        ("required", strings("id", "email")),
                    ])),
                ])),
                ("required", strings("user")),
            ])),
            ("Status", .object([
                ("type", .string("object")),
                ("properties", .object([("status", .object([("type", .string("string"))]))])),
                ("required", strings("status")),
            ])),
        ]
    }

    // MARK: Building blocks (shared with ResourceDescription)

    /// Who may call an operation, as OpenAPI security requirements.
    enum Access {
        /// No token needed (one is still checked when sent).
        case `public`
        /// A bearer token is required.
        case bearer
    }

    /// One operation object.
    static func operation(id: String, tag: String, summary: String, description: String?, security: Access,
                          body: JSONValue?, bodyRequired: Bool = true, parameters: [JSONValue] = [],
                          responses: [(String, JSONValue)], extensions: [(String, JSONValue)] = []) -> JSONValue {
        var members: [(String, JSONValue)] = [("operationId", .string(id)), ("tags", .array([.string(tag)])),
                                              ("summary", .string(summary))]
        if let description { members.append(("description", .string(description))) }
        switch security {
        case .public: members.append(("security", .array([.object([]), .object([("bearerAuth", .array([]))])])))
        case .bearer: members.append(("security", .array([.object([("bearerAuth", .array([]))])])))
        }
        if !parameters.isEmpty { members.append(("parameters", .array(parameters))) }
        if let body {
            members.append(("requestBody", .object([("required", .bool(bodyRequired)), ("content", jsonContent(body))])))
        }
        members.append(("responses", .object(responses)))
        return .object(members + extensions)
    }

    /// `{"application/json":{"schema":…}}`.
    static func jsonContent(_ schema: JSONValue) -> JSONValue {
        .object([("application/json", .object([("schema", schema)]))])
    }

    /// A response object; `content` nil for an empty body.
    static func response(_ description: String, _ content: JSONValue?, headers: [(String, JSONValue)] = []) -> JSONValue {
        var members: [(String, JSONValue)] = [("description", .string(description))]
        var allHeaders: [(String, JSONValue)] = [("X-Request-Id", .object([
            ("description", .string("The request id (the client's when it matches `[A-Za-z0-9._-]{1,128}`, else the trace id: 32 hex digits).")),
            ("schema", .object([("type", .string("string"))])),
        ])), ("traceresponse", .object([
            ("description", .string("`00-<trace id>-<gateway span id>-<flags>` (W3C Trace Context), when the request had a valid `traceparent`.")),
            ("schema", .object([("type", .string("string"))])),
        ]))]
        allHeaders += headers
        members.append(("headers", .object(allHeaders)))
        if let content { members.append(("content", content)) }
        return .object(members)
    }

    /// The error responses for `statuses`, each with the error schema `errorRef`.
    static func errors(_ statuses: [Int], errorRef: String = "Error") -> [(String, JSONValue)] {
        statuses.map { status in
            var headers: [(String, JSONValue)] = []
            switch status {
            case 401:
                headers.append(("WWW-Authenticate", .object([("schema", .object([("type", .string("string"))]))])))
            case 429:
                headers.append(("Retry-After", .object([("description", .string("Seconds to wait.")), ("schema", .object([("type", .string("integer"))]))])))
            default: break
            }
            return (String(status), response(errorText[status] ?? "Error.", jsonContent(ref(errorRef)), headers: headers))
        }
    }

    /// What each error status means.
    static let errorText: [Int: String] = [
        400: "`invalid_request`: malformed JSON, wrong types, an unknown or read-only field, a bad query value.",
        401: "`unauthorized` (no, unknown, expired or revoked token) or `invalid_credentials` (login).",
        403: "`forbidden`: the rule denies the action (e.g. not the creator), or registration is disabled.",
        404: "`not_found`: no such item, an id that is not a valid key, or an item the caller may not read.",
        409: "`conflict`: e.g. the email is already registered, or a unique value is taken.",
        413: "`payload_too_large`: the body is above `limits.max_body_bytes`.",
        414: "`uri_too_long`: the request target is above 8 KiB.",
        429: "`rate_limited`: too many failed logins, registrations or requests (`Retry-After`).",
        500: "`internal_error`: the session store failed.",
        502: "`upstream_error`: Directus answered something unusable.",
        503: "`upstream_unavailable`: Directus cannot be reached (or the circuit breaker is open); "
            + "`session_store_unavailable`: the shared session store (Redis) cannot be reached.",
        504: "`upstream_timeout`: Directus did not answer in time.",
    ]

    /// A JSON array of strings.
    static func strings(_ items: String...) -> JSONValue {
        .array(items.map { .string($0) })
    }

    /// `{"$ref":"#/components/schemas/<name>"}`.
    static func ref(_ name: String) -> JSONValue {
        .object([("$ref", .string("#/components/schemas/\(name)"))])
    }

    /// The error body; with `collection`, also the empty collection key and `"total": 0`.
    static func errorSchema(collection: String?) -> JSONValue {
        var properties: [(String, JSONValue)] = [
            ("error", .object([("type", .string("string")), ("description", .string("A message for people."))])),
            ("code", .object([("type", .string("string")), ("description", .string(
                "A stable machine-readable code: invalid_request, unauthorized, invalid_credentials, forbidden, not_found, "
                + "method_not_allowed, conflict, payload_too_large, uri_too_long, rate_limited, internal_error, "
                + "upstream_error, upstream_unavailable, session_store_unavailable, upstream_timeout."))])),
            ("request_id", .object([("type", .string("string"))])),
        ]
        var required: [JSONValue] = [.string("error"), .string("code"), .string("request_id")]
        if let collection {
            properties.append((collection, .object([("type", .string("array")), ("maxItems", .int(0)), ("items", .object([]))])))
            properties.append(("total", .object([("type", .string("integer")), ("const", .int(0))])))
            required += [.string(collection), .string("total")]
        }
        return .object([("type", .string("object")), ("properties", .object(properties)), ("required", .array(required))])
    }
}
