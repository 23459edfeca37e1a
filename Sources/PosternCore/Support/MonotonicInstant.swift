import Foundation

/// A point on the monotonic clock (`CLOCK_MONOTONIC`), in nanoseconds: what request and upstream durations are
/// measured with (as plain seconds for metrics and logs). Plain integers: `ContinuousClock`'s instants and durations are 128-bit attoseconds, and turning
/// one into seconds (`Duration.components`) cost a 128-bit division, twice on every request.
struct MonotonicInstant: Sendable, Comparable {
    /// Nanoseconds since an arbitrary origin (the boot, on Linux).
    let nanoseconds: UInt64

    /// Now.
    static var now: MonotonicInstant {
        var time = timespec()
        clock_gettime(CLOCK_MONOTONIC, &time)
        return MonotonicInstant(nanoseconds: UInt64(time.tv_sec) &* 1_000_000_000 &+ UInt64(time.tv_nsec))
    }

    /// Seconds from this instant to now (0 when the clock read earlier: it cannot, but a duration is never negative).
    var secondsElapsed: Double {
        let end = MonotonicInstant.now.nanoseconds
        return end > nanoseconds ? Double(end &- nanoseconds) / 1e9 : 0
    }

    static func < (a: MonotonicInstant, b: MonotonicInstant) -> Bool { a.nanoseconds < b.nanoseconds }
}
