import FoundationEssentials
import Glibc

/// A point on the monotonic clock, in nanoseconds: what request and upstream durations are measured with (as plain
/// seconds for metrics and logs), and, on the coarse clock, the inactivity timeouts and the micro-cache's TTLs.
/// Plain integers: `ContinuousClock`'s instants and durations are 128-bit attoseconds, and turning one into
/// seconds (`Duration.components`) cost a 128-bit division, twice on every request.
package struct MonotonicInstant: Sendable {
    /// Nanoseconds since an arbitrary origin (the boot, on Linux).
    package let nanoseconds: UInt64

    /// The instant `nanoseconds` after the clock's origin.
    @inlinable
    package init(nanoseconds: UInt64) {
        self.nanoseconds = nanoseconds
    }

    /// Now, by `CLOCK_MONOTONIC`.
    @inlinable
    package static var now: MonotonicInstant { read(CLOCK_MONOTONIC) }

    /// Now, by `CLOCK_MONOTONIC_COARSE`: the last clock tick (a few milliseconds of resolution), read for about a
    /// quarter of the precise clock's cost (no TSC read). For timeouts and TTLs, not for durations.
    @inlinable
    package static var coarse: MonotonicInstant { read(CLOCK_MONOTONIC_COARSE) }

    /// Now, by `clock`.
    @inlinable
    static func read(_ clock: clockid_t) -> MonotonicInstant {
        var time = timespec()
        clock_gettime(clock, &time)
        return MonotonicInstant(nanoseconds: UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec))
    }

    /// Seconds from this instant to now (0 when the clock read earlier: it cannot, but a duration is never negative).
    @inlinable
    package var secondsElapsed: Double {
        let end = MonotonicInstant.now.nanoseconds
        return end > nanoseconds ? Double(end &- nanoseconds) / 1e9 : 0
    }
}
