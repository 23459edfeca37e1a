import PosternIO

// Redis client on Postern's own sockets, with hiredis 0.14 as the reply parser (docs/api.md, Several instances
// (Redis)).
//
// Threading: a `RedisClient` belongs to one event loop. Its `RedisConnection` holds one nonblocking socket
// (`RedisSocket`, TLS through OpenSSL for `rediss://`) whose events are on that loop's event_base, and every
// socket call, parse and completion happens on that loop's thread. `command` called from a task running on
// the loop (the gateway's handlers) writes at once; called from anywhere else it hops to the loop first.
// Results leave the loop as `RedisReply` values (bytes copied out of hiredis's reply objects).
// `RedisClientGroup` keeps one client per worker loop, so a request on loop N uses loop N's connection, the
// way `LoopTransport` keeps one upstream pool per loop.
//
// Ownership: the public `RedisClient` is a handle; the loop-bound `RedisConnection` does the work. The
// socket's libevent events carry it unretained; the connection closes its socket before it goes away (a
// handle dropped off the loop posts that close to the loop, holding the connection until it ran). Each
// command is a `RedisCall` kept in the connection's in-flight list until its reply (Redis answers in order),
// or until the socket goes away, when every call still waiting completes with the reason. A `RedisCall` also
// ignores a second completion, so a continuation is resumed exactly once.
//
// Failure and reconnection: while the connection is down (waiting for its next attempt, or resolving the
// host name) commands fail at once with `RedisError.unavailable` — no queueing, so the caller can answer 503
// without waiting. During a connect attempt commands queue behind the login (AUTH, SELECT) and fail with the
// attempt if it fails. The connect timeout bounds an attempt (resolve + connect + TLS handshake + login); the
// command timeout bounds the oldest command in flight (one timer, not one per command): past it the socket
// is dropped, since Redis answers in order and every later command waits behind it. After any failure (a
// refused TLS handshake or login included) the connection waits and retries by itself, 50 ms doubling to 2 s
// by default (`RedisOptions`), back to 50 ms once connected. `isConnected` (for /readyz) is true only while
// connected and logged in.
//
// Pub/sub: `RedisSubscriber` is a second connection of the same kind that subscribes to one channel each
// time it becomes ready and tells its owner after every resubscription (messages may have been missed).

/// An asynchronous Redis client on one event loop, reconnecting by itself.
package final class RedisClient: Sendable {
    /// The loop this client's connection lives on.
    package let loop: EventLoop
    /// The loop-bound connection doing the work.
    package let connection: RedisConnection

    /// A client for `endpoint` on `loop`; it starts connecting at once.
    package init(loop: EventLoop, endpoint: RedisEndpoint, options: RedisOptions = RedisOptions()) {
        self.loop = loop
        let connection = RedisConnection(loop: loop, endpoint: endpoint, options: options)
        self.connection = connection
        loop.executeOrRun { connection.start() }
    }

    deinit {
        let connection = self.connection
        loop.executeOrRunIfStopped { connection.close() }
    }

    /// True while connected and logged in (any thread; for /readyz).
    package var isConnected: Bool { connection.isReady }

    /// Waits for how the connection attempt in progress ends (at once when connected): ready, refused by TLS or
    /// the login, or unreachable. `body` runs on the client's loop.
    package func whenAttemptEnds(_ body: @escaping @Sendable (RedisAttemptOutcome) -> Void) {
        let connection = self.connection
        loop.executeOrRunIfStopped { connection.whenAttemptEnds(body) }
    }

    /// The endpoint (its `description` masks the password).
    package var endpoint: RedisEndpoint { connection.endpoint }

    /// Sends one command, e.g. `["SET", .string(key), .bytes(value), "PX", 30000]`, and returns its reply.
    /// An error reply throws `.server`; no connection throws `.unavailable` at once.
    package func command(_ arguments: [RedisArgument]) async throws(RedisError) -> RedisReply {
        guard loop.inLoop else { return try await onLoop { () async throws(RedisError) in try await self.command(arguments) } }
        let connection = self.connection
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<RedisReply, RedisError>, Never>) in
            connection.send(arguments, RedisCall(connection: connection, continuation: continuation))
        }
        return try result.get()
    }

    /// Closes the connection: commands in flight fail with `.closed`, later ones too. Call before the loop stops.
    package func close() {
        let connection = self.connection
        loop.executeOrRunIfStopped { connection.close() }
    }

    /// Runs `body` in a task on this client's loop and returns its result.
    func onLoop<T: Sendable>(_ body: @escaping @Sendable () async throws(RedisError) -> T) async throws(RedisError) -> T {
        let result = await Task(executorPreference: loop) { () async -> Result<T, RedisError> in
            do throws(RedisError) {
                return .success(try await body())
            } catch {
                return .failure(error)
            }
        }.value
        return try result.get()
    }

    /// How many times the connection became ready (for tests: a reconnection increments it).
    var readyTransitions: Int { connection.readyTransitions }
}
