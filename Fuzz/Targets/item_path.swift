import Foundation
@testable import PosternCore
import PosternHTTP

/// Path-segment decoding, id validation and the upstream item path, for every id type: on a valid
/// id the path is `/items/<collection>/<one segment>` with no dot segment, and it decodes back to the id.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let raw = Fuzz.string(bytes, size)
    // As the router does: the raw segment is percent-decoded, then validated.
    let candidates = [raw, QueryString.decodePath(raw)]
    for mapper in Fuzz.mappersByIDType {
        for id in candidates where mapper.isValidID(id) {
            let path = mapper.upstreamItemPath(id: id)
            Fuzz.check(path.hasPrefix(mapper.upstreamCollectionPath + "/"), "path leaves the collection: \(path)")
            Fuzz.check(path.utf8.filter { $0 == UInt8(ascii: "/") }.count == 3, "wrong number of / in \(path)")
            let segments = path.split(separator: "/", omittingEmptySubsequences: false)
            Fuzz.check(!segments.contains { $0 == ".." || $0 == "." }, "dot segment in \(path)")
            Fuzz.check(path.utf8.allSatisfy { b in
                (0x30...0x39).contains(b) || (0x41...0x5A).contains(b) || (0x61...0x7A).contains(b)
                    || b == UInt8(ascii: "-") || b == UInt8(ascii: "_") || b == UInt8(ascii: "~")
                    || b == UInt8(ascii: "%") || b == UInt8(ascii: "/")
            }, "unsafe byte in \(path)")
            let last = String(segments.last ?? "")
            Fuzz.check(!last.isEmpty, "empty id segment in \(path)")
            Fuzz.check(QueryString.decodePath(last) == id, "segment \(last) does not decode back to \(id.debugDescription)")
            switch mapper.resource.idType {
            case .integer: Fuzz.check(Int64(id) != nil, "integer id \(id.debugDescription) does not fit Int64")
            case .uuid: Fuzz.check(UUID(uuidString: id) != nil, "uuid id \(id.debugDescription) is not a UUID")
            case .string: Fuzz.check(id != "." && id != "..", "dot id accepted")
            }
        }
    }
    return 0
}
