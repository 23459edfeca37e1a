import CEvent
import FoundationEssentials
import Glibc
import Dispatch
import Synchronization

/// An object with work to do at the end of a loop turn (`EventLoop.atEndOfTurn(_:_:)`).
package protocol EndOfTurnWork: AnyObject {
    /// Does the work registered as `task` (an owner with several hooks tells them apart by it). On the loop thread.
    func endOfTurn(_ task: Int)
}

/// One libevent loop on one thread, with one thread-safe way in: a job queue plus a wake event.
///
/// It is also a `TaskExecutor` and `SerialExecutor`, so `Task(executorPreference: loop) { … }` runs async
/// handlers on the loop thread and every libevent call stays there. Work queued from the loop's own thread
/// takes no lock and wakes nothing; the loop runs it, with what it queues in turn, before it sleeps again
/// (`LoopWorkQueue`). Work queued from another thread takes a lock and wakes the loop.
package final class EventLoop: TaskExecutor, SerialExecutor, @unchecked Sendable {
    /// The libevent base; touched only on the loop thread (and by thread-safe libevent calls).
    package let base: OpaquePointer
    /// The jobs and closures waiting to run on the loop thread.
    private let work = LoopWorkQueue()
    /// Set by `stop()`; the wake callback breaks the loop when it sees it.
    private let stopRequested = Atomic<Bool>(false)
    /// True once the wake event is active for a drain asked for on the loop thread, until that drain starts
    /// (loop thread only): one `event_active` per turn of the loop, not one per job.
    private var drainRequested = false
    /// Drains run by the wake event since the start (loop thread writes; tests read it once the loop is idle).
    private(set) var drainCount = 0
    private var wake: OpaquePointer?
    /// Activated by other threads (and `stop()`); its callback asks for a drain like a libevent callback does, so
    /// that the drain comes after every socket callback of the turn (see `requestDrain`).
    private var remoteWake: OpaquePointer?
    private var thread: pthread_t?
    private let name: String
    private let started = DispatchSemaphore(value: 0)
    private let finished = DispatchSemaphore(value: 0)

    /// Makes libevent's locking work across threads; must run before the first base is created.
    private static let threadingEnabled: Bool = {
        evthread_use_pthreads() == 0
    }()

    /// Creates a loop (not yet running).
    package init(name: String) {
        precondition(EventLoop.threadingEnabled, "libevent pthreads support is missing")
        // The epoll changelist coalesces the add/delete of a socket's events within one loop iteration into
        // one epoll_ctl (a one-shot write event armed on EAGAIN and fired in the same turn costs one call, not two).
        let config = event_config_new()
        event_config_set_flag(config, Int32(EVENT_BASE_FLAG_EPOLL_USE_CHANGELIST.rawValue))
        // The time libevent caches when epoll_wait returns is read precisely (not from the coarse clock): `turnAgeMicroseconds`.
        event_config_set_flag(config, Int32(EVENT_BASE_FLAG_PRECISE_TIMER.rawValue))
        // event_base_new_with_config only fails when no backend can be initialised (out of memory or fds):
        // fatal at start-up.
        guard let base = event_base_new_with_config(config) else { fatalError("event_base_new failed") }
        event_config_free(config)
        self.base = base
        self.name = name
        let arg = Unmanaged.passUnretained(self).toOpaque()
        // The wake event lives as long as the loop (freed in deinit), so the unretained `self` stays valid.
        wake = event_new(base, -1, Int16(EV_PERSIST), { _, _, arg in
            guard let arg else { return }
            let loop = Unmanaged<EventLoop>.fromOpaque(arg).takeUnretainedValue()
            loop.drainCount += 1
            loop.drain()
        }, arg)
        remoteWake = event_new(base, -1, Int16(EV_PERSIST), { _, _, arg in
            guard let arg else { return }
            Unmanaged<EventLoop>.fromOpaque(arg).takeUnretainedValue().requestDrain()
        }, arg)
    }

    deinit {
        if let wake { event_free(wake) }
        if let remoteWake { event_free(remoteWake) }
        event_base_free(base)
    }

    /// Starts the loop on its own thread and returns once it runs.
    package func start() {
        let box = Unmanaged.passRetained(self)
        var tid = pthread_t()
        let rc = pthread_create(&tid, nil, { arg in
            // The retained reference taken in start() is released here, exactly once; pthread_create
            // passes back the non-nil pointer it was given.
            let loop = Unmanaged<EventLoop>.fromOpaque(arg!).takeRetainedValue()
            loop.runOnThisThread()
            return nil
        }, box.toOpaque())
        precondition(rc == 0, "pthread_create failed: \(rc)")
        thread = tid
        started.wait()
    }

    private var loopThread: pthread_t?
    private let runningState = PlainLock()
    private var running = false

    /// True while the loop's thread runs `event_base_loop`.
    var isRunning: Bool { runningState.withLock { running } }

    /// The loop whose thread is running this code, if any.
    package static var current: EventLoop? {
        guard let raw = pthread_getspecific(currentKey) else { return nil }
        return Unmanaged<EventLoop>.fromOpaque(raw).takeUnretainedValue()
    }

    /// The identity of the loop whose thread runs this code, if any (the loop is not retained for it).
    @inline(__always)
    package static var currentID: ObjectIdentifier? {
        guard let raw = pthread_getspecific(currentKey) else { return nil }
        return Unmanaged<EventLoop>.fromOpaque(raw)._withUnsafeGuaranteedRef { ObjectIdentifier($0) }
    }

    /// The object the loop whose thread runs this code keeps under `key` (`local(_:make:)`), nil off the loops. The loop
    /// itself is not retained for it (it outlives its thread): one retain, the returned object's, where
    /// `current?.local(key)` took two more.
    @inline(__always)
    package static func currentLocal<T: AnyObject>(_ key: LocalKey, make: () -> T) -> T? {
        guard let raw = pthread_getspecific(currentKey) else { return nil }
        return Unmanaged<EventLoop>.fromOpaque(raw)._withUnsafeGuaranteedRef { $0.local(key, make: make) }
    }

    private static let currentKey: pthread_key_t = {
        var key = pthread_key_t()
        pthread_key_create(&key, nil)
        return key
    }()

    private func runOnThisThread() {
        loopThread = pthread_self()
        runningState.withLock { running = true }
        // The loop outlives its thread (the thread holds a retained reference while it runs).
        pthread_setspecific(EventLoop.currentKey, Unmanaged.passUnretained(self).toOpaque())
        started.signal()
        event_base_loop(base, EVLOOP_NO_EXIT_ON_EMPTY)
        drain()
        runningState.withLock { running = false }
        finished.signal()
    }

    /// Stops the loop and waits for its thread to end (call from another thread).
    ///
    /// `event_base_loopbreak` alone can be lost: `event_base_loop` clears the break flag when it begins, so a
    /// break requested after `start()` returned but before the thread entered the loop was forgotten and the
    /// loop ran for ever. The request is therefore also kept in `stopRequested` and delivered through the wake
    /// event, which stays active until the loop runs its callback, whenever the loop starts.
    package func stop() {
        guard thread != nil else { return }
        stopRequested.store(true, ordering: .sequentiallyConsistent)
        event_active(remoteWake, 0, 0)
        // Thread-safe: libevent locks the base and wakes its loop (evthread_use_pthreads is on).
        event_base_loopbreak(base)
        finished.wait()
        if let thread { pthread_join(thread, nil) }
        thread = nil
    }

    /// True on the loop's own thread.
    package var inLoop: Bool {
        guard let loopThread else { return false }
        return pthread_equal(loopThread, pthread_self()) != 0
    }

    /// Runs `body` on the loop thread (soon, never inline).
    package func execute(_ body: @escaping @Sendable () -> Void) {
        submit(.closure(body))
    }

    /// Queues `item`: without a lock on the loop thread (run before the loop sleeps), with the lock and a
    /// wake-up from any other thread.
    private func submit(_ item: LoopWork) {
        if inLoop {
            work.pushLocal(item)
            requestDrain()
        } else if work.pushRemote(item) {
            // Thread-safe: libevent locks the base and wakes its loop (evthread_use_pthreads is on).
            event_active(remoteWake, 0, 0)
        }
    }

    /// Makes sure a drain runs before the loop sleeps (loop thread only): nothing to do inside a drain, which
    /// runs until the queue is empty; otherwise (a libevent callback) the wake event is activated once per turn.
    ///
    /// Activated from a callback, the wake event joins the end of the turn's active queue, behind the socket events
    /// the turn's `epoll_wait` found ready: so the drain, and the end-of-turn hooks, run after every socket callback
    /// of the turn. The upstream pool relies on it: bytes that reached an idle pooled connection before the turn
    /// closed it (its read callback) before a request of the turn can take it, without a `recv(MSG_PEEK)`.
    private func requestDrain() {
        guard !draining, !drainRequested else { return }
        drainRequested = true
        event_active(wake, 0, 0)
    }

    /// Runs `body` on the loop thread, or inline when already there or when the loop no longer runs
    /// (then no other thread touches the base). For tearing down libevent objects from any thread.
    package func executeOrRunIfStopped(_ body: @escaping @Sendable () -> Void) {
        if inLoop || !isRunning { body() } else { execute(body) }
    }

    /// Runs `body` on the loop thread, inline when already there.
    package func executeOrRun(_ body: @escaping @Sendable () -> Void) {
        if inLoop { body() } else { execute(body) }
    }

    // MARK: Executor

    /// Queues a Swift job to run on the loop thread.
    package func enqueue(_ job: consuming ExecutorJob) {
        submit(.job(UnownedJob(job)))
    }

    /// This loop as a serial executor.
    package func asUnownedSerialExecutor() -> UnownedSerialExecutor {
        UnownedSerialExecutor(ordinary: self)
    }

    /// Traps when called off the loop thread.
    package func checkIsolated() {
        precondition(inLoop, "not on event loop \(name)")
    }

    /// Runs everything queued, and what that queues in turn, then the end-of-turn hooks, until nothing is left
    /// (loop thread only). One call per turn of the loop, however many jobs the turn's callbacks queued.
    private func drain() {
        draining = true
        drainRequested = false
        // On the loop thread: a break requested here cannot be lost, the loop is running.
        if stopRequested.load(ordering: .sequentiallyConsistent) { event_base_loopbreak(base) }
        let executor = asUnownedTaskExecutor()
        while true {
            work.runAll { item in
                switch item {
                case .closure(let body):
                    body()
                case .job(let job):
                    // Jobs run on this loop as their task executor, not isolated to it as a serial executor: then
                    // a call into a nonisolated async function (every stage of the pipeline) stays on this thread
                    // inline. Isolated to the loop, each such call saw a different serial executor and went
                    // through the job queue and a wake of the loop (one hop per call).
                    job.runSynchronously(on: executor)
                }
            }
            if endOfTurn.isEmpty { break }
            // Swapped with the spare list, not copied: emptying a list still shared with a copy allocated a new one.
            swap(&endOfTurn, &runningHooks)
            for hook in runningHooks {
                switch hook {
                case .closure(let body): body()
                case .work(let owner, let task): owner.endOfTurn(task)
                }
            }
            runningHooks.removeAll(keepingCapacity: true)
        }
        draining = false
    }

    /// Microseconds since the current turn of the loop began, i.e. since its `epoll_wait` returned (libevent's cached
    /// time; loop thread only, inside a callback or a drain). What reached a socket before that was seen by the turn's
    /// callbacks; what came later waits for the next turn. `Int.max` when libevent has no cached time. Read against the
    /// wall clock (libevent keeps its cached time as one): for a few seconds after the wall clock is stepped back, the
    /// age reads low.
    package var turnAgeMicroseconds: Int {
        var began = timeval()
        var now = timeval()
        guard event_base_gettimeofday_cached(base, &began) == 0, gettimeofday(&now, nil) == 0 else { return .max }
        return (now.tv_sec - began.tv_sec) * 1_000_000 + (now.tv_usec - began.tv_usec)
    }

    // MARK: Loop-local state

    /// Objects owned by this loop, at their key's number (loop thread only: no lock).
    private var locals: [AnyObject?] = []
    /// Work to run once the queued jobs of this turn have run (loop thread only).
    private var endOfTurn: [Hook] = []
    /// The hooks `drain` is running (loop thread only; kept to reuse its storage).
    private var runningHooks: [Hook] = []

    /// An end-of-turn hook: a closure, or an object's work (held until it runs). A closure stored in an array of
    /// closures is kept in the array's generic form, through a thunk allocated on every append; as an enum's payload
    /// it is stored as it is.
    private enum Hook {
        case closure(() -> Void)
        case work(any EndOfTurnWork, Int)
    }
    /// True while `drain` runs (loop thread only).
    private var draining = false

    /// The object this loop keeps under `key`, made by `make` on first use. Call on the loop thread only:
    /// the state is the loop's own, so it needs no lock.
    package func local<T: AnyObject>(_ key: LocalKey, make: () -> T) -> T {
        // A key is never reused and its owner always stores the same type under it, so the cast holds.
        // By the key's number: an index, not a hashed lookup (keys are numbered from 1, one per owner).
        if key.value < locals.count, let found = locals[key.value] { return unsafeDowncast(found, to: T.self) }
        let made = make()
        if key.value >= locals.count { locals.append(contentsOf: repeatElement(nil, count: key.value + 1 - locals.count)) }
        locals[key.value] = made
        return made
    }

    /// A key for loop-local state, unique for the life of the process (never reused, unlike an address).
    package struct LocalKey: Sendable {
        private static let next = Atomic<Int>(0)
        /// The key's number.
        let value: Int

        /// A new key.
        package init() { value = LocalKey.next.add(1, ordering: .relaxed).newValue }
    }

    /// Runs `body` on the loop thread once the jobs queued for this turn have run, e.g. to flush what they
    /// batched with one write. Call on the loop thread only.
    package func atEndOfTurn(_ body: @escaping () -> Void) {
        endOfTurn.append(.closure(body))
        // Outside a drain (a libevent callback), make sure a drain runs the hook before the loop sleeps.
        requestDrain()
    }

    /// Runs `owner.endOfTurn(task)` on the loop thread once the jobs queued for this turn have run; the loop holds
    /// `owner` until then. Call on the loop thread only. For the hooks of the request path: no closure is made, and
    /// the owner needs no weak reference to itself (a weak reference gives its object a side table, and every retain
    /// of it then takes the runtime's slow path).
    package func atEndOfTurn(_ owner: some EndOfTurnWork, _ task: Int = 0) {
        endOfTurn.append(.work(owner, task))
        requestDrain()
    }

    // MARK: Timers

    /// A one-shot timer on this loop; cancel it with `cancel()`. Create and use on the loop thread.
    package final class Timer {
        private var event: OpaquePointer?
        private let action: () -> Void

        /// Arms a timer that calls `action` once after `seconds`.
        package init(loop: EventLoop, seconds: Double, action: @escaping () -> Void) {
            self.action = action
            // The timer object owns the event and frees it in cancel()/deinit, before it goes away,
            // so the unretained pointer is valid whenever the callback runs.
            event = event_new(loop.base, -1, 0, { _, _, arg in
                guard let arg else { return }
                let timer = Unmanaged<Timer>.fromOpaque(arg).takeUnretainedValue()
                timer.fire()
            }, Unmanaged.passUnretained(self).toOpaque())
            var tv = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - Double(Int(seconds))) * 1_000_000))
            event_add(event, &tv)
        }

        private func fire() {
            if let event { event_free(event) }
            event = nil
            let action = self.action
            action()  // may release this timer: nothing of `self` is touched after it
        }

        /// Disarms the timer (no-op after it fired).
        package func cancel() {
            if let event { event_free(event) }
            event = nil
        }

        deinit { cancel() }
    }
}

/// A group of event loops, one thread each.
package final class EventLoopGroup: Sendable {
    /// The loops.
    package let loops: [EventLoop]

    /// Creates and starts `count` loops.
    package init(count: Int, name: String = "postern") {
        loops = (0..<max(1, count)).map { EventLoop(name: "\(name)-\($0)") }
        for loop in loops { loop.start() }
    }

    /// Stops every loop.
    package func shutdown() {
        for loop in loops { loop.stop() }
    }

    /// The default worker count: one per core.
    static var defaultCount: Int { ProcessInfo.processInfo.activeProcessorCount }
}

extension EventLoop {
    /// Runs `body` on the loop thread and waits for its result (never call from the loop thread itself).
    package func runAndWait<T>(_ body: @escaping () -> T) -> T {
        if inLoop { return body() }
        let done = DispatchSemaphore(value: 0)
        let box = ResultBox<T>()
        let call = UncheckedSendable(body)
        execute {
            box.value = call.value()
            done.signal()
        }
        done.wait()
        // The semaphore orders the write before this read, so the value is set.
        return box.value!
    }
}

private final class ResultBox<T>: @unchecked Sendable {
    var value: T?
}
