import Foundation
import Testing
@testable import PosternHTTP
import PosternIO
import PosternTesting

/// GETs of one loop turn pipelined on one upstream connection (`directus.pipeline_depth`), through real sockets
/// against a raw-TCP peer that answers each request in order: every call gets its own answer, writes never
/// share a connection, and a failure in the middle of a pipeline costs the calls behind it only a retry.
@Suite(.serialized) struct UpstreamPipelineTests {
    /// Starts one call per request in the same turn of one loop (each runs up to its first suspension right away,
    /// as the gateway's handlers do), with a pool of `depth`; the results in the order of `requests`.
    static func sendInOneTurn(_ peer: ScriptedUpstream, _ requests: [UpstreamRequest], depth: Int,
                              maxConnections: Int = 8, timeouts: [Double]? = nil)
        async -> [Result<UpstreamResponse, UpstreamFailure>] {
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let client = UpstreamHTTPClient(loop: loop, endpoint: UpstreamEndpoint(url: peer.url)!, maxConnections: maxConnections,
                                        keepaliveIdle: 3600, pipelineDepth: depth)
        let results = ResultsBox(count: requests.count)
        let done = DispatchGroup()
        for _ in requests { done.enter() }
        loop.execute {
            for (index, request) in requests.enumerated() {
                Task.immediate(executorPreference: loop) {
                    let result: Result<UpstreamResponse, UpstreamFailure>
                    do throws(UpstreamFailure) {
                        result = .success(try await client.send(request, timeout: timeouts?[index] ?? 5))
                    } catch {
                        result = .failure(error)
                    }
                    results.set(index, result)
                    done.leave()
                }
            }
        }
        _ = done.wait(timeout: .now() + 20)
        return results.all
    }

    /// A GET whose target names it (`/items/posts?call=N`).
    static func get(_ n: Int) -> UpstreamRequest { UpstreamRequest(method: .get, target: "/items/posts?call=\(n)") }

    /// An answer whose body names the request it answers (its target's `call=N`), so that a test can check that
    /// every call got the answer to its own request.
    static func echo(_ request: ScriptedUpstream.Request, extra: String = "") -> String {
        let call = request.text.split(separator: " ").dropFirst().first.flatMap { $0.split(separator: "=").last } ?? "?"
        let body = #"{"call":"\#(call)"}"#
        return "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n\(extra)Content-Length: \(body.utf8.count)\r\n\r\n\(body)"
    }

    static func call(_ result: Result<UpstreamResponse, UpstreamFailure>) -> String? {
        (try? result.get()).map { String(decoding: $0.body, as: UTF8.self) }
    }

