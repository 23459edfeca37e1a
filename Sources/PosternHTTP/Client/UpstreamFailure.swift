/// How an upstream call failed at the transport level (docs/api.md, Errors).
package enum UpstreamFailure: Error, Sendable, Equatable {
    /// Could not connect (refused, DNS, TLS handshake): → 503.
    case unreachable(String)
    /// No answer within the timeout: → 504.
    case timeout
    /// The connection closed after the request was sent: → 502.
    case closed
    /// The answer was not valid HTTP: → 502.
    case badResponse(String)

    /// The reason of the `unreachable` failure given when too many calls already wait for a pooled connection
    /// (`directus.max_waiting_per_worker`): → 503, and not a sign that Directus is down.
    package static let poolQueueFull = "too many requests waiting for a Directus connection"
}
