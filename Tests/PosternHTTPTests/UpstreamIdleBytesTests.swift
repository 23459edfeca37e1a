import Foundation
import Testing
@testable import PosternHTTP
import PosternIO
import PosternTesting

/// Bytes an upstream sends on a pooled connection while nothing was asked of it close that connection: they are
/// never read as the next request's answer. In a short turn of the loop no `recv(MSG_PEEK)` checks a connection before
/// it is reused: the read event armed while it idles sees the bytes, and the loop runs it before a request of the same
/// turn goes out (a turn over 1 ms peeks too: `UpstreamConnection.peekAfterTurnMicroseconds`).
extension UpstreamWireTests {
    /// An answer the peer sends that no request asked for: if it ever reached a call, the test would see 666.
    static let unasked = "HTTP/1.1 200 OK\r\nContent-Length: 9\r\n\r\n{\"n\":666}"

    static func answer(_ index: Int) -> String {
        "HTTP/1.1 200 OK\r\nContent-Length: 7\r\n\r\n{\"n\":\(index)}"
    }

    /// A one-connection pool (full with one connection, so it reuses it without waiting for quiet) on `loop`.
    static func fullPool(_ peer: ScriptedUpstream, _ loop: EventLoop) -> UpstreamHTTPClient {
        UpstreamHTTPClient(loop: loop, endpoint: UpstreamEndpoint(url: peer.url)!, maxConnections: 1, keepaliveIdle: 3600)
    }

    @Test func bytesOnAnIdleConnectionCloseItAndTheNextGetGoesOnAFreshOne() async throws {
        let released = TestFlag()
        let peer = try ScriptedUpstream { request in
            request.index == 0 ? [.send(Self.answer(0)), .hold(until: { released.isSet }, atMost: 5), .send(Self.unasked)]
                       : [.send(Self.answer(request.index))]
        }
        defer { peer.stop() }
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let client = Self.fullPool(peer, loop)
        let first = try await Task(executorPreference: loop) { try await client.send(Self.get, timeout: 5) }.value
        #expect(String(decoding: first.body, as: UTF8.self) == #"{"n":0}"#)
        released.set()
        // Nothing is in flight: the bytes close the pooled connection as they arrive.
        try await eventually("loop.runAndWait { client.openConnections } == 0") { loop.runAndWait { client.openConnections } == 0 }
        let second = try await Task(executorPreference: loop) { try await client.send(Self.get, timeout: 5) }.value
        #expect(String(decoding: second.body, as: UTF8.self) == #"{"n":1}"#)
        #expect(peer.connections == 2)
    }

    @Test func bytesAlreadyOnTheSocketWhenATurnStartsCloseTheConnectionBeforeThatTurnsGetTakesIt() async throws {
        let released = TestFlag()
        let unaskedSent = TestFlag()
        let peer = try ScriptedUpstream { request in
            request.index == 0
                ? [.send(Self.answer(0)), .hold(until: { released.isSet }, atMost: 5), .send(Self.unasked),
                   .hold(until: { unaskedSent.set(); return true }, atMost: 1)]
                : [.send(Self.answer(request.index))]
        }
        defer { peer.stop() }
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let client = Self.fullPool(peer, loop)
        let first = try await Task(executorPreference: loop) { try await client.send(Self.get, timeout: 5) }.value
        #expect(String(decoding: first.body, as: UTF8.self) == #"{"n":0}"#)
        // The loop's thread is held while the unasked bytes reach the pooled connection's socket (loopback delivers
        // them within the peer's write); the GET starts from a timer of the next turn, whose epoll_wait finds the
        // socket readable. Its read callback must run first: else the GET would go out on that connection and
        // read the unasked bytes as its answer.
        let timer = TimerBox()
        let second: Result<UpstreamResponse, UpstreamFailure> = await withCheckedContinuation { continuation in
            loop.execute {
                released.set()
                let start = Date()
                while !unaskedSent.isSet && Date().timeIntervalSince(start) < 5 { usleep(1_000) }
                timer.timer = EventLoop.Timer(loop: loop, seconds: 0) {
                    Task(executorPreference: loop) {
                        do throws(UpstreamFailure) {
                            continuation.resume(returning: .success(try await client.send(Self.get, timeout: 5)))
                        } catch {
                            continuation.resume(returning: .failure(error))
                        }
                    }
                }
            }
        }
        #expect(unaskedSent.isSet)
        #expect(Self.text(second) == #"{"n":1}"#)
        #expect(peer.connections == 2)
    }
}

/// A flag set once by one thread and read by others.
private final class TestFlag: @unchecked Sendable {
    private let lock = NSLock()
    private var value = false
    var isSet: Bool { lock.withLock { value } }
    func set() { lock.withLock { value = true } }
}

/// Keeps a loop timer alive until it fires (a timer is cancelled when released).
private final class TimerBox: @unchecked Sendable {
    var timer: EventLoop.Timer?
}
