import FoundationEssentials
import Glibc

/// Bytes in memory of their own (from `malloc`), freed with the last reference. Immutable once made.
package final class HeapBytes: @unchecked Sendable {
    /// The first byte.
    package let base: UnsafeMutableRawPointer
    /// How many bytes.
    package let count: Int

    /// Takes over `base`, a `malloc` allocation holding at least `count` bytes: freed with this object.
    package init(taking base: UnsafeMutableRawPointer, count: Int) {
        self.base = base
        self.count = count
    }

    deinit { free(base) }
}

/// A message body: a `Data`, or `HeapBytes`. The request path makes its bodies as `HeapBytes` (an upstream answer's
/// body, the transcoder's output): one object of ours, where a `Data` holds a storage object of Foundation's whose
/// making and freeing cost about 500 instructions more per body (its checked accesses, its deallocator, the copies of
/// its representation). Everything else keeps `Data`.
package enum HTTPBody: Sendable {
    /// Bytes in a `Data`.
    case data(Data)
    /// Bytes of our own.
    case heap(HeapBytes)

    /// No bytes.
    package static let empty = HTTPBody.data(Data())

    /// How many bytes.
    package var count: Int {
        switch self {
        case .data(let data): data.count
        case .heap(let bytes): bytes.count
        }
    }

    /// True when there are no bytes.
    package var isEmpty: Bool { count == 0 }

    /// Calls `body` with the bytes, valid only during the call.
    package func withUnsafeBytes<Result>(_ body: (UnsafeRawBufferPointer) -> Result) -> Result {
        switch self {
        case .data(let data): data.withUnsafeBytes(body)
        case .heap(let bytes): body(UnsafeRawBufferPointer(start: bytes.base, count: bytes.count))
        }
    }

    /// The bytes as a `Data` (copied from `HeapBytes`).
    package var data: Data {
        switch self {
        case .data(let data): data
        case .heap(let bytes): Data(bytes: bytes.base, count: bytes.count)
        }
    }
}
