import Foundation

/// The one clock tests move by hand: every reading (a date, monotonic seconds, a `Duration`) is its start plus the
/// time the test advanced it, and nothing else moves it. Hand its readings to the code under test (`gatewayClock`
/// for `Application.build`, `cacheClock` for the micro-cache) instead of sleeping until a timer is due.
package final class TestClock: @unchecked Sendable {
    private let lock = NSLock()
    private var elapsed: Duration = .zero
    private let startDate: Date
    private let startSeconds: TimeInterval

    /// A clock reading `date` as its wall-clock time and `seconds` as its monotonic time until it is advanced.
    /// The default date is the real now, so that stores which compare dates with the real clock agree with it.
    package init(date: Date = Date(), seconds: TimeInterval = 1000) {
        startDate = date
        startSeconds = seconds
    }

    /// Moves the time on by `seconds`.
    package func advance(_ seconds: TimeInterval) { advance(by: .nanoseconds(Int64(seconds * 1e9))) }

    /// Moves the time on by `step`.
    package func advance(by step: Duration) { lock.withLock { elapsed += step } }

    /// The time advanced so far.
    package var advanced: Duration { lock.withLock { elapsed } }

    /// Now, as a date.
    package var now: Date { startDate.addingTimeInterval(Self.seconds(advanced)) }

    /// Now, in monotonic seconds.
    package var seconds: TimeInterval { startSeconds + Self.seconds(advanced) }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (whole, attoseconds) = duration.components
        return TimeInterval(whole) + TimeInterval(attoseconds) / 1e18
    }
}
