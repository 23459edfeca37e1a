import Foundation
import Synchronization
import Testing
@testable import PosternHTTP
import PosternIO
import PosternTesting

/// How the upstream client fails, through real sockets against a raw-TCP peer that misbehaves: a kept connection
/// closed under a request (a GET is retried once on a fresh one, anything else is not sent twice), silence until
/// the deadline, a close instead of an answer, and answers over the body and head ceilings, refused without being
/// read whole. The gateway's answers to each (docs/api.md, Errors) are in PosternCoreTests.
@Suite(.serialized) struct UpstreamFailureWireTests {
    /// Sends `requests` one after another through a one-connection pool to `peer` (so a kept connection is reused
    /// at once), each with `timeout` (or request `i` with `timeouts[i]`); the results in order.
    /// With `viaStart`, through `start` on the loop thread (a completion, no task) instead of `send`.
    static func send(_ peer: ScriptedUpstream, _ requests: [UpstreamRequest], timeout: Double = 5, timeouts: [Double] = [],
                     maxResponseBytes: Int = UpstreamHTTPClient.defaultMaxResponseBytes, viaStart: Bool = false)
        async -> [Result<UpstreamResponse, UpstreamFailure>] {
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let client = UpstreamHTTPClient(loop: loop, endpoint: UpstreamEndpoint(url: peer.url)!, maxConnections: 1,
                                        keepaliveIdle: 3600, maxResponseBytes: maxResponseBytes)
        var results: [Result<UpstreamResponse, UpstreamFailure>] = []
        for (index, request) in requests.enumerated() {
            let timeout = index < timeouts.count ? timeouts[index] : timeout
            if viaStart {
                results.append(await Self.start(request, on: client, timeout: timeout))
                continue
            }
            let result = await Task(executorPreference: loop) { () -> Result<UpstreamResponse, UpstreamFailure> in
                do throws(UpstreamFailure) {
                    return .success(try await client.send(request, timeout: timeout))
                } catch {
                    return .failure(error)
                }
            }.value
            results.append(result)
        }
        return results
    }

    /// `request` through `client.start`, called on the client's loop; the outcome its completion got there.
    static func start(_ request: UpstreamRequest, on client: UpstreamHTTPClient,
                      timeout: Double) async -> Result<UpstreamResponse, UpstreamFailure> {
        await withCheckedContinuation { done in
            client.loop.execute {
                client.start(request, timeout: timeout) { result in
                    #expect(client.loop.inLoop, "completed on the loop thread")
                    done.resume(returning: result)
                }
            }
        }
    }

