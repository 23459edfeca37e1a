import Foundation
@testable import PosternCore
import PosternHTTP

/// JSON parse → serialize → parse: a text the parser accepts serializes to a text it accepts again,
/// to an equal value, and serialization is a fixed point after one round.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let input = Fuzz.data(bytes, size)
    guard let first = try? JSONValue.parse(input) else { return 0 }
    let text1 = first.serialized()
    let second: JSONValue
    do {
        second = try JSONValue.parse(text1)
    } catch {
        Fuzz.check(false, "serialized text does not parse (\(error)): \(String(decoding: text1, as: UTF8.self))")
        return 0
    }
    Fuzz.check(first == second, "round trip changed the value: \(first) vs \(second)")
    let text2 = second.serialized()
    Fuzz.check(text1 == text2, "serialization is not stable: \(first.text) vs \(second.text)")
    return 0
}
