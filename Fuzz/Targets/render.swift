import Foundation
@testable import PosternCore
import PosternHTTP

/// Directus answers → client bodies (list and item) and the owner lookup, for the shipped resources:
/// never crashes; on success the output is JSON of the contract's shape.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Fuzz.data(bytes, size)
    for mapper in Fuzz.mappers {
        let name = mapper.resource.name
        if let out = try? mapper.renderer.renderList(directusBody: body) {
            let count = checkShape(out, name: name, mapper: mapper)
            _ = count
        }
        if let out = try? mapper.renderer.renderItem(directusBody: body) {
            let count = checkShape(out, name: name, mapper: mapper)
            Fuzz.check(count == 1, "item answer rendered \(count) items")
        }
        if let owner = try? mapper.owner(ofDirectusItem: .data(body)) {
            Fuzz.check(!owner.isEmpty, "empty owner")
        }
    }
    return 0
}

/// Checks `{"<name>":[…],"total":N}` with every item's `id` a non-empty string, required fields
/// present and not null, only mapped fields; returns the number of items.
private func checkShape(_ out: Data, name: String, mapper: ResourceMapper) -> Int {
    let text = String(decoding: out, as: UTF8.self)
    guard let doc = try? JSONValue.parse(out) else {
        Fuzz.check(false, "rendered body is not JSON: \(text)")
        return 0
    }
    guard let members = doc.objectValue, members.map(\.0) == [name, "total"] else {
        Fuzz.check(false, "rendered body has the wrong keys: \(text)")
        return 0
    }
    guard case .int(let total)? = doc["total"], total >= 0 else {
        Fuzz.check(false, "total is not a non-negative integer: \(text)")
        return 0
    }
    guard let items = doc[name]?.arrayValue else {
        Fuzz.check(false, "collection is not an array: \(text)")
        return 0
    }
    let mapped = Set(mapper.resource.fields.map(\.0))
    for item in items {
        guard let fields = item.objectValue else {
            Fuzz.check(false, "item is not an object: \(text)")
            continue
        }
        Fuzz.check(Set(fields.map(\.0)).isSubset(of: mapped), "unmapped field in \(text)")
        Fuzz.check(Set(fields.map(\.0)).count == fields.count, "duplicate field in \(text)")
        Fuzz.check(item["id"]?.stringValue.map { !$0.isEmpty } == true, "id is not a non-empty string: \(text)")
        for field in mapper.resource.required {
            // The SwiftUI client decodes required fields as strings.
            Fuzz.check(item[field]?.stringValue != nil, "required \(field) missing or not a string: \(text)")
        }
        for (_, value) in fields { Fuzz.check(!value.isNull, "null value rendered: \(text)") }
    }
    return items.count
}
