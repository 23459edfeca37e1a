import FoundationEssentials
import Synchronization
import PosternIO

/// A value behind a lock.
final class LockedBox<T>: @unchecked Sendable {
    private let lock = PlainLock()
    private var value: T

    init(_ value: T) { self.value = value }

    /// Runs `body` with exclusive access to the value.
    func withLock<R>(_ body: (inout T) -> R) -> R {
        lock.lock()
        defer { lock.unlock() }
        return body(&value)
    }
}

/// A lock for the hot path: Synchronization's `Mutex`, a futex word taken and given back with one atomic
/// compare-and-swap each when nobody waits, where `PlainLock` is an object around a pthread mutex (a method
/// call and a library call each way).
struct FastLock: ~Copyable, @unchecked Sendable {
    private let mutex = Mutex(())

    init() {}

    /// Runs `body` holding the lock.
    @inline(__always)
    func withLock<R>(_ body: () -> R) -> R {
        nonisolated(unsafe) var result: R?
        mutex.withLock { _ in result = body() }
        return result!  // set just above
    }
}
