import Foundation

/// What the stages learn about a request that the access log needs afterwards (upstream time, user),
/// carried as a task local because the transport and the stages only see their own values.
final class RequestTrace: @unchecked Sendable {
    private let lock = NSLock()
    private var upstream: Double = 0
    private var user: String?

    /// The trace of the request being handled.
    @TaskLocal static var current: RequestTrace?

    /// Adds time spent in an upstream call.
    func addUpstream(_ seconds: Double) { lock.withLock { upstream += seconds } }
    /// Time spent in upstream calls.
    var upstreamSeconds: Double { lock.withLock { upstream } }
    /// The authenticated user id, once known.
    var userID: String? {
        get { lock.withLock { user } }
        set { lock.withLock { user = newValue } }
    }
}
