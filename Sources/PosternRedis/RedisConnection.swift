import CHiredis
import Dispatch
import FoundationEssentials
import PosternIO
import Synchronization

/// One Redis connection on one loop that keeps itself connected: resolve, connect (TLS for `rediss://`), AUTH
/// and SELECT, back-off and retry after any failure. A host name's addresses are tried in the order of the
/// resolver's plan (`AddressPlan`): a connect that fails (refused, unreachable, timed out) goes on to the next
/// address at once, and the back-off starts only when none is left. `RedisClient` sends commands through it,
/// `RedisSubscriber` subscribes on it. Design notes (threading, ownership, reconnect) are at the top of
/// RedisClient.swift.
///
/// The socket is Postern's own (`RedisSocket`, TLS through OpenSSL); hiredis only parses the replies (its
/// `redisReader`). Commands are written in RESP as they are sent; Redis answers in order, so each reply goes
/// to the oldest call still waiting.
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
        /// TCP connect, TLS handshake and login (AUTH/SELECT) in progress; commands queue behind the login.
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
    /// The current socket; nil between connections.
    private var socket: RedisSocket?
    /// The reply parser of the current socket.
    private var reader: UnsafeMutablePointer<redisReader>?
    /// Counts sockets, so that a reply handler that dropped the socket stops the reading of the old one.
    private var generation = 0
    /// Counts connection attempts, so that late callbacks of an older attempt are recognised and ignored.
    private var attempt = 0
    /// The socket is open (TCP connected, TLS established).
    private var socketOpen = false
    /// A reply came on the current socket.
    private var answered = false
    private var loginPending = 0
    /// Why the current or last connection failed: the error of the commands it completes without a reply.
    private var failure: RedisError?
    private var backoff: Double
    private var reconnectTimer: EventLoop.Timer?
    private var connectTimer: EventLoop.Timer?
    private var deadlineTimer: EventLoop.Timer?
    /// Commands sent on the current socket, oldest first (Redis answers in order); answered ones are dropped
    /// from the front.
    private var inFlight: [RedisCall] = []
    private var inFlightHead = 0
    /// After `subscribe`: where the replies no call waits for go (the subscription's confirmation, messages).
    private var subscription: ((RedisReply) -> Void)?
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
    let liveCalls = Atomic<Int>(0)
    #endif

    /// Who waits for the end of the current (or next) attempt.
    private var attemptWaiters: [(RedisAttemptOutcome) -> Void] = []
    /// The current attempt was refused by TLS or the login (not merely unreachable).
    private var refused = false

    /// Resolves the host name (the process's shared resolver; tests give their own before `start()`).
    var resolver = HostResolver.shared
    /// Runs on the loop each time the connection becomes ready (after the login).
    var onReady: (() -> Void)?
    /// Runs on the loop each time a ready or connecting socket goes away.
    var onDown: (() -> Void)?

    /// A connection to `endpoint` on `loop`; nothing happens before `start()`.
    package init(loop: EventLoop, endpoint: RedisEndpoint, options: RedisOptions) {
        self.loop = loop
        self.endpoint = endpoint
        self.options = options
        backoff = options.reconnectMinimum
    }

    deinit {
        if let reader { redisReaderFree(reader) }
    }

    /// True while connected and logged in (any thread).
    var isReady: Bool { ready.load(ordering: .acquiring) }

    /// How many times the connection became ready (any thread; for tests and metrics).
    var readyTransitions: Int { readyCount.load(ordering: .relaxed) }

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
        endAttempt(.closed)
        onReady = nil
        onDown = nil
        subscription = nil
    }

    /// Runs `body` (loop thread) with how the current attempt ends: at once when ready or closed, else when the
    /// attempt in progress (or the next one, while waiting to retry) succeeds or fails.
    func whenAttemptEnds(_ body: @escaping (RedisAttemptOutcome) -> Void) {
        switch state {
        case .ready: body(.ready)
        case .closed: body(.closed)
        default: attemptWaiters.append(body)
        }
    }

    private func endAttempt(_ outcome: RedisAttemptOutcome) {
        let waiters = attemptWaiters
        attemptWaiters.removeAll()
        for waiter in waiters { waiter(outcome) }
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
        guard let socket else {
            call.complete(.failure(.unavailable(failureText)))
            return
        }
        guard !arguments.isEmpty else {
            call.complete(.failure(.invalidCommand("no arguments")))
            return
        }
        socket.write(RedisConnection.format(arguments))
        call.deadline = DispatchTime.now().uptimeNanoseconds + UInt64(options.commandTimeout * 1e9)
        inFlight.append(call)
        if deadlineTimer == nil { armDeadlineTimer() }
    }

    /// Sends a `SUBSCRIBE` (loop thread): from then on, every reply no call waits for (the confirmation, the
    /// messages) goes to `handler`, until the socket goes away. A subscribed connection sends nothing else.
    /// False when there is no socket to send it on.
    func subscribe(_ arguments: [RedisArgument], handler: @escaping (RedisReply) -> Void) -> Bool {
        guard state == .ready || state == .connecting, let socket, !arguments.isEmpty else { return false }
        subscription = handler
        socket.write(RedisConnection.format(arguments))
        return true
    }

    /// `arguments` as a RESP array of bulk strings.
    static func format(_ arguments: [RedisArgument]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16 + arguments.count * 16)
        func header(_ marker: UInt8, _ count: Int) {
            out.append(marker)
            out.append(contentsOf: String(count).utf8)
            out.append(13)
            out.append(10)
        }
        header(UInt8(ascii: "*"), arguments.count)
        for argument in arguments {
            switch argument {
            case .string(let text):
                header(UInt8(ascii: "$"), text.utf8.count)
                out.append(contentsOf: text.utf8)
            case .bytes(let bytes):
                header(UInt8(ascii: "$"), bytes.count)
                out.append(contentsOf: bytes)
            case .integer(let value):
                let text = String(value)
                header(UInt8(ascii: "$"), text.utf8.count)
                out.append(contentsOf: text.utf8)
            }
            out.append(13)
            out.append(10)
        }
        return out
    }

    /// One reply, in order: to the oldest call waiting, else to the subscription.
    private func dispatch(_ value: RedisReply) {
        while inFlightHead < inFlight.count && inFlight[inFlightHead].finished { inFlightHead += 1 }
        if inFlightHead < inFlight.count {
            let call = inFlight[inFlightHead]
            inFlightHead += 1
            if inFlightHead == inFlight.count {
                inFlight.removeAll(keepingCapacity: true)
                inFlightHead = 0
            }
            if case .error(let message) = value {
                call.complete(.failure(RedisError.fromErrorReply(message)))
            } else {
                call.complete(.success(value))
            }
        } else if let subscription {
            subscription(value)
        } else {
            drop(.unavailable("Redis sent a reply nothing asked for (\(endpoint.host):\(endpoint.port))"))
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
        if let numeric = SocketAddressValue(numericHost: endpoint.host, port: UInt16(endpoint.port)) {
            open(numeric)
        } else {
            resolve()
        }
    }

    /// Counts a new attempt and arms its connect timeout.
    private func startAttempt() {
        attempt += 1
        failure = nil
        refused = false
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
            ended(connectFailed: false)
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
            ended(connectFailed: false)
            return
        }
        self.plan = plan
        nextAddress = 1
        address = first
        open(first.socketAddress(port: UInt16(endpoint.port)))
    }

    private func open(_ socketAddress: SocketAddressValue) {
        state = .connecting  // a connect that fails here (refused at once on loopback) is a failed connect too
        socketOpen = false
        let made = RedisSocket(loop: loop, peer: "\(endpoint.host):\(endpoint.port)", delegate: self)
        if let error = made.open(socketAddress, tls: endpoint.tls, serverName: endpoint.host) {
            failure = error
            ended(connectFailed: true)
            return
        }
        generation += 1
        socket = made
        if let reader { redisReaderFree(reader) }
        reader = redisReaderCreate()
        state = .connecting
        socketOpen = false
        answered = false
        loginPending = 0
        // The login is pipelined: it goes out first once the socket is open, and commands sent meanwhile
        // queue behind it in order.
        if let password = endpoint.password {
            login(endpoint.username.map { ["AUTH", .string($0), .string(password)] } ?? ["AUTH", .string(password)],
                  what: "AUTH")
        }
        if endpoint.database != 0 {
            login(["SELECT", .integer(endpoint.database)], what: "SELECT \(endpoint.database)")
        }
        if endpoint.tls != nil && loginPending == 0 {
            // TLS 1.3 servers check a client certificate after the client's side of the handshake ended, and
            // refuse it with an alert then: be ready only once Redis has answered.
            login(["PING"], what: "PING")
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
                if loginPending == 0 && socketOpen { becomeReady() }
            case .failure(.server(let message)):
                // Redis refused the login (wrong password, unknown user, no such database): retry with
                // back-off, and say why. The message is Redis's (WRONGPASS, ...), never the password.
                refused = true
                drop(.unavailable("Redis refused \(what.hasPrefix("AUTH") ? "AUTH" : what): \(message)"))
            case .failure:
                break  // the socket is going away: `ended()` handles it
            }
        })
    }

    private func becomeReady() {
        state = .ready
        connectTimer?.cancel()
        connectTimer = nil
        backoff = options.reconnectMinimum
        ready.store(true, ordering: .releasing)
        readyCount.add(1, ordering: .relaxed)
        onReady?()
        endAttempt(.ready)
    }

    /// Drops the current connection (its commands fail with `reason`) and reconnects after the back-off.
    func restart(_ reason: RedisError) {
        guard state != .closed else { return }
        drop(reason)
    }

    /// Closes the current socket on this side's initiative: its pending commands fail with `reason`.
    private func drop(_ reason: RedisError) {
        guard socket != nil else {
            ended(connectFailed: false)
            return
        }
        failure = reason
        lost(reason)
    }

    /// Forgets the socket and fails every command sent on it with `reason`, then `ended()`.
    private func lost(_ reason: RedisError) {
        // Refused, unreachable or timed out before the socket opened (TLS refusals aside): the next address.
        let connectFailed = !socketOpen && !refused && state == .connecting
        socket?.close()
        socket = nil
        generation += 1
        subscription = nil
        if state != .closed { state = .waiting }  // the login's handler, failed below, must not drop it again
        let calls = inFlight[inFlightHead...]
        inFlight = []
        inFlightHead = 0
        for call in calls { call.complete(.failure(reason)) }
        ended(connectFailed: connectFailed)
    }

    /// The socket is gone (or never came): try the plan's next address when the connect failed, else schedule
    /// the next attempt.
    private func ended(connectFailed: Bool) {
        if connectFailed, let address {
            // Refused, unreachable or timed out: new connections leave this address out a while.
            resolver.connectFailed(host: endpoint.host, address: address)
        }
        socket = nil
        socketOpen = false
        loginPending = 0
        connectTimer?.cancel()
        connectTimer = nil
        deadlineTimer?.cancel()
        deadlineTimer = nil
        inFlight.removeAll(keepingCapacity: true)
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
            open(next.socketAddress(port: UInt16(endpoint.port)))
            return
        }
        var why = (failure ?? .connectionLost).description
        if case .unavailable(let text) = failure { why = text }
        endAttempt(refused ? .refused(why) : .unreachable(why))
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
}

