import PosternIO

/// The parts of one composite request in flight: each part's outcome as it comes, and the composite's wait, which
/// ends when every part is done, when a failed required part decides the answer (every required part before it in
/// config order succeeded), or at the timeout, whichever comes first. A part that finishes after that is not waited
/// for and its outcome is dropped (its upstream call is never sent again).
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
    /// Which parts are required, in config order.
    private let required: [Bool]
    private var outcomes: [Outcome?]
    private var remaining: Int
    private var waiter: CheckedContinuation<Void, Never>?
    /// True once the wait is over: nothing is recorded after it.
    private var over = false
    /// True when the wait ended at the timeout.
    private var timedOut = false

    /// A run of parts, `required` saying which are, in config order.
    init(required: [Bool]) {
        self.required = required
        outcomes = Array(repeating: nil, count: required.count)
        remaining = required.count
        over = required.isEmpty
    }

    /// Records part `index`'s outcome; the last one ends the wait.
    func record(_ index: Int, _ outcome: Outcome) {
        let resume: CheckedContinuation<Void, Never>? = lock.withLock {
            guard !over else { return nil }
            outcomes[index] = outcome
            remaining -= 1
            guard remaining == 0 || decided() else { return nil }
            over = true
            defer { waiter = nil }
            return waiter
        }
        resume?.resume()
    }

    /// True when the first failed required part in config order is known: it failed, and every required part
    /// before it succeeded (under the lock).
    private func decided() -> Bool {
        for (index, isRequired) in required.enumerated() where isRequired {
            switch outcomes[index] {
            case nil: return false
            case .failed?: return true
            case .body?: continue
            }
        }
        return false
    }

    /// Ends the wait now: the parts not done have timed out.
    func timeOut() {
        let resume: CheckedContinuation<Void, Never>? = lock.withLock {
            guard !over else { return nil }
            over = true
            timedOut = true
            defer { waiter = nil }
            return waiter
        }
        resume?.resume()
    }

    /// True once the wait is over (no part started after it could change the answer).
    var isOver: Bool { lock.withLock { over } }

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

    /// Each part's outcome once the wait is over (nil: not done), and whether the wait ended at the timeout (else a
    /// part not done was not waited for: a failed required part had decided the answer).
    var results: (outcomes: [Outcome?], timedOut: Bool) { lock.withLock { (outcomes, timedOut) } }
}
