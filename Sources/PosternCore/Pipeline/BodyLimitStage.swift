import FoundationEssentials
import PosternHTTP

/// Refuses bodies above the configured limit with a JSON 413 (the server's own ceiling sits above it).
package struct BodyLimitStage: Sendable {
    /// The largest accepted body in bytes.
    package let maxBytes: Int

    /// Creates the stage.
    package init(maxBytes: Int) { self.maxBytes = maxBytes }

    /// Throws 413 for a body above the limit.
    func check(_ request: HTTPRequest) throws(GatewayError) {
        guard request.body.count <= maxBytes else { throw .payloadTooLarge(maxBytes) }
    }
}
