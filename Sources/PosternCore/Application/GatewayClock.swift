import FoundationEssentials

/// The time the gateway's own timers read: the wall clock of session and Directus-token expiry, and the monotonic
/// seconds of the circuit breaker's open period. `Application.build` takes one (`.system` by default); a test
/// passes one it moves by hand, so that no test sleeps to wait for one of these timers.
package struct GatewayClock: Sendable {
    /// Now, on the wall clock.
    let date: @Sendable () -> Date
    /// Now, in seconds on a monotonic clock of any origin.
    let seconds: @Sendable () -> TimeInterval

    /// A clock reading `date` and `seconds`.
    package init(date: @escaping @Sendable () -> Date, seconds: @escaping @Sendable () -> TimeInterval) {
        self.date = date
        self.seconds = seconds
    }

    /// The real clocks: `Date()` and the system's uptime.
    package static let system = GatewayClock(date: { Date() }, seconds: { ProcessInfo.processInfo.systemUptime })
}
