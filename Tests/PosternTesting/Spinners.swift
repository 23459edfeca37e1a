import Foundation

/// Threads that keep every core busy until `stop()`.
package final class Spinners: @unchecked Sendable {
    private let lock = NSLock()
    private var running = true
    private let done = DispatchGroup()

    /// Starts `count` spinning threads.
    package init(count: Int) {
        for _ in 0..<count {
            done.enter()
            Thread { [self] in
                var x: UInt64 = 0
                while lock.withLock({ running }) {
                    for i in 0..<10_000 { x &+= UInt64(i) &* 31 }
                }
                if x == 42 { print("") }  // keeps the loop from being optimised away
                done.leave()
            }.start()
        }
    }

    /// Stops the threads and waits until they ended.
    package func stop() {
        lock.withLock { running = false }
        done.wait()
    }
}
