import CEvent
import CHiredis
import Dispatch
import FoundationEssentials
import PosternIO
import Synchronization

/// One hiredis async connection on one loop that keeps itself connected: resolve, connect, AUTH and SELECT,
/// back-off and retry after any failure. A host name's addresses are tried in the order of the resolver's plan
/// (`AddressPlan`): a connect that fails (refused, unreachable, timed out) goes on to the next address at once,
/// and the back-off starts only when none is left. `RedisClient` sends commands through it, `RedisSubscriber` subscribes
/// on it. Design notes (threading, ownership, reconnect) are at the top of RedisClient.swift.
///
/// Not thread-safe by design: every method runs on `loop`'s thread; only the atomics (`isReady`,
/// `readyTransitions`, `liveCalls`) may be read anywhere.
package final class RedisConnection: @unchecked Sendable {
    /// Where the connection is in its life.
    package enum State {
        /// Created, `start()` not yet run.
        case idle
        /// Resolving the host name (`DNSLookup`, off the loop).
        case resolving
        /// TCP connect and login (AUTH/SELECT) in progress; commands are queued in hiredis behind the login.
        case connecting
        /// Connected and logged in.
        case ready
        /// Pausing before the next attempt; commands fail at once.
        case waiting
        /// Closed for good.
        case closed
    }

    /// The loop every call and callback runs on.
    package let loop: EventLoop
    /// Where Redis is and how to log in.
    package let endpoint: RedisEndpoint
    /// Timeouts and reconnection pacing.
    package let options: RedisOptions
    /// Where the connection is in its life.
    package private(set) var state: State = .idle
    /// The live hiredis context; nil between connections. hiredis frees a context itself when the connection
    /// fails or drops; the connection frees it only through `drop(_:)` and clears this pointer first, so that
    /// callbacks of a context being freed can tell it is no longer the current one.
    private var context: UnsafeMutablePointer<redisAsyncContext>?
    /// Counts connection attempts, so that late callbacks of an older attempt are recognised and ignored.
    private var attempt = 0
    private var tcpConnected = false
    private var loginPending = 0
    /// Why the current or last connection failed: the error of the commands hiredis completes without a reply.
    private var failure: RedisError?
    private var backoff: Double
    private var reconnectTimer: EventLoop.Timer?
    private var connectTimer: EventLoop.Timer?
    private var deadlineTimer: EventLoop.Timer?
    /// Commands sent on the current context, oldest first (Redis answers in order); finished ones are dropped
    /// from the front. Only for the command timeout: hiredis owns the callbacks.
    private var inFlight: [RedisCall] = []
    private var inFlightHead = 0
    private var resolving: DNSLookup?
    /// The host name's addresses for this round of attempts (empty for a numeric host), the next one to try, and
    /// the one being connected to.
    private var plan = AddressPlan(addresses: [])
    private var nextAddress = 0
    private var address: ResolvedAddress?
    private let ready = Atomic<Bool>(false)
    private let readyCount = Atomic<Int>(0)
    #if DEBUG
    /// `RedisCall`s of this connection still alive (debug builds: the tests check that none leaks).
    package let liveCalls = Atomic<Int>(0)
    #endif

    private var readyWaiters: [CheckedContinuation<Bool, Never>] = []

    /// Resolves the host name (the process's shared resolver; tests give their own before `start()`).
    package var resolver = HostResolver.shared
    /// Runs on the loop each time the connection becomes ready (after the login).
    package var onReady: (() -> Void)?
    /// Runs on the loop each time a ready or connecting context goes away.
    package var onDown: (() -> Void)?

    /// A connection to `endpoint` on `loop`; nothing happens before `start()`.
    package init(loop: EventLoop, endpoint: RedisEndpoint, options: RedisOptions) {
        self.loop = loop
        self.endpoint = endpoint
        self.options = options
        backoff = options.reconnectMinimum
    }

    /// True while connected and logged in (any thread).
    package var isReady: Bool { ready.load(ordering: .acquiring) }

    /// How many times the connection became ready (any thread; for tests and metrics).
    package var readyTransitions: Int { readyCount.load(ordering: .relaxed) }

    /// Makes the first attempt (loop thread).
    package func start() {
        guard state == .idle else { return }
        connect()
    }

    /// Closes for good: in-flight commands fail with `.closed`, no reconnection (loop thread, or any thread once
    /// the loop has stopped).
    package func close() {
        guard state != .closed else { return }
        state = .closed
        reconnectTimer?.cancel()
        reconnectTimer = nil
        if let resolving {
            self.resolving = nil
            resolving.cancel()
        }
        drop(.closed)
        ready.store(false, ordering: .releasing)
        resumeReadyWaiters(false)
        onReady = nil
        onDown = nil
    }

    /// Resumes `continuation` with true once the connection is ready (at once if it is), false if it closes.
    package func whenReady(_ continuation: CheckedContinuation<Bool, Never>) {
        switch state {
        case .ready: continuation.resume(returning: true)
        case .closed: continuation.resume(returning: false)
        default: readyWaiters.append(continuation)
        }
    }

    private func resumeReadyWaiters(_ value: Bool) {
        let waiters = readyWaiters
        readyWaiters.removeAll()
        for waiter in waiters { waiter.resume(returning: value) }
    }

    // MARK: Commands

    /// Sends `call` (loop thread). It completes exactly once: with the reply, with the reason the connection
    /// failed, or at once with `.unavailable`/`.closed` when there is no connection to send it on.
    package func send(_ arguments: [RedisArgument], _ call: RedisCall) {
        switch state {
        case .ready, .connecting:
            break
        case .closed:
            call.complete(.failure(.closed))
            return
        case .idle, .resolving, .waiting:
            call.complete(.failure(.unavailable(failureText)))
            return
        }
        // One-shot callback: passRetained here, exactly one takeRetainedValue in `replyCallback`, which hiredis
        // runs exactly once per command it accepted (with the reply, or with NULL when the context goes away).
        let privdata = Unmanaged.passRetained(call).toOpaque()
        guard sendRaw(arguments, callback: replyCallback, privdata: privdata) else {
            Unmanaged<RedisCall>.fromOpaque(privdata).release()
            call.complete(.failure(arguments.isEmpty ? .invalidCommand("no arguments") : .unavailable(failureText)))
            return
        }
        call.deadline = DispatchTime.now().uptimeNanoseconds + UInt64(options.commandTimeout * 1e9)
        inFlight.append(call)
        if deadlineTimer == nil { armDeadlineTimer() }
    }

    /// Hands a command to hiredis with `callback`/`privdata` (loop thread); false when hiredis refused it
    /// (no context, closing, or no arguments), in which case the callback will never run.
    package func sendRaw(_ arguments: [RedisArgument], callback: HiredisReplyCallback, privdata: UnsafeMutableRawPointer?) -> Bool {
        guard let context, !arguments.isEmpty else { return false }
        let count = arguments.count
        // All arguments in one buffer, argv and lengths on the stack; hiredis copies the command into its output
        // buffer before returning.
        return withUnsafeTemporaryAllocation(of: Int.self, capacity: count) { lengths -> Bool in
            var buffer: [UInt8] = []
            for (index, argument) in arguments.enumerated() {
                let before = buffer.count
                argument.append(to: &buffer)
                lengths[index] = buffer.count - before
            }
            buffer.append(0)  // never empty, so it has a base address
            return withUnsafeTemporaryAllocation(of: UnsafePointer<CChar>?.self, capacity: count) { argv -> Bool in
                buffer.withUnsafeBufferPointer { bytes -> Bool in
                    // Not empty (a 0 was appended), so baseAddress is not nil.
                    let base = UnsafeRawPointer(bytes.baseAddress!).assumingMemoryBound(to: CChar.self)
                    var offset = 0
                    for index in 0..<count {
                        argv[index] = base + offset
                        offset += lengths[index]
                    }
                    return redisAsyncCommandArgv(context, callback, privdata, Int32(count), argv.baseAddress,
                                                 lengths.baseAddress) == REDIS_OK
                }
            }
        }
    }

    /// Called by `replyCallback` on the loop thread with hiredis's reply (nil: the context went away).
    fileprivate func replied(_ call: RedisCall, _ reply: UnsafeMutablePointer<redisReply>?) {
        if let reply {
            let value = RedisReply(reply)
            if case .error(let message) = value {
                call.complete(.failure(RedisError.fromErrorReply(message)))
            } else {
                call.complete(.success(value))
            }
        } else {
            call.complete(.failure(failure ?? .connectionLost))
        }
        while inFlightHead < inFlight.count && inFlight[inFlightHead].finished { inFlightHead += 1 }
        if inFlightHead == inFlight.count {
            inFlight.removeAll(keepingCapacity: true)
            inFlightHead = 0
        }
    }

    // MARK: Command timeout: one timer for the oldest command in flight

    private func armDeadlineTimer() {
        while inFlightHead < inFlight.count && inFlight[inFlightHead].finished { inFlightHead += 1 }
        guard inFlightHead < inFlight.count else {
            inFlight.removeAll(keepingCapacity: true)
            inFlightHead = 0
            return
        }
        let now = DispatchTime.now().uptimeNanoseconds
        let deadline = inFlight[inFlightHead].deadline
        if deadline <= now {
            // The oldest command is overdue, and every one behind it waits for it: start over.
            drop(.timeout)
            return
        }
        deadlineTimer = EventLoop.Timer(loop: loop, seconds: Double(deadline - now) / 1e9) { [weak self] in
            guard let self else { return }
            deadlineTimer = nil
            armDeadlineTimer()
        }
    }

    // MARK: Connecting

    private var failureText: String {
        if case .unavailable(let why) = failure { return why }
        return state == .waiting ? "reconnecting to \(endpoint.host):\(endpoint.port)"
            : "not connected to \(endpoint.host):\(endpoint.port)"
    }

    private func connect() {
        guard state != .closed else { return }
        startAttempt()
        plan = AddressPlan(addresses: [])
        address = nil
        if RedisConnection.isNumericAddress(endpoint.host) {
            open(address: endpoint.host)
        } else {
            resolve()
        }
    }

    /// Counts a new attempt and arms its connect timeout.
    private func startAttempt() {
        attempt += 1
        failure = nil
        let thisAttempt = attempt
        connectTimer = EventLoop.Timer(loop: loop, seconds: options.connectTimeout) { [weak self] in
            guard let self, attempt == thisAttempt else { return }
            connectTimer = nil
            connectTimedOut()
        }
    }

    private func connectTimedOut() {
        let why = RedisError.unavailable("timed out connecting to \(endpoint.host):\(endpoint.port)")
        switch state {
        case .resolving:
            state = .waiting  // so that the cancelled lookup's answer is ignored
            resolving?.cancel()
            resolving = nil
            failure = why
            ended()
        case .connecting:
            drop(why)
        default:
            break
        }
    }

    private func resolve() {
        state = .resolving
        let attempt = self.attempt
        let request = DNSLookup { [weak self] plan, error in
            self?.resolved(plan, attempt: attempt, error: error)
        }
        resolving = request
        request.start(host: endpoint.host, loop: loop, resolver: resolver)
    }

    /// The resolver's answer for `attempt` (loop thread): the addresses to try, or nil when the name is unknown.
    private func resolved(_ plan: AddressPlan?, attempt: Int, error: String) {
        guard state == .resolving, attempt == self.attempt else { return }
        resolving = nil
        guard let plan, let first = plan.addresses.first else {
            failure = .unavailable("cannot resolve \(endpoint.host): \(error)")
            ended()
            return
        }
        self.plan = plan
        nextAddress = 1
        address = first
        open(address: first.numericText)
    }

    private func open(address: String) {
        state = .connecting  // a connect that fails here (refused at once on loopback) is a failed connect too
        guard let ac = redisAsyncConnect(address, Int32(endpoint.port)) else {
            failure = .unavailable("cannot create a Redis connection (out of memory)")
            ended()
            return
        }
        if ac.pointee.err != 0 {
            failure = .unavailable("\(RedisConnection.errorText(ac)) (\(endpoint.host):\(endpoint.port))")
            redisAsyncFree(ac)  // no events attached, no commands: just frees
            ended()
            return
        }
        // hiredis hands `data` back to the connect/disconnect callbacks. Unretained: this connection frees the
        // context (close/drop) before it goes away, and hiredis frees it only from inside this loop's events.
        ac.pointee.data = Unmanaged.passUnretained(self).toOpaque()
        guard redisLibeventAttach(ac, loop.base) == REDIS_OK else {
            failure = .unavailable("cannot attach the Redis connection to the event loop")
            redisAsyncFree(ac)
            ended()
            return
        }
        _ = redisEnableKeepAlive(&ac.pointee.c)
        redisAsyncSetConnectCallback(ac, connectCallback)
        redisAsyncSetDisconnectCallback(ac, disconnectCallback)
        context = ac
        state = .connecting
        tcpConnected = false
        loginPending = 0
        // The login is pipelined: hiredis writes it first once connected, and commands sent meanwhile queue
        // behind it in order.
        if let password = endpoint.password {
            login(endpoint.username.map { ["AUTH", .string($0), .string(password)] } ?? ["AUTH", .string(password)],
                  what: "AUTH")
        }
        if endpoint.database != 0 {
            login(["SELECT", .integer(endpoint.database)], what: "SELECT \(endpoint.database)")
        }
    }

    private func login(_ arguments: [RedisArgument], what: String) {
        loginPending += 1
        let thisAttempt = attempt
        send(arguments, RedisCall(connection: self) { [weak self] result in
            guard let self, attempt == thisAttempt, state == .connecting else { return }
            switch result {
            case .success:
                loginPending -= 1
                if loginPending == 0 && tcpConnected { becomeReady() }
            case .failure(.server(let message)):
                // Redis refused the login (wrong password, no such database): retry with back-off, and say why.
                drop(.unavailable("Redis refused \(what.hasPrefix("AUTH") ? "AUTH" : what): \(message)"))
            case .failure:
                break  // the context is going away: `ended()` handles it
            }
        })
    }

    /// hiredis's connect callback for the current `ac` (loop thread).
    fileprivate func connected(_ ac: UnsafeMutablePointer<redisAsyncContext>, ok: Bool) {
        guard ac == context else { return }
        guard ok else {
            // hiredis frees the context right after this callback, completing its commands without a reply.
            failure = .unavailable("\(RedisConnection.errorText(ac)) (\(endpoint.host):\(endpoint.port))")
            context = nil
            ended()
            return
        }
        tcpConnected = true
        if plan.retrying, let address { resolver.connectSucceeded(host: endpoint.host, address: address) }
        if loginPending == 0 { becomeReady() }
    }

    /// hiredis's disconnect callback (loop thread); it has already completed the pending commands.
    fileprivate func disconnected(_ ac: UnsafeMutablePointer<redisAsyncContext>) {
        guard ac == context else { return }  // a context this connection dropped itself
        context = nil  // hiredis frees it right after this callback
        ended()
    }

    private func becomeReady() {
        state = .ready
        connectTimer?.cancel()
        connectTimer = nil
        backoff = options.reconnectMinimum
        ready.store(true, ordering: .releasing)
        readyCount.add(1, ordering: .relaxed)
        onReady?()
        resumeReadyWaiters(true)
    }

    /// Drops the current connection (its commands fail with `reason`) and reconnects after the back-off.
    package func restart(_ reason: RedisError) {
        guard state != .closed else { return }
        drop(reason)
    }

    /// Frees the current context on this side's initiative: its pending commands fail with `reason`.
    private func drop(_ reason: RedisError) {
        guard let ac = context else {
            ended()
            return
        }
        failure = reason
        context = nil
        // Completes the pending commands with a NULL reply (they read `failure`), then runs the disconnect
        // callback, which sees that `ac` is no longer `context` and leaves the rest to `ended()` below. From
        // inside a hiredis reply callback (a refused login) hiredis defers the free until the callback returns.
        redisAsyncFree(ac)
        ended()
    }

    /// The context is gone (or never came): forget it and schedule the next attempt.
    private func ended() {
        let connectFailed = !tcpConnected && state == .connecting
        if connectFailed, let address {
            // Refused, unreachable or timed out: new connections leave this address out a while.
            resolver.connectFailed(host: endpoint.host, address: address)
        }
        context = nil
        tcpConnected = false
        loginPending = 0
        connectTimer?.cancel()
        connectTimer = nil
        deadlineTimer?.cancel()
        deadlineTimer = nil
        inFlight.removeAll(keepingCapacity: true)  // completed by hiredis's NULL replies
        inFlightHead = 0
        ready.store(false, ordering: .releasing)
        onDown?()
        guard state != .closed else { return }
        if connectFailed && nextAddress < plan.addresses.count {
            // The plan's next address, at once: the back-off is for when none is left.
            let next = plan.addresses[nextAddress]
            nextAddress += 1
            address = next
            startAttempt()
            open(address: next.numericText)
            return
        }
        state = .waiting
        let delay = backoff
        backoff = min(backoff * 2, options.reconnectMaximum)
        reconnectTimer?.cancel()
        reconnectTimer = EventLoop.Timer(loop: loop, seconds: delay) { [weak self] in
            guard let self else { return }
            reconnectTimer = nil
            connect()
        }
    }

    // MARK: Helpers

    private static func errorText(_ ac: UnsafeMutablePointer<redisAsyncContext>) -> String {
        let text = withUnsafeBytes(of: ac.pointee.c.errstr) { raw in
            String(decoding: raw.prefix { $0 != 0 }, as: UTF8.self)
        }
        return text.isEmpty ? "connection failed" : text
    }

    private static func isNumericAddress(_ host: String) -> Bool {
        var v4 = in_addr()
        var v6 = in6_addr()
        return inet_pton(AF_INET, host, &v4) == 1 || inet_pton(AF_INET6, host, &v6) == 1
    }
}

