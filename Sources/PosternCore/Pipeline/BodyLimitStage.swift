import FoundationEssentials
import PosternHTTP

/// Refuses bodies above the configured limit with a JSON 413 (the server's own ceiling sits above it).
struct BodyLimitStage: Sendable {
    /// The largest accepted body in bytes.
    let maxBytes: Int

    /// Creates the stage.
    init(maxBytes: Int) { self.maxBytes = maxBytes }

    /// Throws 413 for a body above the limit.
    func check(_ request: HTTPRequest) throws(GatewayError) {
        guard request.body.count <= maxBytes else { throw .payloadTooLarge(maxBytes) }
    }
}
