import Foundation
@testable import PosternHTTP

/// What an upstream connection gets from a stream of answers fed to an `UpstreamResponseParser` in given reads:
/// each outcome in turn, with what the parser hands over for a complete one. After a complete answer the parser is
/// reset and fed the bytes after it, as the connection does for a call pipelined behind; the end of the stream
/// follows the last read. Compared between a parser that reads plain heads itself and one that leaves every
/// answer to llhttp (`PlainAnswerHeadTests`, the fuzz target `http_response_plain`).
struct AnswerReplay: Equatable, CustomStringConvertible {
    /// One outcome and what the parser held when it came.
    struct Step: Equatable, CustomStringConvertible {
        var outcome: UpstreamResponseParser.Outcome
        /// The read that gave it (the reads' count: the end of the stream).
        var read: Int
        var status = 0
        /// The kept fields, `name: value`.
        var headers: [String] = []
        var body = Data()
        var keepAlive = false
        var description: String {
            "\(outcome) at read \(read): \(status) \(headers) body=\(body.count) keepAlive=\(keepAlive)"
        }
    }

    var steps: [Step] = []
    var description: String { steps.map(\.description).joined(separator: "; ") }

    /// The answers after the first three at most are not followed.
    private static let maxAnswers = 4

    /// Feeds `reads` to a parser keeping `kept` (every field when nil) with the given ceilings; `plain`: whether
    /// it reads plain heads itself.
    static func run(_ reads: [[UInt8]], plain: Bool, kept: [StaticString]? = nil,
                    maxBody: Int = UpstreamHTTPClient.defaultMaxResponseBytes,
                    maxHead: Int = UpstreamResponseParser.headCeiling) -> AnswerReplay {
        let parser = UpstreamResponseParser(keptHeaders: kept, maxBodyBytes: maxBody, maxHeadBytes: maxHead,
                                            readsPlainHeads: plain)
        var replay = AnswerReplay()
        func record(_ outcome: UpstreamResponseParser.Outcome, _ read: Int) {
            var step = Step(outcome: outcome, read: read)
            if case .complete = outcome {
                step.status = parser.status
                step.keepAlive = parser.keepAlive
                let (headers, body) = parser.takeHeadersAndBody()
                step.headers = headers.map { "\($0.0): \($0.1)" }
                step.body = body.data
            }
            replay.steps.append(step)
        }
        for (index, read) in reads.enumerated() {
            var bytes = read[...]
            while true {
                let outcome = bytes.withUnsafeBytes { parser.feed($0) }
                guard outcome != .needMore else { break }
                record(outcome, index)
                guard case .complete(let leftover) = outcome, replay.steps.count < maxAnswers else { return replay }
                parser.reset()
                if leftover == 0 { break }
                bytes = bytes.suffix(leftover)
            }
        }
        record(parser.feedEndOfStream(), reads.count)
        return replay
    }

    /// `stream` cut before each of `offsets` (sorted; offsets outside it or repeated cut nothing).
    static func cut(_ stream: [UInt8], at offsets: [Int]) -> [[UInt8]] {
        var reads: [[UInt8]] = []
        var from = 0
        for offset in offsets + [stream.count] where offset > from && offset <= stream.count {
            reads.append(Array(stream[from..<offset]))
            from = offset
        }
        return reads.isEmpty ? [stream] : reads
    }
}
