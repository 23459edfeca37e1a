import FoundationEssentials
import Synchronization
import PosternIO

/// A process-wide circuit breaker (lock-free while closed and healthy) (docs/api.md, Limits and defaults): after `threshold` consecutive connection failures or
/// timeouts it opens, and calls fail fast with 503 without reaching Directus; after `openSeconds` one
/// probe is let through, and its success closes the circuit again.
package final class CircuitBreaker: @unchecked Sendable {
    /// The breaker's state.
    package enum State: Int, Sendable {
        case closed = 0, open = 1, halfOpen = 2
    }

    private let threshold: Int
    private let openSeconds: TimeInterval
    private let clock: @Sendable () -> TimeInterval
    private let lock = PlainLock()
    private var failures = 0
    private var openedAt: TimeInterval?
    private var probing = false
    /// True while closed with no failure counted: then a call is allowed and a success changes nothing,
    /// so the two per-call steps read this flag instead of taking the lock every loop shares.
    private let healthy = Atomic<Bool>(true)

    /// Creates a closed breaker.
    init(threshold: Int, openSeconds: TimeInterval,
                clock: @escaping @Sendable () -> TimeInterval = { ProcessInfo.processInfo.systemUptime }) {
        self.threshold = threshold
        self.openSeconds = openSeconds
        self.clock = clock
    }

    /// The current state.
    var state: State {
        lock.withLock {
            guard let openedAt else { return .closed }
            return probing || clock() - openedAt >= openSeconds ? .halfOpen : .open
        }
    }

    /// May a call go upstream now? In the open state no; after the open period exactly one probe may.
    func allow() -> Bool {
        if healthy.load(ordering: .acquiring) { return true }
        return lock.withLock {
            guard let openedAt else { return true }
            if probing || clock() - openedAt < openSeconds { return false }
            probing = true
            return true
        }
    }

    /// Records a call that got an HTTP answer (any status): the upstream is reachable.
    func succeeded() {
        if healthy.load(ordering: .acquiring) { return }
        lock.withLock {
            failures = 0
            openedAt = nil
            probing = false
            healthy.store(true, ordering: .releasing)
        }
    }

    /// Records a connection failure or timeout.
    func failed() {
        lock.withLock {
            healthy.store(false, ordering: .releasing)
            failures += 1
            if probing || failures >= threshold {
                openedAt = clock()
                probing = false
            }
        }
    }

    /// Records a call that ended without telling anything about reachability (e.g. the peer hung up).
    func inconclusive() {
        if healthy.load(ordering: .acquiring) { return }  // closed: nothing to change
        lock.withLock { if probing { probing = false; openedAt = clock() } }
    }
}