    static func expected(_ calls: Range<Int>) -> [String?] { calls.map { #"{"call":"\#($0)"}"# } }

    /// GETs of one turn against a pool of one depth, and the connections they go out on.
    struct Pipelining: Sendable, CustomTestStringConvertible {
        /// The GETs started in one turn.
        let calls: Int
        /// `directus.pipeline_depth`.
        let depth: Int
        /// The connections they need.
        let connections: Int
        /// Why.
        let why: String
        var testDescription: String { "\(calls) GETs, depth \(depth)" }
    }

    @Test(arguments: [
        Pipelining(calls: 6, depth: 8, connections: 1, why: "six GETs of one turn go out on one connection"),
        Pipelining(calls: 5, depth: 2, connections: 3, why: "at most two GETs per connection: 2 + 2 + 1"),
        Pipelining(calls: 3, depth: 1, connections: 3, why: "depth one sends each GET on its own connection"),
    ])
    func getsOfOneTurnShareConnectionsUpToTheDepthAndEachGetsItsOwnAnswer(_ run: Pipelining) async throws {
        let peer = try ScriptedUpstream { [.send(Self.echo($0))] }
        defer { peer.stop() }
        let results = await Self.sendInOneTurn(peer, (0..<run.calls).map(Self.get), depth: run.depth)
        #expect(results.map(Self.call) == Self.expected(0..<run.calls))
        #expect(peer.connections == run.connections, "\(run.why)")
        #expect(peer.requests.count == run.calls)
    }

    @Test func aWriteIsNeverPipelined() async throws {
        let peer = try ScriptedUpstream { [.send(Self.echo($0))] }
        defer { peer.stop() }
        let post = UpstreamRequest(method: .post, target: "/items/posts?call=1", body: Data(#"{"a":1}"#.utf8))
        let results = await Self.sendInOneTurn(peer, [Self.get(0), post, Self.get(2)], depth: 8)
        #expect(results.map(Self.call) == Self.expected(0..<3))
        #expect(peer.connections == 2, "the GETs share a connection, the POST has its own")
        let posts = peer.requests.filter { $0.hasPrefix("POST ") }
        #expect(posts.count == 1 && posts[0].hasSuffix(#"{"a":1}"#))
    }

    @Test func anAnswerThatClosesTheConnectionHasTheGetsBehindItRetriedOnAFreshOne() async throws {
        let peer = try ScriptedUpstream { request in
            request.index == 0 ? [.send(Self.echo(request, extra: "Connection: close\r\n")), .close]
                : [.send(Self.echo(request))]
        }
        defer { peer.stop() }
        let results = await Self.sendInOneTurn(peer, (0..<4).map(Self.get), depth: 8)
        #expect(results.map(Self.call) == Self.expected(0..<4), "no call sees another's answer or a 502")
        #expect(peer.connections >= 2)
        // Calls 1-3 reached the peer once each, on fresh connections (the closed one read only call 0).
        #expect(peer.requests.count == 4)
    }

    @Test func aSlowFirstAnswerTimesOutAloneAndTheGetsBehindItAreRetried() async throws {
        let box = ReleaseBox()
        let peer = try ScriptedUpstream { request in
            request.index == 0 ? [.hold(until: { box.released }, atMost: 10), .send(Self.echo(request))]
                : [.send(Self.echo(request))]
        }
        defer { peer.stop() }
        // Only the first call's deadline passes: the calls behind it lose their connection with time left.
        let results = await Self.sendInOneTurn(peer, (0..<3).map(Self.get), depth: 8, timeouts: [0.5, 5, 5])
        box.release()
        guard case .failure(.timeout) = results[0] else {
            Issue.record("the slow first answer should time out, got \(results[0])")
            return
        }
        #expect(results[1...].map(Self.call) == Array(Self.expected(1..<3)), "retried on a fresh connection in time")
    }

    @Test func callsWhoseDeadlinePassedBehindASlowAnswerTimeOutToo() async throws {
        let box = ReleaseBox()
        let peer = try ScriptedUpstream { request in
            request.index == 0 ? [.hold(until: { box.released }, atMost: 10), .send(Self.echo(request))]
                : [.send(Self.echo(request))]
        }
        defer { peer.stop() }
        let results = await Self.sendInOneTurn(peer, (0..<3).map(Self.get), depth: 8, timeouts: [0.4, 0.4, 0.4])
        // Every call has its result while the slow answer is still held: none waited for it.
        #expect(peer.expiredHolds == 0, "they time out at their deadline, not after the slow answer")
        box.release()
        for result in results {
            guard case .failure(.timeout) = result else {
                Issue.record("every call's deadline passed behind the slow answer: expected a timeout, got \(result)")
                continue
            }
        }
    }

    @Test func aRefusedConnectionFailsEveryPipelinedCallAsUnreachable() async throws {
        let port = try SocketTools.freePort()
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let client = UpstreamHTTPClient(loop: loop, endpoint: UpstreamEndpoint(url: "http://127.0.0.1:\(port)")!,
                                        maxConnections: 4, keepaliveIdle: 3600, pipelineDepth: 8)
        let results = ResultsBox(count: 3)
        let done = DispatchGroup()
        for _ in 0..<3 { done.enter() }
        loop.execute {
            for index in 0..<3 {
                Task.immediate(executorPreference: loop) {
                    do throws(UpstreamFailure) {
                        results.set(index, .success(try await client.send(Self.get(index), timeout: 5)))
                    } catch {
                        results.set(index, .failure(error))
                    }
                    done.leave()
                }
            }
        }
        #expect(done.wait(timeout: .now() + 10) == .success)
        for result in results.all {
            guard case .failure(.unreachable) = result else {
                Issue.record("expected unreachable, got \(result)")
                continue
            }
        }
    }
}

/// Lets a held answer go.
private final class ReleaseBox: @unchecked Sendable {
    private let lock = NSLock()
    private var isReleased = false
    /// True once the test let a held answer go.
    var released: Bool { lock.withLock { isReleased } }
    /// Lets a held answer go.
    func release() { lock.withLock { isReleased = true } }
}

/// Results written by the calls' tasks, read once they are all done.
private final class ResultsBox: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [Result<UpstreamResponse, UpstreamFailure>]

    init(count: Int) { results = Array(repeating: .failure(.unreachable("no result")), count: count) }

    func set(_ index: Int, _ result: Result<UpstreamResponse, UpstreamFailure>) { lock.withLock { results[index] = result } }

    var all: [Result<UpstreamResponse, UpstreamFailure>] { lock.withLock { results } }
}
