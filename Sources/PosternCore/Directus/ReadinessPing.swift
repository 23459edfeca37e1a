import FoundationEssentials
import PosternIO

/// The public listener's `/readyz`'s `GET /server/ping`, coalesced (docs/api.md, Operations): at most one ping in
/// flight per worker loop, and its result reused by that loop's `/readyz` requests for `reuseSeconds` after it came
/// back, so that a crowd of probes (or a prober gone wild) costs Directus one ping per loop per second. A request off
/// every loop (in-process tests) pings on its own.
final class ReadinessPing: Sendable {
    /// How long a ping's result answers `/readyz` after it came back, in seconds.
    static let reuseSeconds: TimeInterval = 1

    /// One loop's ping: the last result and when it came, and the requests waiting for the one in flight. Read and
    /// written on its loop's thread only (a `/readyz` handler runs on the loop that accepted it, before and after
    /// its `await`s), hence unchecked.
    private final class State: @unchecked Sendable {
        var result: Bool?
        var at: TimeInterval = 0
        var inFlight = false
        var waiters: [CheckedContinuation<Bool, Never>] = []
    }

    private let directus: DirectusClient
    private let clock: @Sendable () -> TimeInterval
    private let key = EventLoop.LocalKey()

    /// Pings through `directus`; `clock` (monotonic seconds, the gateway's) times the reuse.
    init(directus: DirectusClient, clock: @escaping @Sendable () -> TimeInterval) {
        self.directus = directus
        self.clock = clock
    }

    /// Whether Directus answered its ping: the result of this loop's last ping if it is fresh, else that of the ping
    /// in flight, else of a new one.
    func ping(context: CallFields) async -> Bool {
        guard let loop = EventLoop.current else { return await directus.ping(context: context) }
        let state = loop.local(key) { State() }
        if let result = state.result, clock() - state.at < ReadinessPing.reuseSeconds { return result }
        if state.inFlight {
            return await withCheckedContinuation { state.waiters.append($0) }
        }
        state.inFlight = true
        let result = await directus.ping(context: context)
        state.result = result
        state.at = clock()
        state.inFlight = false
        let waiters = state.waiters
        state.waiters = []
        for waiter in waiters { waiter.resume(returning: result) }
        return result
    }
}
