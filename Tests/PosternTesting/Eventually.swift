import Foundation

/// The one polling helper: checks `condition` every 5 ms until it holds and returns the seconds that took; throws a
/// `TestFailure` naming `what` when `timeout` seconds passed first. The timeout is a hang detector, never a timing
/// assertion: waiting for something always goes through here, never through a fixed sleep. Async code gets the
/// overload below, which does not block its thread (this one is disfavoured, so that the compiler picks that one
/// wherever it can).
@_disfavoredOverload
@discardableResult
package func eventually(_ what: String, timeout: TimeInterval = 10, _ condition: () throws -> Bool) throws -> TimeInterval {
    let start = Date()
    while true {
        if try condition() { return Date().timeIntervalSince(start) }
        if Date().timeIntervalSince(start) > timeout { throw TestFailure("\(what): not within \(timeout) s") }
        usleep(5_000)
    }
}

/// `eventually` for async code (the compiler picks it there), whose condition may itself be async: the same polling,
/// waiting with `Task.sleep` so that the caller's executor stays free.
@discardableResult
package func eventually(_ what: String, timeout: TimeInterval = 10, _ condition: () async throws -> Bool) async throws -> TimeInterval {
    let start = Date()
    while true {
        if try await condition() { return Date().timeIntervalSince(start) }
        if Date().timeIntervalSince(start) > timeout { throw TestFailure("\(what): not within \(timeout) s") }
        try await Task.sleep(for: .milliseconds(5))
    }
}

/// A test's own failure, thrown by helpers (its description says what did not happen).
package struct TestFailure: Error, CustomStringConvertible {
    /// What went wrong.
    package let description: String

    /// A failure saying `description`.
    package init(_ description: String) { self.description = description }
}
