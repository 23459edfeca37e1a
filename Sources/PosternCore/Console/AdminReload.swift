import FoundationEssentials
import PosternHTTP

/// `POST /admin/reload` on the admin listener (docs/api.md, Reloading the config), behind the admin token as
/// every path under `/admin/`: reads the config file again, off the loops, and answers what the reload did.
struct AdminReload: Sendable {
    /// What runs the reload (the application's reloader).
    let trigger: ReloadTrigger
    /// Where the request's admin IP is noted.
    let log: AccessLog

    /// 200 `{"generation": N, "changed": bool}`, 400 `invalid_config` with `problems`, or 409 `restart_required`
    /// with `keys`.
    func reload(_ request: HTTPRequest, _ context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        log.event(.notice, "config reload requested", [("admin_ip", .string(context.clientIP)),
                                                      ("request_id", .string(context.requestID))])
        guard let outcome = await trigger.run() else { throw .notFound("this gateway has no config to reload") }
        return AdminReload.response(outcome, requestID: context.requestID)
    }

    /// The answer to an outcome.
    static func response(_ outcome: ConfigReloadOutcome, requestID: String) -> HTTPResponse {
        var response: HTTPResponse
        switch outcome {
        case .reloaded(let generation, let changed):
            response = .json(200, .object([("generation", .int(Int64(generation))), ("changed", .bool(changed))]))
        case .invalid(let problems):
            response = .json(400, .object([
                ("error", .string("the config is invalid; the running config keeps serving")),
                ("code", .string(PosternErrorCode.invalidConfig.rawValue)), ("request_id", .string(requestID)),
                ("problems", .array(problems.map { .string($0.description) })),
            ]))
        case .restartRequired(let keys):
            response = .json(409, .object([
                ("error", .string("only a restart can change \(keys.joined(separator: ", ")); nothing was reloaded")),
                ("code", .string(PosternErrorCode.restartRequired.rawValue)), ("request_id", .string(requestID)),
                ("keys", .array(keys.map { .string($0) })),
            ]))
        }
        response.headers.set("Cache-Control", "no-store")
        return response
    }
}
