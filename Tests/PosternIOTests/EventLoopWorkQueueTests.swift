import Foundation
import Synchronization
import Testing
@testable import PosternIO
import PosternTesting

/// The loop's job queue: work from the loop's own thread (no lock, no wake-up) and from other threads all
/// runs, in order per thread; what a drain queues runs in that drain; a stop runs what was queued before it.
@Suite struct EventLoopWorkQueueTests {
    /// What ran, in order (appended on the loop thread only).
    final class Recorder: @unchecked Sendable {
        var entries: [(source: Int, seq: Int)] = []
        let expected: Int
        let done = DispatchSemaphore(value: 0)

        init(expected: Int) { self.expected = expected }

        func record(_ source: Int, _ seq: Int) {
            entries.append((source, seq))
            if entries.count == expected { done.signal() }
        }
    }

    /// The drains the loop's wake event has run so far, read on the loop thread (this read is one of them).
    private func drains(_ loop: EventLoop) -> Int {
        loop.runAndWait { loop.drainCount }
    }

    @Test func workFromTheLoopAndFromOtherThreadsAllRunsInOrderPerThread() async throws {
        let loop = EventLoop(name: "queue-test")
        loop.start()
        defer { loop.stop() }
        let threads = 4, perThread = 500, fromLoop = 500, yields = 200
        let recorder = Recorder(expected: threads * perThread + fromLoop + yields)
        // A task on the loop: each yield queues its job again, from the loop thread.
        let task = Task(executorPreference: loop) {
            for k in 0..<yields {
                recorder.record(-2, k)
                await Task.yield()
            }
        }
        // Closures queued on the loop thread by a closure running there.
        loop.execute {
            for k in 0..<fromLoop { loop.execute { recorder.record(-1, k) } }
        }
        let group = DispatchGroup()
        for source in 0..<threads {
            group.enter()
            Thread {
                for k in 0..<perThread { loop.execute { recorder.record(source, k) } }
                group.leave()
            }.start()
        }
        // A hang detector, not a speed assertion: lost work never signals.
        #expect(recorder.done.wait(timeout: .now() + 60) == .success, "some queued work never ran")
        await task.value
        #expect(group.wait(timeout: .now() + 10) == .success)
        let entries = loop.runAndWait { recorder.entries }
        for source in -2..<threads {
            let seqs = entries.filter { $0.source == source }.map(\.seq)
            let count = source == -2 ? yields : source == -1 ? fromLoop : perThread
            #expect(seqs == Array(0..<count), "source \(source) ran \(seqs.count) of \(count), or out of order")
        }
    }

    @Test func workQueuedWhileDrainingRunsInThatDrainWithoutAnotherWake() async throws {
        let loop = EventLoop(name: "queue-test")
        loop.start()
        defer { loop.stop() }
        /// Drain numbers seen on the loop thread.
        final class Seen: @unchecked Sendable {
            var start = -1, chainEnd = -1, taskEnd = -1, nextTurn = -1
            var timer: EventLoop.Timer?
            let done = DispatchSemaphore(value: 0)
        }
        let seen = Seen()
        /// A chain of closures, each queued by the previous one on the loop thread.
        final class Chain: @unchecked Sendable {
            let loop: EventLoop
            let seen: Seen
            init(loop: EventLoop, seen: Seen) { self.loop = loop; self.seen = seen }
            func step(_ left: Int) {
                guard left > 0 else {
                    seen.chainEnd = loop.drainCount
                    seen.done.signal()
                    return
                }
                loop.execute { self.step(left - 1) }
            }
        }
        let chain = Chain(loop: loop, seen: seen)
        loop.execute {
            seen.start = loop.drainCount
            chain.step(100)
            // A task started here, whose 100 yields each queue its job again from the loop thread.
            Task(executorPreference: loop) {
                for _ in 0..<100 { await Task.yield() }
                seen.taskEnd = loop.drainCount
                seen.done.signal()
            }
            // Once the chain and the task are done: a timer fires on the loop's next turn, after any other
            // drain the wake event would run for this turn.
            loop.atEndOfTurn {
                seen.timer = EventLoop.Timer(loop: loop, seconds: 0) {
                    seen.nextTurn = loop.drainCount
                    seen.done.signal()
                }
            }
        }
        // A hang detector, not a speed assertion: work queued in a drain and never run never signals.
        for _ in 0..<3 { #expect(seen.done.wait(timeout: .now() + 30) == .success) }
        let (start, chainEnd, taskEnd, nextTurn) = loop.runAndWait {
            (seen.start, seen.chainEnd, seen.taskEnd, seen.nextTurn)
        }
        // Everything ran in the drain that started it.
        #expect(chainEnd == start)
        #expect(taskEnd == start)
        // And the 200 pieces of work queued meanwhile woke nothing: no drain ran after it in that turn.
        #expect(nextTurn == start, "\(nextTurn - start) more drains in the turn that ran everything")
    }

    @Test func workQueuedFromALibeventCallbackRunsBeforeTheLoopSleeps() throws {
        let loop = EventLoop(name: "queue-test")
        loop.start()
        defer { loop.stop() }
        final class State: @unchecked Sendable {
            var timer: EventLoop.Timer?
            var drainsSeen: [Int] = []
            let done = DispatchSemaphore(value: 0)
        }
        let state = State()
        loop.execute {
            // The timer's action runs in a libevent callback, outside any drain.
            state.timer = EventLoop.Timer(loop: loop, seconds: 0) {
                for _ in 1...10 {
                    loop.execute {
                        state.drainsSeen.append(loop.drainCount)
                        if state.drainsSeen.count == 10 { state.done.signal() }
                    }
                }
            }
        }
        // A hang detector: without a drain requested from the callback, the closures would wait for ever.
        #expect(state.done.wait(timeout: .now() + 30) == .success, "work queued by a callback never ran")
        let seen = loop.runAndWait { state.drainsSeen }
        // All ten in one drain: one wake-up for the turn, not one per closure.
        #expect(seen.count == 10 && Set(seen).count == 1, "\(seen)")
    }

    @Test func stopRunsTheWorkQueuedBeforeIt() throws {
        for _ in 0..<20 {
            let loop = EventLoop(name: "queue-test")
            loop.start()
            let ran = Atomic<Int>(0)
            for _ in 0..<500 {
                loop.execute {
                    ran.add(1, ordering: .relaxed)
                    // Queued on the loop thread, possibly by the drain that runs after the loop stopped.
                    loop.execute { ran.add(1, ordering: .relaxed) }
                }
            }
            loop.stop()
            #expect(ran.load(ordering: .relaxed) == 1000)
        }
    }
}
