import FoundationEssentials
import Synchronization

/// A value carried across threads where the code guarantees ordering itself (semaphores).
package struct UncheckedSendable<T>: @unchecked Sendable {
    package let value: T
    package init(_ value: T) { self.value = value }
}

/// A value behind a lock.
package final class LockedBox<T>: @unchecked Sendable {
    private let lock = PlainLock()
    private var value: T

    package init(_ value: T) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    package func withLock<R>(_ body: (inout T) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

/// A lock for the hot path: Synchronization's `Mutex`, a futex word taken and given back with one atomic
/// compare-and-swap each when nobody waits, where `PlainLock` is an object around a pthread mutex (a method
/// call and a library call each way).
package struct FastLock: ~Copyable, @unchecked Sendable {
    private let mutex = Mutex(())

    package init() {}

    /// Runs `body` holding the lock.
    @inline(__always)
    package func withLock<R>(_ body: () -> R) -> R {
        nonisolated(unsafe) var result: R?
        mutex.withLock { _ in result = body() }
        return result!  // set just above
    }
}
