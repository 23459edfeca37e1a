import CEvent
import FoundationEssentials
import Glibc

/// Random 64-bit words from the kernel's CSPRNG (`getrandom(2)`), drawn 4 KiB at a time into a buffer per event
/// loop, so that a request's ids cost three loads and, one request in about 170, a system call: no lock, no
/// OpenSSL call, nothing shared between loops. Code off every loop (tools, tests) shares one buffer behind a lock.
/// The words are unpredictable from each other (W3C Trace Context asks trace ids to be random); they are not kept
/// secret, so a buffer is not wiped.
package enum KernelRandom {
    /// Bytes drawn per refill.
    static let refillBytes = 4096

    /// One buffer of words and the next one to hand out. Used by one thread at a time (its loop's, or under
    /// `sharedLock`), hence unchecked.
    final class Buffer: @unchecked Sendable {
        private let words: UnsafeMutablePointer<UInt64>
        private let count = KernelRandom.refillBytes / MemoryLayout<UInt64>.size
        private var next: Int

        init() {
            words = .allocate(capacity: count)
            next = count
        }

        deinit { words.deallocate() }

        /// The next word, refilling the buffer first when it is spent.
        @inline(__always)
        func take() -> UInt64 {
            if next == count { refill() }
            defer { next += 1 }
            return words[next]
        }

        /// Fills the whole buffer from `getrandom` (a read of up to 256 bytes is never cut short; a longer one may be,
        /// by a signal, and is then continued). A kernel without `getrandom` (before Linux 3.17) cannot run Postern.
        private func refill() {
            let bytes = UnsafeMutableRawPointer(words)
            var filled = 0
            while filled < KernelRandom.refillBytes {
                let n = getrandom(bytes + filled, KernelRandom.refillBytes - filled, 0)
                if n > 0 {
                    filled += n
                } else if errno != EINTR {
                    fatalError("getrandom failed: \(String(cString: strerror(errno)))")
                }
            }
            next = 0
        }
    }

    private static let key = EventLoop.LocalKey()
    private static let shared = Buffer()
    private static let sharedLock = PlainLock()

    /// Three random words: on an event loop's thread from that loop's buffer, elsewhere from the shared one.
    @inline(__always)
    package static func threeWords() -> (UInt64, UInt64, UInt64) {
        if let buffer = EventLoop.currentLocal(key, make: { Buffer() }) {
            return (buffer.take(), buffer.take(), buffer.take())
        }
        return sharedLock.withLock { (shared.take(), shared.take(), shared.take()) }
    }
}
