import FoundationEssentials
import Glibc
import Dispatch
import PosternIO
import PosternHTTP

/// Why the gateway could not start (one line, for the exit message).
package struct StartError: Error, CustomStringConvertible, Sendable {
    /// The reason.
    package let description: String

    /// Builds an error.
    init(_ description: String) { self.description = description }
}

/// The composition root: config in, a running gateway out. `main` and tests use the same builder.
package final class Application: @unchecked Sendable {
    /// The configuration serving now (the newest generation's; a reload changes it).
    var config: PosternConfig { gateway.generation.config }
    /// The request pipeline (usable without sockets).
    let gateway: Gateway
    /// The session manager.
    var sessions: SessionManager { gateway.sessions }
    /// The worker event loops: made by `build` when the upstream transport needs them, else by `start()`,
    /// so that an application built for in-process tests starts no threads.
    package private(set) var group: EventLoopGroup?
    private let log: AccessLog
    private var server: HTTPServer?
    private var admin: HTTPServer?
    private var adminGroup: EventLoopGroup?
    private var maintenance: DispatchSourceTimer?
    private let maintenanceQueue = DispatchQueue(label: "postern.maintenance")
    private var closeStore: (() -> Void)?
    /// Reads the config again on SIGHUP, `POST /admin/reload` and the watch.
    private(set) var reloader: ConfigReloader?
    private var watch: ConfigWatch?
    private var hangUp: DispatchSourceSignal?
    /// The session store with its buses and counters (chosen from `sessions.store`).
    private(set) var backend: SessionBackend?

    /// The public port once started.
    package var port: UInt16 { server?.port ?? 0 }
    /// The admin port once started.
    package var adminPort: UInt16 { admin?.port ?? 0 }

    /// Builds everything from `config`. `transport` and `store` replace the real ones in tests; with a
    /// `transport`, nothing runs until `start()` (`gateway.handle` answers in process). `logSink` takes the log
    /// lines instead of stdout (tests). `clock` is what session expiry and the circuit breaker read (tests move it).
    /// `source` is where a reload reads the config again (docs/api.md, Reloading the config); without one, a reload
    /// finds `config` again and changes nothing.
    package static func build(config: PosternConfig, transport: (any UpstreamTransport)? = nil, store: (any SessionStore)? = nil,
                             logSink: (@Sendable (String) -> Void)? = nil,
                             clock: GatewayClock = .system, source: ConfigSource? = nil) throws(StartError) -> Application {
        let problems = config.problems()
        if let first = problems.first { throw StartError("invalid config: \(first)") }
        let log = AccessLog(level: AccessLog.Level(config.logLevel), sink: logSink)
        var group: EventLoopGroup?
        let upstream: any UpstreamTransport
        var makeTransport: (@Sendable (PosternConfig) -> (any UpstreamTransport)?)?
        if let transport {
            upstream = transport
        } else {
            let workers = EventLoopGroup(count: config.effectiveWorkers)
            guard let pool = Application.directusPool(config, group: workers) else {
                workers.shutdown()
                throw StartError("directus.url is not an http(s) URL")
            }
            group = workers
            upstream = pool
            makeTransport = { Application.directusPool($0, group: workers) }
        }
        let backend: SessionBackend
        do {
            if let store {
                backend = .local(store)
            } else {
                backend = try Application.openStore(config, group: group, log: log)
            }
        } catch {
            group?.shutdown()
            throw error
        }
        let metrics = Metrics()
        let breaker = CircuitBreaker(threshold: config.circuitBreaker.failures, openSeconds: TimeInterval(config.circuitBreaker.openSeconds),
                                     clock: clock.seconds)
        let directus = DirectusClient(transport: upstream, timeout: Double(config.directus.timeoutMs) / 1000, breaker: breaker,
                                      metrics: metrics)
        let sessions = SessionManager(store: backend.store, directus: directus, idleTTL: TimeInterval(config.sessions.idleTTLSeconds),
                                      maxTTL: TimeInterval(config.sessions.maxTTLSeconds), maxPerUser: config.sessions.maxPerUser,
                                      revocations: backend.revocations, clock: clock.date)
        let rateLimits = RateLimits(config.rateLimits, metrics: metrics, counters: backend.counters)
        let gateway = Gateway(config: config, directus: directus, sessions: sessions, log: log, metrics: metrics,
                              rateLimits: rateLimits, breaker: breaker, invalidations: backend.invalidations, clock: clock)
        let app = Application(gateway: gateway, group: group, log: log)
        app.closeStore = backend.close
        app.backend = backend
        let reloader = ConfigReloader(source: source ?? .fixed(config), gateway: gateway, log: log, transport: upstream,
                                      makeTransport: makeTransport, counters: backend.counters, clock: clock)
        // Weakly: the application owns the reloader, which holds the gateway (no cycle through the gateway's route).
        let newestGeneration = gateway.newestGeneration
        gateway.attachReload { [weak reloader] in
            guard let reloader else { return .reloaded(generation: newestGeneration()?.number ?? 0, changed: false) }
            return await reloader.reload(trigger: "admin")
        }
        app.reloader = reloader
        // Counted by `/metrics` just before it renders (the store may answer asynchronously).
        metrics.gauge("postern_active_sessions", help: "Sessions in the session store.") { Double(sessions.lastKnownActiveSessions) }
        metrics.gauge("postern_circuit_state", help: "Upstream circuit: 0 closed, 1 open, 2 half-open.") {
            Double((newestGeneration()?.breaker ?? breaker).state.rawValue)
        }
        metrics.gauge("postern_requests_in_flight", help: "Requests being handled.") { [weak app] in Double(app?.server?.inFlight ?? 0) }
        metrics.gauge("postern_open_connections", help: "Client connections open on the public listener.") { [weak app] in
            Double(app?.server?.openConnections ?? 0)
        }
        return app
    }

    private init(gateway: Gateway, group: EventLoopGroup?, log: AccessLog) {
        self.gateway = gateway
        self.group = group
        self.log = log
    }

    /// The Directus pool of `config` on `group`'s loops (nil when `directus.url` is not an http(s) URL).
    private static func directusPool(_ config: PosternConfig, group: EventLoopGroup) -> LoopTransport? {
        guard let endpoint = UpstreamEndpoint(url: config.directus.url) else { return nil }
        return LoopTransport(group: group, endpoint: endpoint, maxConnections: config.directus.maxConnectionsPerWorker,
                             maxWaiting: config.directus.maxWaitingPerWorker,
                             keepaliveIdle: Double(config.directus.keepaliveIdleMs) / 1000,
                             pipelineDepth: config.directus.pipelineDepth,
                             maxResponseBytes: config.directus.maxResponseBytes, keptHeaders: UpstreamHTTPClient.gatewayHeaders)
    }

    private static func openStore(_ config: PosternConfig, group: EventLoopGroup?, log: AccessLog) throws(StartError) -> SessionBackend {
        switch config.sessions.storeKind {
        case .memory:
            return .local(MemorySessionStore())
        case .sqlite(let path):
            var box: SecretBox?
            if let key = config.secretKey {
                guard let opened = SecretBox(base64Key: key) else { throw StartError("POSTERN_SECRET_KEY is not 32 bytes of base64") }
                box = opened
            }
            do {
                let store = try SQLiteSessionStore(path: path, secretBox: box) { warning in log.event(.warning, warning) }
                return .local(store, close: { store.close() })
            } catch {
                throw StartError("\(error)")
            }
        case .redis:
            guard let url = config.sessions.redisURL else { throw StartError("sessions.store: not a redis:// URL") }
            return try Application.redisBackend(url, config: config, group: group, log: log)
        case nil:
            throw StartError("sessions.store: unknown store \(config.sessions.store)")
        }
    }

    /// Binds the public and admin listeners and starts background maintenance.
    package func start() throws(StartError) {
        guard let listen = config.listenAddress, let adminListen = config.adminListenAddress else {
            throw StartError("listen addresses are invalid")
        }
        var limits = ServerLimits()
        limits.inactivityTimeoutSeconds = config.limits.inactivityTimeoutSeconds
        limits.requestTimeoutSeconds = config.limits.requestTimeoutSeconds
        limits.bodyCeiling = config.limits.bodyCeiling
        // As many requests at once as the Directus pool has connections and its waiting queue has places: a crowd
        // beyond that waits its turn at the edge (parsed, no handler task yet) instead of overflowing the queue with
        // 503s. (Not times `pipeline_depth`: only the GETs of one loop turn share a connection.)
        limits.maxHandling = max(64, config.directus.maxConnectionsPerWorker + config.directus.maxWaitingPerWorker)
        let gateway = self.gateway
        let group = self.group ?? EventLoopGroup(count: config.effectiveWorkers)
        self.group = group
        // Tried on every request: a reload may turn the micro-cache on (`handleImmediately` returns at once while no
        // resource of the current generation is cached).
        let server = HTTPServer(group: group, limits: limits, refuse: { gateway.refuse($0) }, handling: gateway)
        do {
            try server.start(host: listen.host, port: listen.port)
        } catch {
            throw StartError(error.description)
        }
        self.server = server
        let adminGroup = EventLoopGroup(count: 1, name: "postern-admin")
        self.adminGroup = adminGroup
        let admin = HTTPServer(group: adminGroup, limits: limits, refuse: { gateway.refuse($0) }) { request in
            await gateway.handleAdmin(request)
        }
        do {
            try admin.start(host: adminListen.host, port: adminListen.port)
        } catch {
            server.shutdown(grace: 0)
            throw StartError("admin listener: \(error.description)")
        }
        self.admin = admin
        gateway.statsSampler.start()
        startMaintenance()
        for warning in config.warnings() { log.event(.warning, warning) }
        if let reloader, reloader.source.watch, let path = reloader.source.path {
            let watch = ConfigWatch(path: path, reloader: reloader)
            watch.start()
            self.watch = watch
            log.event(.info, "watching the config file", [("path", .string(path)), ("every_s", .int(2))])
        } else if let reloader, reloader.source.watch {
            log.event(.warning, "POSTERN_CONFIG_WATCH is set but no config file is in use: nothing to watch")
        }
        log.event(.info, "postern started", [("listen", .string("\(listen.host):\(port)")),
                                              ("admin_listen", .string("\(adminListen.host):\(adminPort)")),
                                              ("workers", .int(Int64(group.loops.count)))])
    }

    private func startMaintenance() {
        let timer = DispatchSource.makeTimerSource(queue: maintenanceQueue)
        var ticks = 0
        let sessions = self.sessions
        let gateway = self.gateway
        let loop = group?.loops.first
        timer.schedule(deadline: .now() + 15, repeating: 15)
        timer.setEventHandler {
            ticks += 1
            let purge = ticks % 40 == 1
            if ticks % 4 == 0 { gateway.generation.rateLimits.prune() }
            // On a worker loop when there is one: a Redis store answers there.
            Task(executorPreference: loop) {
                await sessions.flush()
                if purge { await sessions.purgeExpired() }
            }
        }
        timer.resume()
        maintenance = timer
    }

    /// Stops accepting, lets requests in flight finish (up to the grace period), flushes sessions, stops loops.
    package func shutdown() {
        let grace = Double(config.limits.shutdownGraceSeconds)
        server?.shutdown(grace: grace)
        admin?.shutdown(grace: 1)
        server = nil
        admin = nil
        adminGroup?.shutdown()
        adminGroup = nil
        maintenance?.cancel()
        maintenance = nil
        watch?.stop()
        watch = nil
        hangUp?.cancel()
        hangUp = nil
        gateway.statsSampler.stop()
        flushSessionsBeforeShutdown()
        closeStore?()
        closeStore = nil
        group?.shutdown()
        // The loops have stopped: their references to the generations can go (they hold the pools, which hold the loops).
        gateway.releaseGenerations()
        log.event(.info, "postern stopped")
    }

    /// Writes the batched `last_used` values before the store closes: on a worker loop (where a Redis store
    /// answers), waiting at most 5 s; from a loop thread itself it cannot wait, and only starts the flush.
    private func flushSessionsBeforeShutdown() {
        let sessions = self.sessions
        let done = DispatchSemaphore(value: 0)
        Task(executorPreference: group?.loops.first) {
            await sessions.flush()
            done.signal()
        }
        if EventLoop.current == nil { _ = done.wait(timeout: .now() + 5) }
    }

    /// Blocks until SIGTERM or SIGINT, then shuts down; SIGHUP reloads the config meanwhile.
    package func runUntilSignal() {
        reloadOnHangUp()
        Application.waitForTerminationSignal()
        log.event(.info, "shutting down", [("in_flight", .int(Int64(server?.inFlight ?? 0)))])
        shutdown()
    }

    /// Blocks the calling thread until SIGTERM or SIGINT arrives.
    package static func waitForTerminationSignal() {
        let stop = DispatchSemaphore(value: 0)
        let queue = DispatchQueue(label: "postern.signals")
        var sources: [DispatchSourceSignal] = []
        for sig in [SIGTERM, SIGINT] {
            signal(sig, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: sig, queue: queue)
            source.setEventHandler { stop.signal() }
            source.resume()
            sources.append(source)
        }
        stop.wait()
        for source in sources { source.cancel() }
    }

    /// Reloads the config on every SIGHUP (docs/api.md, Reloading the config).
    func reloadOnHangUp() {
        guard hangUp == nil, let reloader else { return }
        signal(SIGHUP, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: reloader.queue)
        source.setEventHandler { _ = reloader.reloadNow(trigger: "SIGHUP") }
        source.resume()
        hangUp = source
    }

    /// Reloads the config now, off the loops (what SIGHUP and `POST /admin/reload` do).
    func reload(trigger: String = "admin") async -> ConfigReloadOutcome {
        guard let reloader else { return .reloaded(generation: gateway.generation.number, changed: false) }
        return await reloader.reload(trigger: trigger)
    }

    /// Ignores SIGHUP until the reload handler is in place (`serve` calls it first: the default action would end
    /// the process).
    package static func ignoreHangUp() {
        signal(SIGHUP, SIG_IGN)
    }

    /// Ignores SIGPIPE (writes to closed sockets must fail, not kill the process).
    package static func ignoreSIGPIPE() {
        signal(SIGPIPE, SIG_IGN)
    }
}
