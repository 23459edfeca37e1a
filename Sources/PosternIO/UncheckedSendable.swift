/// A value carried across threads where the code guarantees ordering itself (semaphores, a task that runs on the
/// loop the value belongs to).
package struct UncheckedSendable<T>: @unchecked Sendable {
    /// The value.
    package let value: T

    /// Wraps `value`.
    package init(_ value: T) { self.value = value }
}
