import FoundationEssentials
import PosternIO

/// The transport over the event loops: each loop sends through its own keep-alive pool.
package final class LoopTransport: UpstreamTransport, @unchecked Sendable {
    /// Each loop with its pool (a few: found by identity faster than by hashing).
    private let clients: [(loop: EventLoop, client: UpstreamHTTPClient)]
    /// Each loop of `clients`, by identity (compared without retaining a loop).
    private let loopIDs: [ObjectIdentifier]
    private let fallback: (EventLoop, UpstreamHTTPClient)

    /// One pool per loop of `group` (its responses carry only the headers named in `keptHeaders`, every one when
    /// nil), each with at most `maxConnections` connections and `maxWaiting` calls waiting for one; connections idle longer than `keepaliveIdle` seconds are not reused; up to `pipelineDepth`
    /// GETs of one turn share a connection; answer bodies above `maxResponseBytes` fail.
    package init(group: EventLoopGroup, endpoint: UpstreamEndpoint, maxConnections: Int, tls: TLSClientContext? = nil,
                maxWaiting: Int = 1024, keepaliveIdle: Double = 4.0, pipelineDepth: Int = 1,
                maxResponseBytes: Int = UpstreamHTTPClient.defaultMaxResponseBytes, keptHeaders: [StaticString]? = nil) {
        clients = group.loops.map { loop in
            (loop, UpstreamHTTPClient(loop: loop, endpoint: endpoint, maxConnections: maxConnections,
                                      tls: tls, maxWaiting: maxWaiting, keepaliveIdle: keepaliveIdle,
                                      pipelineDepth: pipelineDepth, maxResponseBytes: maxResponseBytes,
                                      keptHeaders: keptHeaders))
        }
        loopIDs = clients.map { ObjectIdentifier($0.loop) }
        fallback = clients[0]
    }

    /// Sends on the current loop's pool, or hops to the first loop when called from elsewhere.
    package func send(_ request: UpstreamRequest, timeout: Double) async throws(UpstreamFailure) -> UpstreamResponse {
        if let loop = EventLoop.currentID, let index = loopIDs.firstIndex(of: loop) {
            return try await clients[index].client.send(request, timeout: timeout)
        }
        return try await sendFromElsewhere(request, timeout: timeout)
    }

    /// True when called on one of the loops: `start` can send from here.
    package var onALoop: Bool {
        guard let loop = EventLoop.currentID else { return false }
        return loopIDs.contains(loop)
    }

    /// `send` with a completion instead of a suspension, on the current loop's pool (`UpstreamHTTPClient.start`):
    /// `completion` gets the outcome on this loop's thread, exactly once, never before this returns. Call on one of
    /// the loops only (`onALoop`); elsewhere the call fails with `.unreachable` (through the completion, on the
    /// first loop).
    package func start(_ request: UpstreamRequest, timeout: Double, completion: @escaping UpstreamCompletion) {
        guard let loop = EventLoop.currentID, let index = loopIDs.firstIndex(of: loop) else {
            let done = UncheckedSendable(completion)
            fallback.0.execute { done.value(.failure(.unreachable("not called on an event loop"))) }
            return
        }
        clients[index].client.start(request, timeout: timeout, completion: completion)
    }

    /// `send` off the loops: a task on the first loop sends it. Apart, so that `send`'s own frame stays small (the
    /// task's closure and its result are not allocated on the loops' path).
    @inline(never)
    private func sendFromElsewhere(_ request: UpstreamRequest, timeout: Double) async throws(UpstreamFailure) -> UpstreamResponse {
        let (loop, client) = fallback
        let result = await Task(executorPreference: loop) { () -> Result<UpstreamResponse, UpstreamFailure> in
            do throws(UpstreamFailure) {
                return .success(try await client.send(request, timeout: timeout))
            } catch {
                return .failure(error)
            }
        }.value
        return try result.get()
    }
}
