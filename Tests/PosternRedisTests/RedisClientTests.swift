import Foundation
import Synchronization
import Testing
@testable import PosternRedis
import PosternIO
import PosternTesting

/// The Redis client against a real redis-server (Support/RedisServer.swift): replies, scripts, login, concurrency,
/// outages and pub/sub. Deadlines here are hang detectors only, never timing assertions.
@Suite struct RedisClientTests {
    @Test func repliesOfEveryKindThroughARealServer() async throws {
        let server = try RedisServer()
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let client = RedisClient(loop: group.loops[0], endpoint: try RedisEndpoint(url: server.url()))
        defer { client.close() }
        try await withinHangDeadline { () async throws in
            try await client.onLoop { () async throws(RedisError) in
                #expect(try await client.command(["SET", "greeting", "hello"]) == .status("OK"))
                #expect(try await client.command(["GET", "greeting"]) == .bulk(Array("hello".utf8)))
                // Binary-safe keys and values: every byte value, CR LF and NUL included.
                let binary: [UInt8] = Array(0...255) + [13, 10, 0, 13, 10]
                let binaryKey: [UInt8] = [0, 255, 13, 10, 32]
                #expect(try await client.command(["SET", .bytes(binaryKey), .bytes(binary)]) == .status("OK"))
                #expect(try await client.command(["GET", .bytes(binaryKey)]) == .bulk(binary))
                #expect(try await client.command(["SET", "empty", .bytes([])]) == .status("OK"))
                #expect(try await client.command(["GET", "empty"]) == .bulk([]))
                #expect(try await client.command(["GET", "missing"]) == .null)
                #expect(try await client.command(["INCRBY", "counter", 41]) == .integer(41))
                #expect(try await client.command(["INCR", "counter"]).integer == 42)
                #expect(try await client.command(["RPUSH", "list", "a", "b", "c"]) == .integer(3))
                #expect(try await client.command(["LRANGE", "list", 0, -1]) == .array([.bulk([97]), .bulk([98]), .bulk([99])]))
                #expect(try await client.command(["MGET", "greeting", "missing"]) == .array([.bulk(Array("hello".utf8)), .null]))
                #expect(try await client.command(["PING"]) == .status("PONG"))
            }
            // Error replies are thrown with Redis's message, and the connection goes on working.
            let wrongType = await outcome(client) { try await client.command(["LPUSH", "greeting", "x"]) }
            guard case .failure(.server(let message)) = wrongType else {
                Issue.record("expected a server error, got \(wrongType)")
                return
            }
            #expect(message.hasPrefix("WRONGTYPE"))
            let unknown = await outcome(client) { try await client.command(["NOSUCHCOMMAND", "x"]) }
            #expect(unknown.failure.map { if case .server(let m) = $0 { m.hasPrefix("ERR unknown command") } else { false } } == true)
            let empty = await outcome(client) { try await client.command([]) }
            #expect(empty.failure == .invalidCommand("no arguments"))
            #expect(try await client.command(["GET", "greeting"]).string == "hello")
        }
    }

