/// A value carried across threads where the code guarantees ordering itself (semaphores).
package struct UncheckedSendable<T>: @unchecked Sendable {
    /// The value.
    package let value: T

    /// Wraps `value`.
    package init(_ value: T) { self.value = value }
}
