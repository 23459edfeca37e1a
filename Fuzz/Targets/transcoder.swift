import Foundation
@testable import PosternCore

/// The transcoders under test, each with its reference: the resources of the transcoder's tests
/// (`transcoderTestResources`: the shipped ones without their relations, which the reference does not render, and
/// one with awkward names).
private let pairs: [(JSONTranscoder, JSONValueRenderer)] = transcoderTestResources.map {
    (JSONTranscoder($0), JSONValueRenderer($0))
}

/// Differential: for any input, `JSONTranscoder` and the reference `JSONValueRenderer` both refuse it
/// (a 502), or both render it to the same bytes, which Foundation decodes to the same values.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Fuzz.data(bytes, size)
    for (transcoder, reference) in pairs {
        compare(body, "list", { () throws(GatewayError) in try transcoder.renderList(directusBody: body) },
                { () throws(GatewayError) in try reference.renderList(directusBody: body) })
        compare(body, "item", { () throws(GatewayError) in try transcoder.renderItem(directusBody: body) },
                { () throws(GatewayError) in try reference.renderItem(directusBody: body) })
    }
    return 0
}

/// Runs both renderers and checks that they agree.
private func compare(_ body: Data, _ what: String, _ fast: () throws(GatewayError) -> Data,
                     _ slow: () throws(GatewayError) -> Data) {
    let a = outcome(fast)
    let b = outcome(slow)
    switch (a, b) {
    case (.failure(let x), .failure(let y)):
        Fuzz.check(x.status == 502 && y.status == 502, "\(what): refusals are not 502: \(x.status), \(y.status)")
    case (.success(let x), .success(let y)):
        Fuzz.check(x == y, "\(what): transcoder \(text(x)) ≠ reference \(text(y))")
        let dx = try? JSONSerialization.jsonObject(with: x) as? NSObject
        let dy = try? JSONSerialization.jsonObject(with: y) as? NSObject
        Fuzz.check(dx != nil && dx == dy, "\(what): Foundation decodes \(text(x)) and \(text(y)) differently")
    case (.success(let x), .failure(let y)):
        Fuzz.check(false, "\(what): transcoder rendered \(text(x)), reference refused: \(y.cause ?? "")")
    case (.failure(let x), .success(let y)):
        Fuzz.check(false, "\(what): transcoder refused (\(x.cause ?? "")), reference rendered \(text(y))")
    }
}

/// The result of one render.
private func outcome(_ render: () throws(GatewayError) -> Data) -> Result<Data, GatewayError> {
    do { return .success(try render()) } catch { return .failure(error) }
}

/// Bytes as (lossy) text, for messages.
private func text(_ data: Data) -> String { String(decoding: data, as: UTF8.self) }