    @Test func scriptsRunByDigestAndAreReloadedAfterAFlush() async throws {
        let server = try RedisServer()
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let client = RedisClient(loop: group.loops[0], endpoint: try RedisEndpoint(url: server.url()))
        defer { client.close() }
        #expect(RedisScript("return 1").sha1 == "e0e1f9fabfc9d4800c877a703b823ac0578ff8db")
        let script = RedisScript("return {KEYS[1], ARGV[1], tonumber(ARGV[2]) + 1, redis.call('INCR', KEYS[1])}")
        try await withinHangDeadline { () async throws in
            func run() async throws(RedisError) -> RedisReply {
                try await client.evaluate(script, keys: ["runs"], arguments: ["x", 41])
            }
            // First run: NOSCRIPT, then EVAL, which leaves the script cached in Redis.
            #expect(try await run() == .array([.bulk(Array("runs".utf8)), .bulk([120]), .integer(42), .integer(1)]))
            #expect(try await client.command(["SCRIPT", "EXISTS", .string(script.sha1)]) == .array([.integer(1)]))
            #expect(try await run().array?.last == .integer(2))
            // Redis lost its scripts (as after a restart): NOSCRIPT again, and EVAL again.
            #expect(try await client.command(["SCRIPT", "FLUSH"]) == .status("OK"))
            #expect(try await run().array?.last == .integer(3))
            let stats = try await client.command(["INFO", "commandstats"]).string ?? ""
            #expect(stats.contains("cmdstat_eval:calls=2,"))  // 3 runs, the middle one by digest alone
            // An error code saying Redis cannot serve now is "unavailable", whoever raised it.
            let loading = await outcome(client) { try await client.evaluate(RedisScript("return redis.error_reply('LOADING not yet')")) }
            #expect(loading.failure?.isUnavailable == true, "\(loading)")
            let failing = RedisScript("return redis.error_reply('boom')")
            let result = await outcome(client) { try await client.evaluate(failing) }
            #expect(result.failure.map { if case .server(let message) = $0 { message.hasSuffix("boom") } else { false } } == true,
                    "\(result)")
        }
    }

    @Test func logsInAndSelectsTheDatabaseFromTheURL() async throws {
        let password = "s3cret:@/pw"
        let server = try RedisServer(password: password)
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let loop = group.loops[0]
        let db3 = RedisClient(loop: loop, endpoint: try RedisEndpoint(url: server.url(database: 3)))
        let db0 = RedisClient(loop: loop, endpoint: try RedisEndpoint(url: server.url(database: 0)))
        let wrong = RedisClient(loop: loop, endpoint: try RedisEndpoint(url: server.url(password: "not-the-password")))
        defer { db3.close(); db0.close(); wrong.close() }
        #expect(db3.endpoint.password == password)
        try await withinHangDeadline { () async throws in
            #expect(try await db3.command(["SET", "where", "three"]) == .status("OK"))
            #expect(try await db0.command(["GET", "where"]) == .null)
            #expect(try await db3.command(["GET", "where"]).string == "three")
            #expect(db3.isConnected && db0.isConnected)
            // A refused login: the command fails as unavailable, says why, and never shows the password.
            let refused = await outcome(wrong) { try await wrong.command(["GET", "where"]) }
            guard case .failure(let error) = refused else {
                Issue.record("a wrong password was accepted")
                return
            }
            #expect(error.isUnavailable)
            #expect(error.description.contains("AUTH"))
            #expect(!error.description.contains("not-the-password") && !error.description.contains(password))
            #expect(!wrong.isConnected)
            // No password while Redis wants one: Redis cannot serve this client (→ 503), not a wrong command.
            let anonymous = RedisClient(loop: loop, endpoint: RedisEndpoint(host: "127.0.0.1", port: server.port))
            defer { anonymous.close() }
            let noAuth = await outcome(anonymous) { try await anonymous.command(["GET", "where"]) }
            guard case .failure(.unavailable(let why)) = noAuth else {
                Issue.record("expected unavailable, got \(noAuth)")
                return
            }
            #expect(why.contains("NOAUTH"))
        }
    }

    @Test func resolvesAHostNameOnTheLoopAndFailsFastForAnUnknownOne() async throws {
        let server = try RedisServer()
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let named = RedisClient(loop: group.loops[0], endpoint: try RedisEndpoint(url: "redis://localhost:\(server.port)"))
        let unknown = RedisClient(loop: group.loops[0], endpoint: try RedisEndpoint(url: "redis://no-such-host.invalid:\(server.port)"))
        defer { named.close(); unknown.close() }
        try await withinHangDeadline { () async throws in
            try await eventually("connected") { named.isConnected }
            #expect(try await named.command(["PING"]) == .status("PONG"))
            let result = await outcome(unknown) { try await unknown.command(["PING"]) }
            guard case .failure(.unavailable) = result else {
                Issue.record("expected unavailable, got \(result)")
                return
            }
            #expect(!unknown.isConnected)
        }
    }

    @Test func manyCommandsFromSeveralLoopsAtOnce() async throws {
        let server = try RedisServer()
        let group = EventLoopGroup(count: 3)
        defer { group.shutdown() }
        let redis = RedisClientGroup(group: group, endpoint: try RedisEndpoint(url: server.url()))
        defer { redis.close() }
        let perLoop = 100
        let offLoop = 20
        try await withinHangDeadline { () async throws in
            try await withThrowingTaskGroup(of: Void.self) { tasks in
                for (index, loop) in group.loops.enumerated() {
                    for i in 0..<perLoop {
                        tasks.addTask(executorPreference: loop) {
                            #expect(redis.client === redis.clients[index])  // this loop's own connection
                            let key = RedisArgument.string("key:\(index):\(i)")
                            let value = RedisArgument.bytes(Array("value \(index) \(i)".utf8) + [0, UInt8(i)])
                            _ = try await redis.command(["INCR", "total"])
                            #expect(try await redis.command(["SET", key, value]) == .status("OK"))
                            #expect(try await redis.command(["GET", key]) == .bulk(Array("value \(index) \(i)".utf8) + [0, UInt8(i)]))
                        }
                    }
                }
                for _ in 0..<offLoop {
                    tasks.addTask {  // off every loop: the call hops to the first loop
                        _ = try await redis.command(["INCR", "total"])
                    }
                }
                try await tasks.waitForAll()
            }
            #expect(try await redis.command(["GET", "total"]).integer == Int64(group.loops.count * perLoop + offLoop))
            #expect(redis.isConnected)
            let clients = try await redis.command(["INFO", "clients"]).string ?? ""
            #expect(clients.contains("connected_clients:3\r\n"))  // one connection per loop, no more
        }
    }

    @Test func failsFastWhileRedisIsDownAndServesAgainOnceItIsBack() async throws {
        let server = try RedisServer()
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let client = RedisClient(loop: group.loops[0], endpoint: try RedisEndpoint(url: server.url()),
                                 options: RedisOptions(commandTimeout: 30))
        defer { client.close() }
        try await withinHangDeadline { () async throws in
            #expect(try await client.command(["SET", "before", "1"]) == .status("OK"))
            #expect(client.isConnected)
            server.stop()
            // Every command fails with an "unavailable" error (→ 503), none hangs until the 30 s command timeout.
            for _ in 0..<20 {
                let result = await outcome(client) { try await client.command(["GET", "before"]) }
                #expect(result.failure?.isUnavailable == true, "\(result)")
                #expect(!client.isConnected)
            }
            try server.restart()
            try await eventually("connected") { client.isConnected }
            #expect(client.isConnected)
            #expect(try await client.command(["SET", "after", "2"]) == .status("OK"))
            #expect(try await client.command(["GET", "after"]).string == "2")
            #expect(client.readyTransitions == 2)
            expectNoLiveCalls(client)
        }
    }

    @Test func unreachableFromTheStartFailsFastAndConnectsWhenRedisComesUp() async throws {
        let server = try RedisServer()
        server.stop()
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let client = RedisClient(loop: group.loops[0], endpoint: try RedisEndpoint(url: server.url()))
        defer { client.close() }
        try await withinHangDeadline { () async throws in
            let result = await outcome(client) { try await client.command(["PING"]) }
            guard case .failure(.unavailable(let why)) = result else {
                Issue.record("expected unavailable, got \(result)")
                return
            }
            #expect(why.contains("127.0.0.1:\(server.port)"))
            #expect(!client.isConnected)
            try server.restart()
            try await eventually("connected") { client.isConnected }
            #expect(try await client.command(["PING"]) == .status("PONG"))
        }
    }

    @Test func aFrozenRedisTimesCommandsOutAndTheClientRecovers() async throws {
        let server = try RedisServer()
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let client = RedisClient(loop: group.loops[0], endpoint: try RedisEndpoint(url: server.url()),
                                 options: RedisOptions(connectTimeout: 1, commandTimeout: 1))
        defer { client.close() }
        try await withinHangDeadline { () async throws in
            #expect(try await client.command(["SET", "k", "v"]) == .status("OK"))
            server.pause()
            let frozen = await outcome(client) { try await client.command(["GET", "k"]) }
            server.resume()
            #expect(frozen.failure == .timeout)
            try await eventually("connected") { client.isConnected }
            #expect(try await client.command(["GET", "k"]).string == "v")
            expectNoLiveCalls(client)
        }
        server.resume()
    }

    @Test func everyPendingCommandCompletesOnceWhenTheConnectionDrops() async throws {
        let server = try RedisServer()
        let group = EventLoopGroup(count: 2)
        defer { group.shutdown() }
        let endpoint = try RedisEndpoint(url: server.url())
        let client = RedisClient(loop: group.loops[0], endpoint: endpoint, options: RedisOptions(commandTimeout: 60))
        let observer = RedisClient(loop: group.loops[1], endpoint: endpoint)
        defer { client.close(); observer.close() }
        let count = 50
        let sent = Counter()
        let results = try await withinHangDeadline { () async throws in
            try await client.onLoop { () async throws(RedisError) -> [Result<RedisReply, RedisError>] in
                await withTaskGroup(of: Result<RedisReply, RedisError>.self) { tasks in
                    for _ in 0..<count {
                        tasks.addTask(executorPreference: client.loop) {
                            sent.increment()  // the command is handed to hiredis in this same job (no hop)
                            return await caught { try await client.command(["BLPOP", "never", 0]) }
                        }
                    }
                    while sent.value < count { await Task.yield() }
                    // The first BLPOP blocks in Redis; the other 49 wait behind it.
                    _ = try? await eventually("the first BLPOP blocks in Redis", timeout: 60) {
                        (try? await observer.command(["INFO", "clients"]).string)?.contains("blocked_clients:1\r\n") ?? false
                    }
                    server.stop()
                    var all: [Result<RedisReply, RedisError>] = []
                    for await result in tasks { all.append(result) }
                    return all
                }
            }
        }
        #expect(results.count == count)
        #expect(results.allSatisfy { $0.failure == .connectionLost })
        expectNoLiveCalls(client)  // every retained call was released
    }

    @Test func closingFailsPendingAndLaterCommandsWithClosed() async throws {
        let server = try RedisServer()
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        let client = RedisClient(loop: group.loops[0], endpoint: try RedisEndpoint(url: server.url()),
                                 options: RedisOptions(commandTimeout: 60))
        let sent = Counter()
        try await withinHangDeadline { () async throws in
            try await eventually("connected") { client.isConnected }
            let pending = Task(executorPreference: client.loop) { () async -> Result<RedisReply, RedisError> in
                sent.increment()  // the command is handed to hiredis in this same job (no hop: already on the loop)
                return await caught { try await client.command(["BLPOP", "never", 0]) }
            }
            await client.onLoopWhile { sent.value < 1 }
            client.close()
            #expect(await pending.value.failure == .closed)
            #expect(await outcome(client) { try await client.command(["PING"]) }.failure == .closed)
            #expect(!client.isConnected)
        }
    }

    @Test func subscriberGetsMessagesAndResubscribesAfterARestart() async throws {
        let server = try RedisServer()
        let group = EventLoopGroup(count: 2)
        defer { group.shutdown() }
        let endpoint = try RedisEndpoint(url: server.url())
        let (messages, messageSink) = AsyncStream.makeStream(of: [UInt8].self)
        let (notices, noticeSink) = AsyncStream.makeStream(of: Void.self)
        let resubscriptions = Counter()
        let subscriber = RedisSubscriber(loop: group.loops[0], endpoint: endpoint, channel: "postern:test",
                                         onMessage: { messageSink.yield($0) },
                                         onResubscribed: { resubscriptions.increment(); noticeSink.yield() })
        let publisher = RedisClient(loop: group.loops[1], endpoint: endpoint)
        defer { subscriber.close(); publisher.close() }
        try await withinHangDeadline { () async throws in
            var received = messages.makeAsyncIterator()
            var noticed = notices.makeAsyncIterator()
            #expect(await subscriber.waitUntilSubscribed())
            #expect(try await publisher.command(["PUBLISH", "postern:test", "hello"]) == .integer(1))
            #expect(try await publisher.command(["PUBLISH", "other", "not for us"]) == .integer(0))
            #expect(try await publisher.command(["PUBLISH", "postern:test", .bytes([0, 1, 2, 255])]) == .integer(1))
            #expect(await received.next() == Array("hello".utf8))
            #expect(await received.next() == [0, 1, 2, 255])
            #expect(resubscriptions.value == 0)

            server.stop()
            try server.restart()
            await noticed.next()  // the owner is told: messages may have been missed meanwhile
            #expect(subscriber.isSubscribed)
            let fresh = RedisClient(loop: group.loops[1], endpoint: endpoint)
            defer { fresh.close() }
            #expect(try await fresh.command(["PUBLISH", "postern:test", "after the restart"]) == .integer(1))
            #expect(await received.next() == Array("after the restart".utf8))
            #expect(resubscriptions.value == 1)
        }
    }
}

