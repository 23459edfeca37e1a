import Foundation
import Testing
@testable import PosternIO
import PosternTesting

/// A failed start stops event loops that have only just started (issue: `postern serve` with a store it
/// cannot open sometimes never exited). Under CPU load a loop thread can be preempted between announcing
/// that it runs and entering `event_base_loop`; a stop requested in that window must still end the loop.
@Suite(.serialized) struct EventLoopStopTests {
    @Test func startAndStopUnderLoadNeverHangs() throws {
        let spinners = Spinners(count: 2 * ProcessInfo.processInfo.activeProcessorCount)
        defer { spinners.stop() }
        var hung = 0
        for _ in 0..<200 {
            let finished = DispatchSemaphore(value: 0)
            // Create and stop on a helper thread, as `Application.build` does when the store cannot be opened;
            // the wait below only detects a hang (a stuck helper is abandoned, the test fails).
            Thread {
                let group = EventLoopGroup(count: 2, name: "stop-test")
                group.shutdown()
                finished.signal()
            }.start()
            if finished.wait(timeout: .now() + 10) == .timedOut {
                hung += 1
                break
            }
        }
        #expect(hung == 0, "an event loop never stopped")
    }
}
