import Foundation
@testable import PosternCore
import PosternHTTP

/// Query-string parsing and list query translation for the shipped resources: never crashes; on
/// success only the Directus parameters Postern sends, each once, with sane values.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let query = Fuzz.string(bytes, size)
    let items = QueryString.parse(query)
    // encode/decode is a round trip for every decoded name and value.
    for (name, value) in items {
        Fuzz.check(QueryString.decode(QueryString.encode(name)) == name, "encode/decode changed \(name.debugDescription)")
        Fuzz.check(QueryString.decode(QueryString.encode(value)) == value, "encode/decode changed \(value.debugDescription)")
    }
    let allowed: Set<String> = ["fields", "limit", "offset", "sort", "meta"]
    for mapper in Fuzz.mappers {
        guard let out = try? mapper.listQuery(items) else { continue }
        let names = out.map(\.0)
        Fuzz.check(Set(names).count == names.count, "a parameter is sent twice: \(out)")
        // The rest are filters: the search (`filter[_or][…]`) and the declared filters.
        Fuzz.check(names.allSatisfy { allowed.contains($0) || $0.hasPrefix("filter[") }, "unexpected parameter in \(out)")
        let sent = Dictionary(out, uniquingKeysWith: { a, _ in a })
        Fuzz.check(sent["fields"] == mapper.directusFieldList, "fields is not the mapped list: \(out)")
        Fuzz.check(sent["meta"] == "filter_count", "meta is not filter_count: \(out)")
        let limit = sent["limit"].flatMap { Int($0) }
        Fuzz.check(limit.map { (1...mapper.resource.maxLimit).contains($0) } == true, "bad limit in \(out)")
        let offset = sent["offset"].flatMap { Int($0) }
        Fuzz.check(offset.map { $0 >= 0 } == true, "bad offset in \(out)")
        if let sort = sent["sort"] {
            let directusNames = Set(mapper.resource.fields.flatMap { directusPaths($0.1) })
            for part in sort.split(separator: ",", omittingEmptySubsequences: false) {
                let name = part.hasPrefix("-") ? String(part.dropFirst()) : String(part)
                Fuzz.check(directusNames.contains(name), "sort names unmapped field \(name.debugDescription): \(out)")
            }
        }
        for (name, value) in out where name.hasPrefix("filter[") {
            Fuzz.check(!value.isEmpty, "empty filter value sent: \(out)")
        }
        // What goes on the wire parses back to the same pairs.
        let wire = QueryString.parse(QueryString.build(out))
        Fuzz.check(wire.map(\.name) == names && wire.map(\.value) == out.map(\.1), "wire form differs: \(out)")
    }
    return 0
}

/// The Directus paths a field reads, through its objects' members (a list is not a path one can sort by).
private func directusPaths(_ spec: FieldSpec) -> [String] {
    switch spec {
    case .path(let path): [path]
    case .object(let members): members.flatMap { directusPaths($0.1) }
    case .list: []
    }
}