/// A hiredis reply callback (`redisCallbackFn`) as a C function pointer: (context, reply, privdata).
package typealias HiredisReplyCallback = @convention(c) (UnsafeMutablePointer<redisAsyncContext>?, UnsafeMutableRawPointer?,
                                                 UnsafeMutableRawPointer?) -> Void

/// One command handed to hiredis: completed exactly once, by its reply, the connection's failure, or at once.
package final class RedisCall {
    fileprivate let connection: RedisConnection
    private var continuation: CheckedContinuation<Result<RedisReply, RedisError>, Never>?
    private var handler: ((Result<RedisReply, RedisError>) -> Void)?
    /// Monotonic time (ns) by which the reply must have come.
    package var deadline: UInt64 = 0
    /// True once completed.
    package private(set) var finished = false

    /// A call that resumes `continuation`.
    package init(connection: RedisConnection, continuation: CheckedContinuation<Result<RedisReply, RedisError>, Never>) {
        self.connection = connection
        self.continuation = continuation
        #if DEBUG
        connection.liveCalls.add(1, ordering: .relaxed)
        #endif
    }

    /// A call that runs `handler` on the loop thread.
    package init(connection: RedisConnection, handler: @escaping (Result<RedisReply, RedisError>) -> Void) {
        self.connection = connection
        self.handler = handler
        #if DEBUG
        connection.liveCalls.add(1, ordering: .relaxed)
        #endif
    }

    #if DEBUG
    deinit {
        connection.liveCalls.subtract(1, ordering: .relaxed)
    }
    #endif

    /// Delivers the result; later calls are ignored.
    package func complete(_ result: Result<RedisReply, RedisError>) {
        guard !finished else { return }
        finished = true
        if let continuation {
            self.continuation = nil
            continuation.resume(returning: result)
        }
        if let handler {
            self.handler = nil
            handler(result)
        }
    }
}