extension RedisClient {
    /// Yields on the client's loop while `condition` holds (jobs queued before it run first).
    func onLoopWhile(_ condition: @escaping @Sendable () -> Bool) async {
        await Task(executorPreference: loop) {
            while condition() { await Task.yield() }
        }.value
    }
}

/// A counter shared between tasks and callbacks.
final class Counter: Sendable {
    private let count = Atomic<Int>(0)
    /// Adds one.
    func increment() { count.add(1, ordering: .relaxed) }
    /// The current count.
    var value: Int { count.load(ordering: .relaxed) }
}

extension Result {
    /// The error of a failure, nil for a success.
    var failure: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}

/// Runs `body` on `client`'s loop and returns how it ended.
func outcome(_ client: RedisClient, _ body: @escaping @Sendable () async throws -> RedisReply) async
    -> Result<RedisReply, RedisError> {
    await Task(executorPreference: client.loop) { () async -> Result<RedisReply, RedisError> in
        do {
            return .success(try await body())
        } catch let error as RedisError {
            return .failure(error)
        } catch {
            Issue.record("not a RedisError: \(error)")
            return .failure(.invalidCommand("\(error)"))
        }
    }.value
}

/// Checks that no `RedisCall` of `client` is alive any more (debug builds count them).
func expectNoLiveCalls(_ client: RedisClient, sourceLocation: SourceLocation = #_sourceLocation) {
    #if DEBUG
    #expect(client.connection.liveCalls.load(ordering: .relaxed) == 0, sourceLocation: sourceLocation)
    #endif
}

