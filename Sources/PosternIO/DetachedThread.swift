import Glibc

/// Starts a detached thread running `body` (what `Thread.detachNewThread` was).
package func startDetachedThread(_ body: @escaping @Sendable () -> Void) {
    let context = Unmanaged.passRetained(ThreadBody(body)).toOpaque()
    var attributes = pthread_attr_t()
    pthread_attr_init(&attributes)
    pthread_attr_setdetachstate(&attributes, Int32(PTHREAD_CREATE_DETACHED))
    var thread = pthread_t()
    let started = pthread_create(&thread, &attributes, { context in
        // The context is the retained box passed just below; it is always set.
        Unmanaged<ThreadBody>.fromOpaque(context!).takeRetainedValue().body()
        return nil
    }, context)
    pthread_attr_destroy(&attributes)
    precondition(started == 0, "pthread_create failed: \(started)")
}

/// The closure a thread started by `startDetachedThread` runs, passed to it retained.
private final class ThreadBody {
    package let body: @Sendable () -> Void
    package init(_ body: @escaping @Sendable () -> Void) { self.body = body }
}