/// hiredis's reply callback for a `RedisCall`: runs exactly once per accepted command.
private func replyCallback(_: UnsafeMutablePointer<redisAsyncContext>?, reply: UnsafeMutableRawPointer?,
                           privdata: UnsafeMutableRawPointer?) {
    guard let privdata else { return }
    let call = Unmanaged<RedisCall>.fromOpaque(privdata).takeRetainedValue()
    call.connection.replied(call, reply?.assumingMemoryBound(to: redisReply.self))
}

/// hiredis's connect callback: finds the connection through `data`.
private func connectCallback(_ ac: UnsafePointer<redisAsyncContext>?, status: Int32) {
    guard let ac, let data = ac.pointee.data else { return }
    Unmanaged<RedisConnection>.fromOpaque(data).takeUnretainedValue()
        .connected(UnsafeMutablePointer(mutating: ac), ok: status == REDIS_OK)
}

/// hiredis's disconnect callback: finds the connection through `data`.
private func disconnectCallback(_ ac: UnsafePointer<redisAsyncContext>?, status: Int32) {
    guard let ac, let data = ac.pointee.data else { return }
    Unmanaged<RedisConnection>.fromOpaque(data).takeUnretainedValue().disconnected(UnsafeMutablePointer(mutating: ac))
}

extension RedisReply {
    /// Copies a hiredis reply (valid only during the callback) into a value.
    package init(_ reply: UnsafeMutablePointer<redisReply>) {
        let r = reply.pointee
        switch r.type {
        case REDIS_REPLY_STRING:
            self = .bulk(r.str.map { Array(UnsafeRawBufferPointer(start: $0, count: r.len)) } ?? [])
        case REDIS_REPLY_STATUS:
            self = .status(r.str.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: r.len), as: UTF8.self) } ?? "")
        case REDIS_REPLY_ERROR:
            self = .error(r.str.map { String(decoding: UnsafeRawBufferPointer(start: $0, count: r.len), as: UTF8.self) } ?? "")
        case REDIS_REPLY_INTEGER:
            self = .integer(Int64(r.integer))
        case REDIS_REPLY_ARRAY:
            var elements: [RedisReply] = []
            elements.reserveCapacity(r.elements)
            for index in 0..<r.elements {
                if let element = r.element[index] { elements.append(RedisReply(element)) } else { elements.append(.null) }
            }
            self = .array(elements)
        default:
            self = .null
        }
    }
}