/// Runs `body` where it is and returns how it ended.
func caught(_ body: () async throws -> RedisReply) async -> Result<RedisReply, RedisError> {
    do {
        return .success(try await body())
    } catch let error as RedisError {
        return .failure(error)
    } catch {
        Issue.record("not a RedisError: \(error)")
        return .failure(.invalidCommand("\(error)"))
    }
}

/// Thrown when a body did not finish before its hang deadline.
struct HangDetected: Error, CustomStringConvertible {
    let seconds: Double
    var description: String { "no result after \(seconds) s: hang" }
}

/// Runs `body` and fails (instead of hanging the test run) if it has not finished after `seconds` — a hang
/// detector, far above any expected duration; never a timing assertion.
func withinHangDeadline<T: Sendable>(_ seconds: Double = 60, _ body: @escaping @Sendable () async throws -> T)
    async throws -> T {
    let first = FirstResult<T>()
    let work = Work(body)
    return try await withCheckedThrowingContinuation { continuation in
        first.set(continuation)
        let timer = Task {
            try? await Task.sleep(for: .seconds(seconds))
            if !Task.isCancelled { first.finish(.failure(HangDetected(seconds: seconds))) }
        }
        Task {
            // `run` lets go of the body (and what it captured, such as a RedisServer) before the caller resumes.
            let result: Result<T, Error>
            do { result = .success(try await work.run()) } catch { result = .failure(error) }
            timer.cancel()
            first.finish(result)
        }
    }
}

/// A body run once, released as soon as it returns.
private final class Work<T: Sendable>: @unchecked Sendable {
    private var body: (@Sendable () async throws -> T)?

    init(_ body: @escaping @Sendable () async throws -> T) { self.body = body }

    func run() async throws -> T {
        // Set in init and taken only here, once.
        let body = self.body!
        self.body = nil
        return try await body()
    }
}

/// Resumes a continuation with the first result only.
private final class FirstResult<T: Sendable>: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<T, Error>?

    func set(_ continuation: CheckedContinuation<T, Error>) {
        lock.withLock { self.continuation = continuation }
    }

    @discardableResult
    func finish(_ result: Result<T, Error>) -> Bool {
        let taken = lock.withLock { () -> CheckedContinuation<T, Error>? in
            defer { continuation = nil }
            return continuation
        }
        taken?.resume(with: result)
        return taken != nil
    }
}
