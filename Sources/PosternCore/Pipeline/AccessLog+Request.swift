/// The access log's lines about one request, written from its `RequestContext` (here, beside the context: the
/// log itself knows nothing of the pipeline).
import PosternHTTP
import PosternIO

extension AccessLog {
    /// A line for a finished request.
    func access(_ request: HTTPRequest, _ response: HTTPResponse, context: RequestContext, trace: RequestTrace) {
        guard logsAccess else { return }
        let seconds = context.startedAt.secondsElapsed
        emit { line in
            line.begin(level: "info")
            line.field("msg", "request")
            line.field("request_id", context.requestID)
            line.field("trace_id", trace: context.traceContext)
            line.field("method", request.method.description)
            line.field("route", context.routePattern)
            line.field("status", integer: response.status)
            line.field("duration_ms", milliseconds: seconds)
            line.field("upstream_ms", milliseconds: trace.upstreamSeconds)
            line.field("client_ip", context.clientIP)
            if let user = trace.userID { line.field("user_id", user) }
            if let failed = trace.failedParts {
                line.field("failed_parts", json: .object(failed.map { ($0.key, .int(Int64($0.status))) }))
            }
            line.end()
        }
    }

    /// A line for an error answer (the private cause, never a secret).
    func error(_ error: GatewayError, context: RequestContext) {
        let lineLevel: Level = error.status >= 500 ? .error : .debug
        guard logs(lineLevel) else { return }
        emit { line in
            line.begin(level: lineLevel == .error ? "error" : "debug")
            line.field("msg", error.message)
            line.field("code", error.code.rawValue)
            line.field("request_id", context.requestID)
            if let cause = error.cause { line.field("cause", cause) }
            line.end()
        }
    }
}
