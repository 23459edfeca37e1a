import FoundationEssentials
import Dispatch
import PosternHTTP

/// Reloads the config without a restart (docs/api.md, Reloading the config): on SIGHUP, `POST /admin/reload`,
/// `postern reload`, or a change of the file when `POSTERN_CONFIG_WATCH=1`.
///
/// Every reload runs on one serial queue, never on an event loop: the file is read and validated with the
/// environment as at start; an invalid file or a changed restart-only key leaves the running generation
/// serving; otherwise the next generation is built and published (`Gateway.install`). Sessions, the rate-limit
/// buckets, the breaker and the Directus pool are kept unless their own keys changed; a changed pool key gets a
/// new pool and the old one drains (its connections close as the calls of the older generations finish).
final class ConfigReloader: @unchecked Sendable {
    /// Where the config is read again.
    let source: ConfigSource
    private let gateway: Gateway
    private let log: AccessLog
    /// Makes the Directus pool of a config (nil: the transport given to `build` is kept whatever the config says).
    private let makeTransport: (@Sendable (PosternConfig) -> (any UpstreamTransport)?)?
    /// Makes the counter of each rate-limit budget (the session backend's).
    private let counters: RateLimitCounterFactory
    /// The clock the breaker reads.
    private let clock: GatewayClock
    /// Every reload runs here, one after another.
    let queue = DispatchQueue(label: "postern.reload")
    /// The transport of the newest generation (queue only).
    private var transport: any UpstreamTransport
    /// Reloads so far by result (`postern_config_reloads_total`).
    private let results = LockedBox<[String: Int]>([:])

    /// The `result` values of `postern_config_reloads_total`.
    static let resultNames = ["ok", "invalid", "restart_required"]

    /// A reloader of `gateway` from `source`; `transport` is the first generation's.
    init(source: ConfigSource, gateway: Gateway, log: AccessLog, transport: any UpstreamTransport,
         makeTransport: (@Sendable (PosternConfig) -> (any UpstreamTransport)?)?, counters: @escaping RateLimitCounterFactory,
         clock: GatewayClock) {
        self.source = source
        self.gateway = gateway
        self.log = log
        self.transport = transport
        self.makeTransport = makeTransport
        self.counters = counters
        self.clock = clock
        let results = self.results
        gateway.metrics.counter("postern_config_reloads_total", help: "Config reloads, by result.", label: "result",
                                values: ConfigReloader.resultNames) { name in Double(results.withLock { $0[name] ?? 0 }) }
        let newestGeneration = gateway.newestGeneration
        gateway.metrics.gauge("postern_config_generation", help: "The config generation serving (1 at start, +1 per reload that changed it).") {
            Double(newestGeneration()?.number ?? 0)
        }
    }

    /// Reloads now, off the loops, and answers what happened (`POST /admin/reload`).
    func reload(trigger: String) async -> ConfigReloadOutcome {
        await withCheckedContinuation { continuation in
            queue.async { continuation.resume(returning: self.reloadNow(trigger: trigger)) }
        }
    }

    /// Starts a reload and returns at once (SIGHUP, the watch).
    func reloadInBackground(trigger: String) {
        queue.async { _ = self.reloadNow(trigger: trigger) }
    }

    /// The reloads so far with `result`.
    func count(_ result: String) -> Int { results.withLock { $0[result] ?? 0 } }

    /// Reads, validates, compares and installs (on `queue`).
    func reloadNow(trigger: String) -> ConfigReloadOutcome {
        dispatchPrecondition(condition: .onQueue(queue))
        let outcome = attempt(trigger: trigger)
        results.withLock { $0[outcome.result, default: 0] += 1 }
        return outcome
    }

    private func attempt(trigger: String) -> ConfigReloadOutcome {
        let running = gateway.generation
        let next: PosternConfig
        switch source.load() {
        case .success(let config):
            next = config
        case .failure(let error):
            log.event(.warning, "config reload refused: invalid config, the running config keeps serving", [
                ("trigger", .string(trigger)), ("generation", .int(Int64(running.number))),
                ("problems", .array(error.problems.map { .string($0.description) })),
            ])
            return .invalid(error.problems)
        }
        let restartOnly = running.config.restartOnlyChanges(to: next)
        guard restartOnly.isEmpty else {
            log.event(.warning, "config reload refused: only a restart can change these keys", [
                ("trigger", .string(trigger)), ("generation", .int(Int64(running.number))),
                ("keys", .array(restartOnly.map { .string($0) })),
            ])
            return .restartRequired(restartOnly)
        }
        guard next != running.config else {
            log.event(.info, "config reload: nothing changed", [("trigger", .string(trigger)),
                                                                  ("generation", .int(Int64(running.number)))])
            return .reloaded(generation: running.number, changed: false)
        }
        if running.config.needsNewPool(next), let makeTransport {
            guard let fresh = makeTransport(next) else {
                let problem = ConfigProblem(path: "directus.url", message: "must be an http:// or https:// URL")
                log.event(.warning, "config reload refused: invalid config, the running config keeps serving", [
                    ("trigger", .string(trigger)), ("problems", .array([.string(problem.description)])),
                ])
                return .invalid([problem])
            }
            transport = fresh
        }
        let breaker = running.config.circuitBreaker == next.circuitBreaker ? running.breaker
            : CircuitBreaker(threshold: next.circuitBreaker.failures, openSeconds: TimeInterval(next.circuitBreaker.openSeconds),
                             clock: clock.seconds)
        var keptLimits = running.config.rateLimits
        keptLimits.trustedProxies = next.rateLimits.trustedProxies  // read per request, not by the buckets
        let rateLimits = keptLimits == next.rateLimits ? running.rateLimits
            : RateLimits(next.rateLimits, metrics: gateway.metrics, counters: counters)
        let directus = DirectusClient(transport: transport, timeout: Double(next.directus.timeoutMs) / 1000, breaker: breaker,
                                      metrics: gateway.metrics)
        gateway.sessions.useDirectus(directus)
        let installed = gateway.install(next, directus: directus, rateLimits: rateLimits, breaker: breaker)
        var fields: [(String, JSONValue)] = [
            ("trigger", .string(trigger)), ("generation", .int(Int64(installed.number))),
            ("changed", .array(running.config.changedSections(to: next).map { .string($0) })),
        ]
        let later = running.config.appliedAtRestart(to: next)
        if !later.isEmpty { fields.append(("applied_at_next_start", .array(later.map { .string($0) }))) }
        log.event(.notice, "config reloaded", fields)
        return .reloaded(generation: installed.number, changed: true)
    }
}
