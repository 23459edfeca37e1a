/// One mapped field of a resource, resolved once at start-up.
import PosternHTTP

struct MappedField: Sendable {
    /// The client-facing name.
    let resourceName: String
    /// The Directus field name.
    let directusName: String
    /// True for the resource's `id` field (rendered as a string, never null).
    let isID: Bool
    /// Never null in output (`""` instead); must be present on create.
    let isRequired: Bool
    /// A client may write it.
    let isWritable: Bool
    /// `"<resourceName>":` as UTF-8, ready to append to an output object.
    let keyBytes: [UInt8]
}

/// The lookup tables of one resource: built once at start-up, read on every request.
struct FieldTable: Sendable {
    /// The resource field that holds the key.
    static let idField = "id"

    /// Mapped fields in config (output) order.
    let fields: [MappedField]
    /// Resource field name → index into `fields`.
    let indexByResourceName: [String: Int]
    /// Directus field name → indices into `fields` (a Directus field may be mapped more than once).
    let indicesByDirectusName: [String: [Int]]
    /// The Directus field that holds the key (the one `id` maps to, else `id`).
    let directusIDField: String

    /// Resolves `resource` into tables. Never traps, even on a config that validation would refuse.
    init(_ resource: ResourceConfig) {
        let required = Set(resource.required)
        let writable = Set(resource.writable)
        var fields: [MappedField] = []
        var byResource: [String: Int] = [:]
        var byDirectus: [String: [Int]] = [:]
        for (resourceName, directusName) in resource.fields where byResource[resourceName] == nil {
            var key: [UInt8] = []
            JSONValue.writeString(resourceName, into: &key)
            key.append(UInt8(ascii: ":"))
            byResource[resourceName] = fields.count
            byDirectus[directusName, default: []].append(fields.count)
            fields.append(MappedField(resourceName: resourceName, directusName: directusName,
                                      isID: resourceName == Self.idField,
                                      isRequired: required.contains(resourceName),
                                      isWritable: writable.contains(resourceName) && resourceName != Self.idField,
                                      keyBytes: key))
        }
        self.fields = fields
        self.indexByResourceName = byResource
        self.indicesByDirectusName = byDirectus
        self.directusIDField = byResource[Self.idField].map { fields[$0].directusName } ?? Self.idField
    }
}
