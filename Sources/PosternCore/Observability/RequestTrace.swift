import FoundationEssentials

/// What the stages learn about a request that the access log needs afterwards (upstream time, user). It travels
/// one way: in the request's context (`RequestContext.trace`), and in what every upstream call of the request
/// carries (`CallFields.accessTrace`), where `DirectusClient` adds the call's time.
///
/// No lock: a trace belongs to one request, whose task runs one step at a time (on its loop), and the
/// task's suspensions order its steps, so no two threads ever touch a trace at once.
final class RequestTrace: @unchecked Sendable {
    /// Time spent in upstream calls.
    private(set) var upstreamSeconds: Double = 0
    /// The authenticated user id, once known.
    var userID: String?
    /// A composite's parts that failed, in config order, with their statuses (nil for any other request).
    var failedParts: [(key: String, status: Int)]?

    /// Adds time spent in an upstream call.
    func addUpstream(_ seconds: Double) { upstreamSeconds += seconds }
}
