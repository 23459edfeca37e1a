import PosternHTTP
import PosternIO

/// The rest of an uncached list or read that goes on without a task (`Gateway.handleImmediately`): the request at
/// its upstream read, as the server's `LaterWork`. One object for the whole rest: the server starts it, the
/// endpoint's read (`Endpoint.Read.start`) calls it back with the outcome (where a closure for each hand-over
/// allocated its context, and copied what it captured).
final class LaterFetch: LaterWork, @unchecked Sendable {  // loop thread only, one request's
    /// The request.
    private let request: HTTPRequest
    /// The request at its upstream read (`RequestStep.Next.fetch`).
    private let step: RequestStep
    /// The edge that finishes the answer.
    private let edge: EdgeStages
    /// Where the answer goes, once started.
    private var answer: LaterAnswer?

    /// The rest of `request` from `step`, finished by `edge`.
    init(_ request: HTTPRequest, _ step: RequestStep, _ edge: EdgeStages) {
        self.request = request
        self.step = step
        self.edge = edge
    }

    /// Starts the upstream read now; its outcome comes to `finished`. When the read cannot start here
    /// (`Endpoint.Read.start`), the rest runs in a task of the loop, as `Gateway.handle` runs it.
    func start(_ answer: LaterAnswer) {
        self.answer = answer
        if case .fetch(let read) = step.next, let start = step.endpoint.startFetch, start(step.context, read, self) {
            return
        }
        Task(executorPreference: EventLoop.current) { [request, step, edge] in
            answer(await edge.respond(to: request, step))
        }
    }

    /// The outcome of the read `start` started, on the loop thread: the edge finishes it (`EdgeStages.finished`:
    /// headers, metrics, the access line) and it is given as the answer. Once.
    func finished(_ outcome: Result<HTTPResponse, GatewayError>) {
        // Not nil: `start` set it before the read started.
        answer!(edge.finished(outcome, request, step.context))
    }
}
