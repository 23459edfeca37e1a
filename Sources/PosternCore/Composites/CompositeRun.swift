import PosternIO

/// The parts of one composite request in flight: each part's outcome as it comes, and the composite's wait, which
/// ends when every part is done or at the timeout, whichever comes first. A part that finishes after the timeout is
/// not waited for and its outcome is dropped (its upstream call is never sent again).
///
/// The parts run on the composite's loop (one thread), but the lock keeps it right wherever they run (a test's
/// task off the loops); it is taken a few times per composite, never across an `await`.
final class CompositeRun: @unchecked Sendable {
    /// How one part ended.
    enum Outcome: Sendable {
        /// A 2xx answer: its body is the part's value.
        case body(HTTPBody)
        /// Failed (an error of its route, or the timeout).
        case failed(GatewayError)
    }

    /// A part's answer body (the bytes the direct call would have answered).
    typealias HTTPBody = [UInt8]

    private let lock = PlainLock()
    private var outcomes: [Outcome?]
    private var remaining: Int
    private var waiter: CheckedContinuation<Void, Never>?
    /// True once every part is done or the timeout passed: nothing is recorded after it.
    private var over = false

    /// A run of `count` parts.
    init(count: Int) {
        outcomes = Array(repeating: nil, count: count)
        remaining = count
        over = count == 0
    }

    /// Records part `index`'s outcome; the last one ends the wait.
    func record(_ index: Int, _ outcome: Outcome) {
        let resume: CheckedContinuation<Void, Never>? = lock.withLock {
            guard !over else { return nil }
            outcomes[index] = outcome
            remaining -= 1
            guard remaining == 0 else { return nil }
            over = true
            defer { waiter = nil }
            return waiter
        }
        resume?.resume()
    }

    /// Ends the wait now: the parts not done have timed out.
    func timeOut() {
        let resume: CheckedContinuation<Void, Never>? = lock.withLock {
            guard !over else { return nil }
            over = true
            defer { waiter = nil }
            return waiter
        }
        resume?.resume()
    }

    /// Waits until every part is done or `timeOut` was called.
    func wait() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now: Bool = lock.withLock {
                if over { return true }
                waiter = continuation
                return false
            }
            if now { continuation.resume() }
        }
    }

    /// Each part's outcome once the wait is over (nil: not done in time).
    var results: [Outcome?] { lock.withLock { outcomes } }
}
