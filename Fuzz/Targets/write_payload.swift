import Foundation
@testable import PosternCore

/// Client write bodies → Directus payloads, in every mode for the shipped resources, plus the user
/// body helpers: never crashes; on success only writable Directus fields, string or null values.
@_cdecl("LLVMFuzzerTestOneInput")
public func fuzz(_ bytes: UnsafePointer<UInt8>, _ size: Int) -> CInt {
    let body = Fuzz.data(bytes, size)
    for mapper in Fuzz.mappers {
        // The Directus names of the writable fields (plain paths: a relation's fields are read-only).
        let paths = mapper.resource.fields.compactMap { field -> (String, String)? in
            guard case .path(let path) = field.1 else { return nil }
            return (field.0, path)
        }
        let writable = Set(paths.filter { mapper.resource.writable.contains($0.0) && $0.0 != "id" }.map(\.1))
        let required = Set(paths.filter { mapper.resource.required.contains($0.0) && writable.contains($0.1) }.map(\.1))
        for mode in [ResourceMapper.WriteMode.create, .update, .createOrUpdate] {
            guard let result = try? mapper.writePayload(body, mode: mode) else { continue }
            guard let members = result.payload.objectValue else {
                Fuzz.check(false, "payload is not an object: \(result.payload.text)")
                continue
            }
            let keys = members.map(\.0)
            Fuzz.check(Set(keys).count == keys.count, "duplicate key in payload \(result.payload.text)")
            Fuzz.check(Set(keys).isSubset(of: writable), "non-writable field in payload \(result.payload.text)")
            for (key, value) in members {
                switch value {
                case .string: break
                case .null: Fuzz.check(!required.contains(key), "required field \(key) null in \(result.payload.text)")
                default: Fuzz.check(false, "non-string value in payload \(result.payload.text)")
                }
            }
            if let id = result.id {
                Fuzz.check(mode == .createOrUpdate, "id outside createOrUpdate")
                Fuzz.check(mapper.isValidID(id), "invalid id \(id.debugDescription) accepted")
            }
            let isCreate = mode == .create || (mode == .createOrUpdate && result.id == nil)
            if isCreate {
                Fuzz.check(required.isSubset(of: Set(keys)), "create without a required field: \(result.payload.text)")
            } else {
                Fuzz.check(!members.isEmpty, "update with an empty payload")
            }
        }
    }
    // Login/register/refresh body helpers.
    if let object = try? UserHandlers.object(body) {
        Fuzz.check(object.objectValue != nil, "body helper accepted a non-object")
        for (keys, name) in [(["email", "username"], "email"), (["password"], "password"), (["refreshToken", "refresh_token"], "refreshToken")] {
            if let s = try? UserHandlers.string(object, keys, name: name) {
                Fuzz.check(!s.isEmpty, "empty \(name) accepted")
            }
        }
    }
    return 0
}
