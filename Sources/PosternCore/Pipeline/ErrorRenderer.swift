import FoundationEssentials
import PosternHTTP

/// The one place that turns errors into responses (docs/api.md, Errors).
enum ErrorRenderer {
    /// `{"error","code","request_id"}` plus, on resource routes, `"<resource>":[]` and `"total":0`.
    static func render(_ error: GatewayError, context: RequestContext) -> HTTPResponse {
        var members: [(String, JSONValue)] = [
            ("error", .string(error.message)), ("code", .string(error.code.rawValue)), ("request_id", .string(context.requestID)),
        ]
        if let resource = context.resourceName {
            members.append((resource, .array([])))
            members.append(("total", .int(0)))
        }
        return .json(error.status, .object(members), headers: error.headers)
    }
}
