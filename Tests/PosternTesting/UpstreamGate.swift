import Foundation
import Synchronization
import PosternHTTP

/// Holds the stand-in's answers to matching requests until the test opens it: the answer is computed
/// first (so it reflects the data at that moment), then held. An event for tests, never a sleep.
package final class UpstreamGate: @unchecked Sendable {
    private struct State {
        var match: (@Sendable (HTTPRequest) -> Bool)?
        var remaining = 0
        var held: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// A gate that holds nothing until `close` is called.
    package init() {}

    /// Holds the answers of the next `count` requests that `match` accepts (until `open`).
    package func close(holding count: Int = .max, _ match: @escaping @Sendable (HTTPRequest) -> Bool) {
        state.withLock {
            $0.match = match
            $0.remaining = count
        }
    }

    /// How many answers are held now.
    package var heldCount: Int { state.withLock { $0.held.count } }

    /// Lets every held answer go and holds no more.
    package func open() {
        let held = state.withLock { s -> [CheckedContinuation<Void, Never>] in
            s.match = nil
            defer { s.held = [] }
            return s.held
        }
        for continuation in held { continuation.resume() }
    }

    /// Called by the stand-in's server after computing the answer to `request`: waits while it is held.
    package func pass(_ request: HTTPRequest) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let hold = state.withLock { s -> Bool in
                guard let match = s.match, s.remaining > 0, match(request) else { return false }
                s.remaining -= 1
                s.held.append(continuation)
                return true
            }
            if !hold { continuation.resume() }
        }
    }
}
