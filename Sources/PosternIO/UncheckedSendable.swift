/// A value carried across threads where the code guarantees ordering itself (semaphores).
struct UncheckedSendable<T>: @unchecked Sendable {
    /// The value.
    let value: T

    /// Wraps `value`.
    init(_ value: T) { self.value = value }
}