extension RedisConnection: RedisSocketDelegate {
    func socketOpened(_ socket: RedisSocket) {
        guard socket === self.socket else { return }
        socketOpen = true
        if plan.retrying, let address { resolver.connectSucceeded(host: endpoint.host, address: address) }
        if loginPending == 0 && state == .connecting { becomeReady() }
    }

    func socket(_ socket: RedisSocket, read bytes: UnsafeRawBufferPointer) {
        guard socket === self.socket, let reader else { return }
        let current = generation
        guard let base = bytes.baseAddress,
              redisReaderFeed(reader, base.assumingMemoryBound(to: CChar.self), bytes.count) == REDIS_OK else {
            drop(.unavailable("cannot read Redis's reply (\(endpoint.host):\(endpoint.port))"))
            return
        }
        while generation == current {
            var raw: UnsafeMutableRawPointer?
            guard redisReaderGetReply(reader, &raw) == REDIS_OK else {
                drop(.unavailable("invalid reply from Redis (\(endpoint.host):\(endpoint.port))"))
                return
            }
            guard let raw else { return }  // needs more bytes
            answered = true
            let value = RedisReply(raw.assumingMemoryBound(to: redisReply.self))
            freeReplyObject(raw)
            dispatch(value)  // may drop the socket: then `generation` moved on and the old reader is not read
        }
    }

