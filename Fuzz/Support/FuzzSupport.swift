import Foundation
@testable import PosternCore

/// Helpers shared by every libFuzzer target (compiled into each target binary).
enum Fuzz {
    /// The shipped resources (`books`, `posts`) and their mappers, built once per process.
    static let mappers: [ResourceMapper] = ResourceConfig.shipped.map { ResourceMapper($0) }

    /// The shipped resources once per `IDType`, for the id-validation target.
    static let mappersByIDType: [ResourceMapper] = ResourceConfig.shipped.flatMap { resource in
        IDType.allCases.map { type in
            var r = resource
            r.idType = type
            return ResourceMapper(r)
        }
    }

    /// The input of a target that compares two readers of the same stream (`http_response_plain`, `http_request_plain`):
    /// the bytes after the first four, where the first three cut them into reads (offsets, sorted), and the fourth (a
    /// choice of ceilings and the like). Nil for an input under four bytes.
    static func differential(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> (stream: [UInt8], offsets: [Int], choice: Int)? {
        guard size >= 4 else { return nil }
        let stream = Array(UnsafeBufferPointer(start: bytes + 4, count: size - 4))
        return (stream, (0..<3).map { Int(bytes[$0]) * stream.count / 256 }.sorted(), Int(bytes[3]))
    }

    /// The input as bytes.
    static func data(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> Data {
        Data(bytes: bytes, count: size)
    }

    /// The input as a (lossily decoded) UTF-8 string.
    static func string(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> String {
        String(decoding: UnsafeBufferPointer(start: bytes, count: size), as: UTF8.self)
    }

    /// Fails the run (libFuzzer saves the input as `crash-…`) when `condition` is false.
    static func check(_ condition: @autoclosure () -> Bool, _ message: @autoclosure () -> String,
                      file: StaticString = #fileID, line: UInt = #line) {
        guard !condition() else { return }
        FileHandle.standardError.write(Data("FUZZ INVARIANT VIOLATED at \(file):\(line): \(message())\n".utf8))
        abort()
    }
}
