import FoundationEssentials
import Synchronization

/// One piece of work for an event loop: a Swift job or a closure.
enum LoopWork {
    /// A job of a task that prefers the loop as its executor.
    case job(UnownedJob)
    /// A closure passed to `EventLoop.execute`.
    case closure(() -> Void)
}

/// The work queued for one event loop, in two queues: one that only the loop's own thread touches (no lock,
/// no wake-up: the loop drains it before it sleeps) and one for every other thread (a lock, and a wake-up
/// only when it goes from empty to not empty). Work runs in the order each thread queued it.
///
/// On the request path every job comes from the loop's own thread (a continuation resumed by a read
/// callback, a runner task handed a request), so a job costs an array append there, not a mutex and an
/// `event_active` (itself the base's mutex).
final class LoopWorkQueue: @unchecked Sendable {
    /// Work queued on the loop thread (loop thread only).
    private var local: [LoopWork] = []
    /// The emptied buffer of the last batch, kept for its capacity (loop thread only).
    private var spare: [LoopWork] = []
    /// Guards `remote` and `remoteSpare`.
    private let lock = PlainLock()
    /// Work queued by other threads (under `lock`).
    private var remote: [LoopWork] = []
    /// The emptied buffer of the last remote batch, kept for its capacity (under `lock`).
    private var remoteSpare: [LoopWork] = []
    /// True while `remote` holds work (written under its lock): lets a drain skip the lock when no other
    /// thread queued anything.
    private let remotePending = Atomic<Bool>(false)

    /// Queues `work` from the loop thread (no lock, no wake-up).
    func pushLocal(_ work: LoopWork) {
        local.append(work)
    }

    /// Queues `work` from another thread; true when the queue was empty, and the caller must then wake the loop
    /// (a later push before the next drain finds it non-empty and relies on that wake-up).
    func pushRemote(_ work: LoopWork) -> Bool {
        lock.lock()
        defer { lock.unlock() }
        remote.append(work)
        remotePending.store(true, ordering: .relaxed)
        return remote.count == 1
    }

    /// Runs every queued piece of work with `run`, including what it queues meanwhile, until both queues are
    /// empty; returns how many ran (loop thread only).
    @discardableResult
    func runAll(_ run: (LoopWork) -> Void) -> Int {
        var count = 0
        while true {
            var batch = takeRemote()
            if !batch.isEmpty {
                count += runBatch(&batch, run)
                lock.withLock { remoteSpare = batch }
            }
            guard !local.isEmpty else {
                // Work another thread queued meanwhile runs now too (its wake-up finds nothing left).
                if remotePending.load(ordering: .relaxed) { continue }
                return count
            }
            var localBatch: [LoopWork] = []
            swap(&localBatch, &spare)
            swap(&localBatch, &local)  // `local` gets the spare's capacity; the batch is what was queued
            count += runBatch(&localBatch, run)
            spare = localBatch
        }
    }

    /// Runs `batch` in order and empties it, keeping its capacity.
    private func runBatch(_ batch: inout [LoopWork], _ run: (LoopWork) -> Void) -> Int {
        for work in batch { run(work) }
        let count = batch.count
        batch.removeAll(keepingCapacity: true)
        return count
    }

    /// The work other threads queued (empty without taking the lock when there is none).
    private func takeRemote() -> [LoopWork] {
        // A stale false only delays the work to the drain its own wake-up brings; the lock orders the rest.
        guard remotePending.load(ordering: .relaxed) else { return [] }
        lock.lock()
        defer { lock.unlock() }
        var batch: [LoopWork] = []
        swap(&batch, &remoteSpare)
        swap(&batch, &remote)
        remotePending.store(false, ordering: .relaxed)
        return batch
    }
}
