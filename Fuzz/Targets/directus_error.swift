import Foundation
@testable import PosternCore
import PosternHTTP

/// Directus error answers → `DirectusError` → gateway error: never crashes, the status is one Postern
/// may answer, and field names are mapped through the shipped resources. The first two input bytes
/// choose the upstream status (100…599).
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    guard size >= 2 else { return 0 }
    let status = 100 + (Int(bytes[0]) << 8 | Int(bytes[1])) % 500
    let body = Fuzz.data(bytes + 2, size - 2)
    let error = DirectusError.from(UpstreamResponse(status: status, body: body))
    // A 503 is Directus saying it cannot serve now: an API error (SERVICE_UNAVAILABLE) on purpose; any other
    // 5xx is a bad answer.
    if status >= 500 && status != 503 { Fuzz.check(error.status == nil, "5xx decoded as an API error") }
    if status == 503 { Fuzz.check(error.status == 503, "a 503 not decoded as Directus's SERVICE_UNAVAILABLE") }
    let allowed: Set<Int> = [400, 401, 403, 404, 409, 429, 502, 503, 504]
    for mapper in Fuzz.mappers {
        let gateway = error.gatewayError(fieldName: mapper.resourceFieldName(forDirectus:))
        Fuzz.check(allowed.contains(gateway.status), "unexpected status \(gateway.status) for \(error)")
        Fuzz.check(!gateway.code.rawValue.isEmpty && !gateway.message.isEmpty, "empty code or message")
        _ = ErrorBodyCheck.render(gateway)
    }
    return 0
}

/// Renders the error body as a client would get it; it must be JSON.
enum ErrorBodyCheck {
    static func render(_ error: GatewayError) -> Bool {
        let body = JSONValue.object([("error", .string(error.message)), ("code", .string(error.code.rawValue))]).serialized()
        Fuzz.check((try? JSONValue.parse(body)) != nil, "error body is not JSON")
        return true
    }
}
