import PosternIO

/// The runner tasks of one worker, made for the server's handler type: each whole request is offered to the
/// handler's `handleImmediately` first, then to a runner task, which calls the rest of the answer the immediate
/// step prepared (`PreparedAnswer`), else the handler's `handle`. Loop thread only. Nothing here depends on the
/// handler's type but the two calls (this code is not specialised for the gateway across the module boundary).
///
/// Handlers run in long-lived tasks, one request after another: a task's allocator keeps the slabs its
/// async frames needed, so a reused task allocates nothing for them, where a new task per request
/// mallocs a dozen slabs and the task itself (docs/architecture.md, One request's path).
final class RunnerPool<Handler: HTTPRequestHandler>: EndOfTurnWork, @unchecked Sendable {
    private let handler: Handler
    /// The worker whose requests these runners answer (held: a runner may outlive `free`).
    private let worker: ServerWorker
    /// Requests with a runner task now: at most `limits.maxHandling`; the rest wait in `pending`.
    private var handling = 0
    /// Requests waiting for a runner, first come first served from `pendingHead`; a taken slot is emptied at
    /// once, so that no request stays referenced here (its connection reuses the buffers).
    private var pending: [RunnerJob?] = []
    private var pendingHead = 0
    /// Runner tasks waiting for a request; resumed with nil when the worker is freed.
    private var idleRunners: [UnsafeContinuation<RunnerJob?, Never>] = []
    /// Idle runner tasks kept at most (each keeps the few KiB of slabs its handler's frames need).
    private static var maxIdleRunners: Int { 256 }

    private init(_ handler: Handler, _ worker: ServerWorker) {
        self.handler = handler
        self.worker = worker
    }

    /// Makes `worker`'s runners for `handler`. Called in the server's generic init, so that the closures (and the
    /// code they call) are specialised for the handler's type.
    static func attach(_ handler: Handler, to worker: ServerWorker) {
        let pool = RunnerPool(handler, worker)
        worker.attach(accept: { pool.accept($0, $1) }, answered: { pool.answered($0, $1) }, stop: { pool.stop() })
    }

    /// Answers a whole request: at once when the handler's `handleImmediately` can (no task resumed, no job
    /// queued), else through a runner, given what the immediate step prepared.
    ///
    /// The request waits in `pending` until the end of this loop turn's jobs: a runner that finishes its
    /// answer meanwhile takes it there and goes on without suspending (no continuation resumed, no job queued,
    /// no executor hops). What is left at the end of the turn goes to idle runners, or to new ones, up to
    /// `limits.maxHandling` requests at once; beyond that it waits in `pending` for the next runner that answers.
    func accept(_ request: HTTPRequest, _ conn: HTTPConnection) {
        var rest: PreparedAnswer?
        if let response = handler.handleImmediately(request, rest: &rest) {
            // Answered before this returns: nothing is in flight meanwhile (a shutdown cannot see it).
            conn.finish(response)
            return
        }
        worker.began()
        if case .later(let work)? = rest, handling < worker.limits.maxHandling {
            handling += 1
            work.start(LaterAnswer(worker, conn))
            return
        }
        // With requests waiting already, every runner is busy (`dispatchPending` stops only at the cap) and the
        // next to answer takes the oldest: no hook needed.
        if pendingHead == pending.count { worker.loop.atEndOfTurn(self) }
        pending.append(RunnerJob(request: request, conn: conn, rest: rest))
    }

    /// The oldest waiting request, if any.
    private func takePending() -> RunnerJob? {
        guard pendingHead < pending.count else { return nil }
        let job = pending[pendingHead].take()
        pendingHead += 1
        if pendingHead == pending.count {
            pending.removeAll(keepingCapacity: true)
            pendingHead = 0
        } else if pendingHead >= 1024 && pendingHead * 2 >= pending.count {
            // A queue that never empties (more clients than `maxHandling`, for a while): the taken slots go, so
            // that it does not grow with every request (amortised O(1): at most once per `pendingHead` taken).
            pending.removeFirst(pendingHead)
            pendingHead = 0
        }
        return job
    }

    /// The end-of-turn hook of `accept` (the loop holds the pool until it runs): `dispatchPending`.
    func endOfTurn(_ task: Int) {
        dispatchPending()
    }

    /// The requests no finishing runner took go to idle runners, or new ones, while fewer than `limits.maxHandling`
    /// are being handled.
    private func dispatchPending() {
        // Nothing is pending once the worker is freed: `stop()` drops what no runner took.
        while handling < worker.limits.maxHandling, let job = takePending() {
            handling += 1
            if let idle = idleRunners.popLast() {
                idle.resume(returning: job)
            } else {
                // Task.immediate runs the handler right here, on the loop thread, up to its first suspension (no
                // hop through the loop's job queue to start it); after a suspension it resumes on its preferred
                // executor, this loop.
                Task.immediate(executorPreference: worker.loop) {
                    await self.run(job)
                }
            }
        }
    }

    /// Writes the answer of a request started without a task (`PreparedAnswer.later`, through `LaterAnswer` and
    /// the worker), on the loop thread; its place goes to the oldest waiting request, if any.
    func answered(_ conn: HTTPConnection, _ response: HTTPResponse) {
        worker.finish(conn, response)
        handling -= 1
        if !worker.freed && pendingHead < pending.count { dispatchPending() }
    }

    /// One runner task: handles `first`, then each request it finds waiting when it has answered (`pending`) or
    /// is handed while it waits idle, until the worker is freed or enough runners are idle already.
    private func run(_ first: RunnerJob) async {
        var job: RunnerJob? = first
        while let current = job {
            let response: HTTPResponse
            switch current.rest {
            case .task(let rest)?:
                response = await rest()
            case .later(let work)?:
                // Waited for a runner (too many requests at once): started here, answered through the continuation.
                response = await withUnsafeContinuation { continuation in work.start(LaterAnswer(continuation)) }
            case nil:
                response = await handler.handle(current.request)
            }
            guard worker.loop.inLoop else {
                // This runner ends here; its slot goes to the oldest waiting request, if any.
                worker.loop.execute {
                    self.worker.finish(current.conn, response)
                    self.handling -= 1
                    if !self.worker.freed { self.dispatchPending() }
                }
                return
            }
            worker.finish(current.conn, response)
            guard !worker.freed else { return }
            // A request that arrived this turn is taken here, without suspending (see `accept`).
            job = nil
            if let next = takePending() {
                job = next
                continue
            }
            handling -= 1
            guard idleRunners.count < RunnerPool.maxIdleRunners else { return }
            // An idle runner holds no request: the connection can reuse that request's header buffer.
            job = await withUnsafeContinuation { idleRunners.append($0) }
        }
    }

    /// The worker is being freed: the requests no runner took are dropped (their connections are closed, nothing
    /// is answered) and the idle runners end.
    func stop() {
        while takePending() != nil { worker.dropped() }
        let idle = idleRunners
        idleRunners.removeAll()
        for runner in idle { runner.resume(returning: nil) }
    }
}

/// A request waiting for a runner task, with the rest of its answer when the immediate step prepared it.
struct RunnerJob: @unchecked Sendable {  // loop thread only: the connection never leaves it
    let request: HTTPRequest
    let conn: HTTPConnection
    /// The rest of the answer `handleImmediately` prepared, if any.
    let rest: PreparedAnswer?
}
