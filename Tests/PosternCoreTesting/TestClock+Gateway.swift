import PosternCore
import PosternTesting

extension TestClock {
    /// The clock as `Application.build(clock:)` reads it (session expiry, the circuit breaker).
    package var gatewayClock: GatewayClock {
        GatewayClock(date: { [self] in now }, seconds: { [self] in seconds })
    }

    /// The clock as the micro-cache reads it (`MicroCache.Clock`): the time advanced since the start.
    package var cacheClock: MicroCache.Clock { { [self] in advanced } }
}
