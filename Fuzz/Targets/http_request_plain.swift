import Foundation
@testable import PosternHTTP

/// The request assembler's plain heads (`PlainRequestHead`, read without llhttp) against llhttp alone: the same bytes
/// in the same reads through an assembler that reads plain heads and through one that leaves every request to llhttp
/// give the connection the same steps (bytes parsed, requests with their fields, body, keep-alive and HTTP/1.0
/// verdicts, refusals with their status, reason and partial request, `100 Continue`s), request after request
/// (`RequestReplay`, shared with `PlainRequestHeadTests`). The first three input bytes choose where the rest is cut
/// into reads, the fourth the head limit and body ceiling. Checked in one read, cut, and byte by byte.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard let (stream, offsets, choice) = Fuzz.differential(bytes, size) else { return 0 }
    // Small limits one time in two: a 25- to 152-byte head, a 0- to 63-byte body.
    let limits = choice & 1 == 0 ? RequestReplay.limits()
        : RequestReplay.limits(maxHead: 25 + (choice >> 1), bodyCeiling: (choice >> 1) & 63)
    for reads in [[stream], AnswerReplay.cut(stream, at: offsets), stream.map { [$0] }] {
        let plain = RequestReplay.run(reads, plain: true, limits: limits)
        let reference = RequestReplay.run(reads, plain: false, limits: limits)
        Fuzz.check(plain == reference, """
            plain reading differs from llhttp in reads \(reads.map(\.count)) (head limit \(limits.maxHeaderBytes), \
            body ceiling \(limits.bodyCeiling)):
              plain: \(plain)
              llhttp: \(reference)
            """)
    }
    return 0
}