    static let get = UpstreamRequest(method: .get, target: "/items/posts")
    static let post = UpstreamRequest(method: .post, target: "/auth/login", body: Data(#"{"a":1}"#.utf8))
    static let pong = ScriptedUpstream.answer(#"{"data":"pong"}"#)

    /// A peer that answers the first request on each connection and closes the connection on the next one without
    /// answering it (a race with its keep-alive timeout).
    static func closingOnTheSecondRequest() throws -> ScriptedUpstream {
        try ScriptedUpstream { $0.onConnection == 0 ? [.send(Self.pong)] : [.close] }
    }

    @Test(arguments: [false, true])
    func aGetOnAKeptConnectionClosedUnderItIsRetriedOnceOnAFreshOne(viaStart: Bool) async throws {
        let peer = try Self.closingOnTheSecondRequest()
        defer { peer.stop() }
        let results = await Self.send(peer, [Self.get, Self.get], viaStart: viaStart)
        #expect(results.map { try? $0.get().status } == [200, 200], "\(results)")
        #expect(peer.requests.count == 3, "first call, the call the peer closed under, the retry")
        #expect(peer.connections == 2)
    }

    @Test(arguments: [false, true])
    func aPostOnAKeptConnectionClosedUnderItFailsAsClosedAndIsNotSentAgain(viaStart: Bool) async throws {
        let peer = try Self.closingOnTheSecondRequest()
        defer { peer.stop() }
        let results = await Self.send(peer, [Self.post, Self.post], viaStart: viaStart)
        #expect((try? results[0].get().status) == 200, "\(results[0])")
        guard case .failure(.closed) = results[1] else {
            Issue.record("expected closed, got \(results[1])")
            return
        }
        #expect(peer.requests.count == 2, "a POST is not sent twice")
    }

    @Test(arguments: [HTTPMethod.get, .post])
    func aFreshConnectionClosedWithoutAnAnswerFailsAsClosedWithoutARetry(_ method: HTTPMethod) async throws {
        let peer = try ScriptedUpstream(every: ScriptedUpstream.Misbehaviour.closeAfterRequest)
        defer { peer.stop() }
        let results = await Self.send(peer, [UpstreamRequest(method: method, target: "/items/posts")])
        guard case .failure(.closed) = results[0] else {
            Issue.record("expected closed, got \(results[0])")
            return
        }
        #expect(peer.requests.count == 1, "only a kept connection's close is worth a retry")
    }

    @Test(arguments: [false, true])
    func aSilentPeerTimesOutAndItsStuckConnectionIsNotReused(viaStart: Bool) async throws {
        let peer = try ScriptedUpstream(every: [.silent])
        defer { peer.stop() }
        let results = await Self.send(peer, [Self.get, Self.get], timeout: 0.3, viaStart: viaStart)
        for result in results {
            guard case .failure(.timeout) = result else {
                Issue.record("expected timeout, got \(result)")
                continue
            }
        }
        #expect(peer.connections == 2, "the timed-out connection was dropped, the second call had a fresh one")
        #expect(peer.requests.count == 2)
    }

    /// The timeout event stays armed for an ended call's deadline: a later call on the same connection, with a later
    /// deadline, is neither failed at the earlier one nor left without its own.
    @Test func aKeptConnectionsNextCallTimesOutAtItsOwnDeadlineNotAnEarlierCallsOne() async throws {
        let peer = try ScriptedUpstream { request in
            switch request.onConnection {
            case 0: [.send(Self.pong)]
            case 1: [.wait(0.5), .send(Self.pong)]
            default: [ScriptedUpstream.Step.silent]
            }
        }
        defer { peer.stop() }
        let started = ContinuousClock.now
        // The first call's deadline (0.2 s) passes while the second waits for its slow answer (0.5 s of 3 s); the
        // third's (0.8 s) passes with no answer at all.
        let results = await Self.send(peer, [Self.get, Self.get, Self.get], timeouts: [0.2, 3, 0.8])
        let elapsed = ContinuousClock.now - started
        #expect(results.prefix(2).map { try? $0.get().status } == [200, 200], "\(results)")
        guard case .failure(.timeout) = results[2] else {
            Issue.record("expected timeout, got \(results[2])")
            return
        }
        #expect(peer.connections == 1, "the slow answer came on the kept connection")
        #expect(elapsed >= .milliseconds(1250), "the third call waited for its own deadline: \(elapsed)")
    }

    /// An answer whose body never fits: its head, then `piece` streamed without end (or up to 200 MB).
    struct Flood: Sendable, CustomTestStringConvertible {
        let name: String
        let head: String
        let piece: String
        let total: Int?
        var testDescription: String { name }
    }

    @Test(arguments: [
        Flood(name: "Content-Length over the ceiling", head: "HTTP/1.1 200 OK\r\nContent-Length: 200000000\r\n\r\n",
              piece: String(repeating: "a", count: 65536), total: 200_000_000),
        Flood(name: "endless chunked body", head: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
              piece: "400\r\n" + String(repeating: "b", count: 1024) + "\r\n", total: nil),
    ])
    func aBodyOverTheCeilingIsABadResponseWithoutBeingReadWhole(_ flood: Flood) async throws {
        let peer = try ScriptedUpstream(every: [.send(flood.head), .stream(flood.piece, total: flood.total, bytesPerSecond: nil)])
        defer { peer.stop() }
        let results = await Self.send(peer, [Self.get], maxResponseBytes: 1 << 20)
        guard case .failure(.badResponse) = results[0] else {
            Issue.record("expected badResponse, got \(results[0])")
            return
        }
        // The client hung up at the ceiling: the peer could write only what the sockets' buffers hold past it.
        try await eventually("the client dropped the connection") { peer.streamsDone == 1 }
        #expect(peer.streamed < 64 << 20, "the peer wrote \(peer.streamed) bytes before the client hung up")
    }

    @Test func aHeadOverTheCeilingIsABadResponseAndTheNextCallGoesOnAFreshConnection() async throws {
        let padding = String(repeating: "p", count: UpstreamResponseParser.headCeiling + 6 * 1024)
        let peer = try ScriptedUpstream { request in
            request.index == 0 ? [.send(ScriptedUpstream.answer("{}", headers: ["X-Padding: \(padding)"]))]
                : [.send(Self.pong)]
        }
        defer { peer.stop() }
        let results = await Self.send(peer, [Self.get, Self.get])
        guard case .failure(.badResponse) = results[0] else {
            Issue.record("expected badResponse, got \(results[0])")
            return
        }
        #expect((try? results[1].get().status) == 200, "\(results[1])")
        #expect(peer.connections == 2)
    }

    /// Calls started without a task while every pooled connection is busy wait for one, first come first served,
    /// and are answered in turn; a call whose deadline passes while it waits fails as a timeout, nothing sent.
    @Test func callsStartedOnAFullPoolWaitForAConnectionAndAreAnswered() async throws {
        let peer = try ScriptedUpstream { request in
            request.onConnection == 0 ? [.wait(0.3), .send(Self.pong)] : [.send(Self.pong)]
        }
        defer { peer.stop() }
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let client = UpstreamHTTPClient(loop: loop, endpoint: UpstreamEndpoint(url: peer.url)!, maxConnections: 1,
                                        keepaliveIdle: 3600)
        let results = Mutex<[Int: Result<UpstreamResponse, UpstreamFailure>]>([:])
        await withCheckedContinuation { (done: CheckedContinuation<Void, Never>) in
            loop.execute {
                // Three POSTs in one turn on a one-connection pool: the first takes it, the other two wait; the
                // third's deadline (0.1 s) passes while the first is answered (0.3 s).
                for (index, timeout) in [5.0, 5.0, 0.1].enumerated() {
                    client.start(Self.post, timeout: timeout) { result in
                        #expect(loop.inLoop)
                        let count = results.withLock { all in
                            all[index] = result
                            return all.count
                        }
                        if count == 3 { done.resume() }
                    }
                }
            }
        }
        let all = results.withLock { $0 }
        #expect((try? all[0]?.get().status) == 200 && (try? all[1]?.get().status) == 200, "\(all)")
        guard case .failure(.timeout)? = all[2] else {
            Issue.record("expected the third call to time out waiting, got \(String(describing: all[2]))")
            return
        }
        #expect(peer.requests.count == 2, "the call that timed out waiting was never sent")
    }

    /// A call started without a task keeps its pool alive until its completion has run: nothing else need hold the
    /// pool (a reload's old transport, dropped while its reads are in flight), the answer still arrives, and the
    /// pool goes away afterwards.
    @Test func aStartedCallIsAnsweredWhenNothingElseHoldsThePool() async throws {
        let peer = try ScriptedUpstream { _ in [.wait(0.2), .send(Self.pong)] }
        defer { peer.stop() }
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let result = Mutex<Result<UpstreamResponse, UpstreamFailure>?>(nil)
        let pool = Mutex<Weak?>(nil)
        loop.execute {
            let client = UpstreamHTTPClient(loop: loop, endpoint: UpstreamEndpoint(url: peer.url)!, maxConnections: 1)
            pool.withLock { $0 = Weak(client) }
            client.start(Self.post, timeout: 5) { outcome in result.withLock { $0 = outcome } }
        }
        for _ in 0..<100 where result.withLock({ $0 == nil }) { try await Task.sleep(for: .milliseconds(50)) }
        #expect((try? result.withLock { $0 }?.get().status) == 200)
        // The pool is released once the completion has run (on the loop, at the end of that turn).
        for _ in 0..<40 where pool.withLock({ $0?.object != nil }) { try await Task.sleep(for: .milliseconds(25)) }
        #expect(pool.withLock { $0?.object } == nil, "the pool is not kept alive after its last call")
    }

    /// A weak reference to an object, for a test to see it go.
    final class Weak: @unchecked Sendable {
        weak var object: AnyObject?
        init(_ object: AnyObject) { self.object = object }
    }
}
