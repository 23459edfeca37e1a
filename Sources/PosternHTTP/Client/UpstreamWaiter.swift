import PosternIO

/// What an upstream call's outcome is handed to, on the loop thread: the answer, or why there is none.
package typealias UpstreamCompletion = (Result<UpstreamResponse, UpstreamFailure>) -> Void

/// Who waits for an upstream call's outcome: a task suspended on its continuation (`UpstreamHTTPClient.send`), or a
/// completion (`UpstreamHTTPClient.start`: the gateway's uncached reads, answered without a task). Either one gets
/// the outcome exactly once, and after the connection's own bookkeeping: the task when the loop runs its jobs, the
/// completion at the end of the loop's turn (`UpstreamDelivery`), never inside a libevent callback of the connection.
enum UpstreamWaiter {
    /// A task, resumed with the outcome.
    case task(UnsafeContinuation<Result<UpstreamResponse, UpstreamFailure>, Never>)
    /// A completion, called with the outcome on the loop thread.
    case completion(UpstreamCompletion)
}

/// A completion's outcome on its way from the connection to the pool, which hands it over at the end of the turn
/// (`UpstreamHTTPClient.deliver`): one list per pool, no closure made per answer.
struct UpstreamDelivery {
    /// Who gets the outcome.
    let completion: UpstreamCompletion
    /// The outcome.
    let outcome: Result<UpstreamResponse, UpstreamFailure>
    /// The connection the call was made on, kept alive until the completion has run (it was the call's owner).
    let connection: AnyObject?
    /// The request again, for a GET sent on a reused connection: sent once more on a fresh one when the outcome is
    /// `.closed`, as `send` retries it.
    let retry: UpstreamRequest?
    /// The call's deadline (monotonic nanoseconds), which a retry keeps.
    let deadline: UInt64
}
