import Foundation
@testable import PosternHTTP

/// What a client connection gets from a stream of requests fed to an `HTTPRequestAssembler` in given reads, driven as
/// `HTTPConnection.drive` drives it: each step in turn (how many bytes it parsed, the request with its keep-alive and
/// HTTP/1.0 verdicts, or the refusal with its status, reason and the partial request it carries), the `100 Continue`s,
/// and whether a request is open after each step. Compared between an assembler that reads plain heads itself and one
/// that leaves every request to llhttp (`PlainRequestHeadTests`, the fuzz target `http_request_plain`).
struct RequestReplay: Equatable, CustomStringConvertible {
    /// One step and what it gave.
    struct Step: Equatable, CustomStringConvertible {
        /// The read it came in, and the bytes it parsed.
        var read: Int
        var parsed: Int
        /// `request`, `needMore`, or the refusal's status.
        var kind: String
        var method = ""
        var path = ""
        var query = ""
        /// The fields, `name: value`.
        var headers: [String] = []
        var body = Data()
        var keepAlive = false
        var http10 = false
        var reason = ""
        var continueDue = false
        var messageOpen = false
        var description: String {
            "\(kind)@\(read)+\(parsed) \(method) \(path)?\(query) \(headers) body=\(body.count) keepAlive=\(keepAlive) "
                + "http10=\(http10) \(reason) continue=\(continueDue) open=\(messageOpen)"
        }
    }

    var steps: [Step] = []
    var description: String { steps.map(\.description).joined(separator: "; ") }

    /// The requests after the first five at most are not followed.
    private static let maxRequests = 6

    /// Limits with the given head limit and body ceiling.
    static func limits(maxHead: Int = ServerLimits().maxHeaderBytes, bodyCeiling: Int = ServerLimits().bodyCeiling) -> ServerLimits {
        var limits = ServerLimits()
        limits.maxHeaderBytes = maxHead
        limits.bodyCeiling = bodyCeiling
        return limits
    }

    /// Feeds `reads` to an assembler with `limits`; `plain`: whether it reads plain heads itself. Every other request
    /// handed out is kept to the end (a handler may hold its request while the next is parsed): its fields must
    /// read the same then.
    static func run(_ reads: [[UInt8]], plain: Bool, limits: ServerLimits = ServerLimits()) -> RequestReplay {
        let assembler = HTTPRequestAssembler(limits: limits, peer: "192.0.2.7", readsPlainHeads: plain)
        var replay = RequestReplay()
        var kept: [(request: HTTPRequest, headers: [String])] = []
        var requests = 0
        var pending: [UInt8] = []
        reading: for (index, read) in reads.enumerated() {
            pending += read
            var start = 0
            while start < pending.count {
                let (n, outcome) = pending.withUnsafeBytes { raw in
                    // `start < pending.count`: the buffer is not empty.
                    assembler.parse(raw.baseAddress! + start, count: raw.count - start)
                }
                start += n
                var step = Step(read: index, parsed: n, kind: "needMore", continueDue: assembler.takeContinue(),
                                messageOpen: assembler.messageOpen)
                switch outcome {
                case .needMore:
                    replay.steps.append(step)
                case .request(let request, let keepAlive, let http10):
                    step.kind = "request"
                    describe(request, in: &step)
                    step.keepAlive = keepAlive
                    step.http10 = http10
                    replay.steps.append(step)
                    if requests % 2 == 0 { kept.append((request, step.headers)) }
                    requests += 1
                    guard keepAlive, requests < maxRequests else { break reading }
                case .refused(let refusal):
                    switch refusal {
                    case .badFraming(let request, let reason):
                        step.kind = "400"
                        step.reason = reason
                        describe(request, in: &step)
                    case .bodyTooLarge(let request):
                        step.kind = "413"
                        describe(request, in: &step)
                    case .requestTimeout:
                        step.kind = "408"
                    }
                    replay.steps.append(step)
                    break reading
                }
            }
            pending.removeFirst(start)
        }
        for (request, headers) in kept where fields(request) != headers {
            replay.steps.append(Step(read: -1, parsed: 0, kind: "a kept request's fields changed: \(headers)"))
        }
        return replay
    }

    /// The request's method, path, query, fields and body into `step`.
    private static func describe(_ request: HTTPRequest, in step: inout Step) {
        step.method = request.method.description
        step.path = request.path
        step.query = request.query
        step.headers = fields(request)
        step.body = request.body
    }

    /// The request's fields, `name: value`.
    private static func fields(_ request: HTTPRequest) -> [String] {
        request.headers.map { "\($0.0): \($0.1)" }
    }
}
