import Foundation
@testable import PosternHTTP

/// The upstream answer parser's plain heads (`PlainAnswerHead`, read without llhttp) against llhttp alone: the
/// same bytes in the same reads through a parser that reads plain heads and through one that leaves every answer
/// to llhttp give the connection the same outcomes, statuses, fields, bodies, keep-alive verdicts and leftover
/// bytes, answer after answer (`AnswerReplay`, shared with `PlainAnswerHeadTests`). The first three input bytes
/// choose where the rest is cut into reads, the fourth the ceilings and the fields kept. Checked in one read, cut,
/// and byte by byte.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let (stream, offsets, choice) = Fuzz.differential(bytes, size) else { return 0 }
    // Small ceilings one time in two: a 24- to 151-byte head, a 0- to 63-byte body.
    let (maxBody, maxHead) = choice & 1 == 0 ? (UpstreamHTTPClient.defaultMaxResponseBytes, UpstreamResponseParser.headCeiling)
        : ((choice >> 1) & 63, 24 + (choice >> 1))
    let kept: [StaticString]? = choice & 0x80 == 0 ? nil : ["Retry-After", "Content-Length"]
    for reads in [[stream], AnswerReplay.cut(stream, at: offsets), stream.map { [$0] }] {
        let plain = AnswerReplay.run(reads, plain: true, kept: kept, maxBody: maxBody, maxHead: maxHead)
        let reference = AnswerReplay.run(reads, plain: false, kept: kept, maxBody: maxBody, maxHead: maxHead)
        Fuzz.check(plain == reference, """
            plain reading differs from llhttp in reads \(reads.map(\.count)) (ceilings \(maxBody), \(maxHead)):
              plain: \(plain)
              llhttp: \(reference)
            """)
    }
    return 0
}
