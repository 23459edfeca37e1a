import FoundationEssentials
import PosternIO

/// Sends one request to the upstream and returns its answer: what an upstream client (the gateway's `DirectusClient`)
/// sends through — the loops' pools (`LoopTransport`) or, in tests, an in-process handler or a double.
package protocol UpstreamTransport: Sendable {
    /// Sends `request`, failing with a transport failure after `timeout` seconds at most.
    func send(_ request: UpstreamRequest, timeout: Double) async throws(UpstreamFailure) -> UpstreamResponse
}
