import FoundationEssentials
import PosternHTTP
import PosternIO

/// A composite endpoint's handler (docs/api.md, Composite endpoints), built once from config. The caller's token was
/// checked once by the composite's own authentication stage; here the composite's permission is decided (403), then
/// every part runs at once on this request's loop, each through its own route's stages after authentication, its
/// mapping and micro-cache, with the caller's session, and the answers are gathered in config order.
final class CompositeResponder: Sendable {
    /// The composite's name (log lines).
    let name: String
    /// The composite's path pattern, split at `/` (the placeholders' places in a request path).
    private let segments: [Substring]
    /// Who may call it.
    let permission: PermissionRule
    /// The parts, in answer order.
    let parts: [CompositePart]
    /// How long the parts may take.
    let timeoutSeconds: Double
    /// Where a failed part's error is logged (as the edge logs a route's).
    let log: AccessLog
    /// The 403 of a permission that says no.
    private let forbidden: GatewayError

    /// The handler of `composite` over its resolved `parts`.
    init(_ composite: CompositeConfig, parts: [CompositePart], timeoutMs: Int, log: AccessLog) {
        name = composite.name
        segments = composite.path.split(separator: "/")
        permission = composite.permission
        self.parts = parts
        timeoutSeconds = Double(timeoutMs) / 1000
        self.log = log
        forbidden = .forbidden("you may not call \(composite.name)")
    }

    /// The composite's answer: 200 with every part's body under its key (failed optional parts null, and `errors`),
    /// or the first failed required part's error, thrown for the edge to render.
    func respond(_ request: HTTPRequest, _ context: RequestContext) async throws(GatewayError) -> HTTPResponse {
        switch Policy.decide(permission, identity: context.session) {
        case .allow: break
        case .deny, .allowIfOwner: throw forbidden
        case .unauthenticated: throw .unauthorized("sign in first")
        }
        let values = placeholderValues(request.path)
        let run = CompositeRun(required: parts.map(\.required))
        let loop = EventLoop.current
        // A part that failed at once may decide the answer (a required one, with every required part before it
        // done): the parts after it are then not started.
        for index in parts.indices where !run.isOver {
            let (partRequest, partContext) = parts[index].request(values: values, parent: context)
            let endpoint = parts[index].endpoint
            if let loop {
                // Runs here, on the loop thread, up to the part's first suspension (its upstream call sent), then
                // resumes on this loop: the parts' calls leave in this turn of the loop, side by side.
                Task.immediate(executorPreference: loop) {
                    run.record(index, await CompositeResponder.outcome(endpoint, partRequest, partContext))
                }
            } else {
                Task {
                    run.record(index, await CompositeResponder.outcome(endpoint, partRequest, partContext))
                }
            }
        }
        // Every part answered without suspending (micro-cache hits, `me`): no timer to arm.
        let timer = run.isOver ? nil : startTimer(run, loop: loop)
        await run.wait()
        timer?.cancel()
        let results = run.results
        return try answer(results.outcomes, timedOut: results.timedOut, context)
    }

    /// Arms the composite's timeout: a loop timer on the request's loop, else (off the loops: a test calling the
    /// gateway directly) a task that sleeps.
    private func startTimer(_ run: CompositeRun, loop: EventLoop?) -> EventLoop.Timer? {
        if let loop { return EventLoop.Timer(loop: loop, seconds: timeoutSeconds) { run.timeOut() } }
        let seconds = timeoutSeconds
        Task {
            try? await Task.sleep(nanoseconds: UInt64(seconds * 1_000_000_000))
            run.timeOut()
        }
        return nil
    }

    /// How one part ended: its endpoint's answer after authentication, a 2xx as its body, anything else as the error
    /// it stands for.
    private static func outcome(_ endpoint: Endpoint, _ request: HTTPRequest,
                                _ context: RequestContext) async -> CompositeRun.Outcome {
        do throws(GatewayError) {
            let response = try await endpoint.answerPart(request, context: context)
            guard response.status >= 400 else { return .body(Array(response.body)) }
            return .failed(error(of: response))
        } catch {
            return .failed(error)
        }
    }

    /// The error an answer rendered with the error shape stands for (its status, code, message and headers).
    static func error(of response: HTTPResponse) -> GatewayError {
        let body = try? JSONValue.parse(response.body)
        let code = body?["code"]?.stringValue.flatMap(PosternErrorCode.init(rawValue:)) ?? .upstreamError
        var error = GatewayError(status: response.status, code: code, message: body?["error"]?.stringValue ?? "the part failed")
        for name in ["Retry-After", "WWW-Authenticate", "Allow"] {
            if let value = response.headers[name] { error.headers.set(name, value) }
        }
        return error
    }

    /// The decoded values of the path's placeholders, by name.
    private func placeholderValues(_ path: String) -> [(String, String)] {
        var values: [(String, String)] = []
        let pieces = path.split(separator: "/")
        for (segment, piece) in zip(segments, pieces) {
            if let name = CompositeConfig.placeholder(in: segment) {
                values.append((name, QueryString.decode(String(piece).replacingBytes(of: "+", with: "%2B"))))
            }
        }
        return values
    }

    /// The composite's answer from the parts' outcomes (nil: not done; in time when the run `timedOut`, else not
    /// waited for once a failed required part decided the answer).
    private func answer(_ results: [CompositeRun.Outcome?], timedOut: Bool,
                        _ context: RequestContext) throws(GatewayError) -> HTTPResponse {
        var failed: [(key: String, error: GatewayError)] = []
        var firstRequired: GatewayError?
        for (part, result) in zip(parts, results) {
            let error: GatewayError
            switch result {
            case .body?: continue
            case .failed(let thrown)?: error = thrown
            case nil where !timedOut: continue
            case nil: error = .upstreamTimeout("part \(part.key) of composite \(name) not done within \(Int(timeoutSeconds * 1000)) ms")
            }
            failed.append((part.key, error))
            if part.required && firstRequired == nil {
                firstRequired = error  // logged by the edge, which renders it
            } else {
                log.error(error, context: context)
            }
        }
        if !failed.isEmpty { context.trace?.failedParts = failed.map { ($0.key, $0.error.status) } }
        if let firstRequired { throw firstRequired }
        var out: [UInt8] = [UInt8(ascii: "{")]
        for (i, (part, result)) in zip(parts, results).enumerated() {
            if i > 0 { out.append(UInt8(ascii: ",")) }
            JSONValue.writeString(part.key, into: &out)
            out.append(UInt8(ascii: ":"))
            if case .body(let body)? = result { out += body } else { out += Array("null".utf8) }
        }
        if !failed.isEmpty {
            out += Array(#","errors":"#.utf8)
            JSONValue.object(failed.map { failure in
                (failure.key, .object([("status", .int(Int64(failure.error.status))),
                                       ("code", .string(failure.error.code.rawValue)),
                                       ("error", .string(failure.error.message))]))
            }).write(into: &out)
        }
        out.append(UInt8(ascii: "}"))
        return .json(200, Data(out), headers: ["X-Postern-Complete": failed.isEmpty ? "true" : "false"])
    }
}