    func socket(_ socket: RedisSocket, failed reason: RedisError, refused: Bool) {
        guard socket === self.socket else { return }
        var reason = reason
        if refused {
            self.refused = true
        } else if endpoint.tls != nil && socketOpen && !answered && state == .connecting {
            // Closed right after the handshake, before any answer: how a TLS 1.3 server refuses a client
            // certificate when its alert is lost to the reset (TLS 1.2 refuses in the handshake itself).
            self.refused = true
            reason = .unavailable("Redis closed the TLS connection to \(endpoint.host):\(endpoint.port) before answering: "
                + "it may require a client certificate, or refuse this one")
        }
        // Before any answer (refused, TLS refused): later commands say why until the next attempt.
        if case .unavailable = reason { failure = reason }
        lost(failure ?? reason)
    }
}

/// How a connection attempt ended (`RedisConnection.whenAttemptEnds`).
package enum RedisAttemptOutcome: Sendable, Equatable {
    /// Connected and logged in.
    case ready
    /// TLS or the login refused this client: the server's certificate failed the check (a wrong CA, a wrong
    /// host name), a client certificate was required or refused, or Redis refused AUTH (a wrong password, an
    /// unknown ACL user) or SELECT. A configuration problem that retrying does not fix. The text says why,
    /// without secrets.
    case refused(String)
    /// Redis could not be reached or did not answer in time (down, unknown host, timed out): it may come.
    case unreachable(String)
    /// The connection was closed.
    case closed
}

/// One command sent on a connection: completed exactly once, by its reply, the connection's failure, or at once.
package final class RedisCall {
    fileprivate let connection: RedisConnection
    private var continuation: CheckedContinuation<Result<RedisReply, RedisError>, Never>?
    private var handler: ((Result<RedisReply, RedisError>) -> Void)?
    /// Monotonic time (ns) by which the reply must have come.
    package var deadline: UInt64 = 0
    /// True once completed.
    private(set) var finished = false

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
