import FoundationEssentials
import PosternHTTP

/// Translates between one resource and its Directus collection (docs/api.md, Resources), with no I/O.
///
/// Built once per resource at start-up; every lookup table is precomputed. The tables live in one shared,
/// immutable object: a mapper is handed along every request of its resource, and copying it then costs
/// two retains (the tables and the renderer) instead of one per table, string and array.
struct ResourceMapper: Sendable {
    /// The precomputed, immutable part of a mapper (shared by every copy).
    private final class Tables: Sendable {
        let resource: ResourceConfig
        let directusFieldList: String
        let upstreamCollectionPath: String
        let searchDirectusFields: [String]
        let defaultListQuery: [(String, String)]
        let table: FieldTable
        let resourceNameByDirectus: [String: String]
        let queryParameters: Set<String>

        init(_ resource: ResourceConfig, _ table: FieldTable) {
            self.resource = resource
            self.table = table
            var seen = Set<String>()
            var csv: [String] = []
            for name in table.fields.map(\.directusName) + [resource.owner].compactMap({ $0 }) where seen.insert(name).inserted {
                csv.append(name)
            }
            let fieldList = csv.joined(separator: ",")
            self.directusFieldList = fieldList
            self.upstreamCollectionPath = "/items/" + QueryString.encode(resource.collection, encodingDots: true)
            self.searchDirectusFields = resource.effectiveSearchFields.compactMap { resource.directusField($0) }
            let limit = min(max(1, resource.defaultLimit), max(1, resource.maxLimit))
            self.defaultListQuery = [("fields", fieldList), ("limit", String(limit)), ("offset", "0"), ("meta", "filter_count")]
            var byDirectus: [String: String] = [:]
            for field in table.fields where byDirectus[field.directusName] == nil {
                byDirectus[field.directusName] = field.resourceName
            }
            self.resourceNameByDirectus = byDirectus
            self.queryParameters = Set(resource.listQueryParameters)
        }
    }

    private let tables: Tables

    /// The resource this mapper serves.
    var resource: ResourceConfig { tables.resource }
    /// Renders Directus answers as resource bodies in a single pass.
    var renderer: JSONTranscoder
    /// The `fields` CSV for Directus reads: every mapped Directus field, then the owner field if unmapped.
    var directusFieldList: String { tables.directusFieldList }
    /// `/items/<collection>`, the collection percent-encoded.
    var upstreamCollectionPath: String { tables.upstreamCollectionPath }
    /// The Directus fields `search` looks in (the resource's search fields, mapped), in config order.
    var searchDirectusFields: [String] { tables.searchDirectusFields }
    /// The Directus query of a list without any list parameter (`listQuery` of an empty query), built once:
    /// a plain `GET /api/v1/R` allocates no query.
    var defaultListQuery: [(String, String)] { tables.defaultListQuery }
    /// The list query parameters the resource understands: the list's own and its declared filters' names.
    var queryParameters: Set<String> { tables.queryParameters }
    /// The precomputed field tables.
    var table: FieldTable { tables.table }

    /// Builds the mapper and its tables for `resource`.
    init(_ resource: ResourceConfig) {
        let table = FieldTable(resource)
        self.tables = Tables(resource, table)
        self.renderer = JSONTranscoder(table: table, name: resource.name)
    }

    /// Directus field name → resource field name, for translating Directus validation errors (nil if unmapped).
    func resourceFieldName(forDirectus field: String) -> String? {
        tables.resourceNameByDirectus[field]
    }

    /// `/items/<collection>/<id>` with the id percent-encoded, so that no id can leave the collection.
    func upstreamItemPath(id: String) -> String {
        upstreamCollectionPath + "/" + QueryString.encode(id, encodingDots: true)
    }

    /// The owner value (a string, or integer rendered as string) of a Directus item answer `{"data":{…}}`,
    /// nil when null/absent or when the resource has no owner field. A non-JSON or wrongly shaped answer is 502.
    func owner(ofDirectusItem body: Data) throws(GatewayError) -> String? {
        let document = try JSONValue.parseAnswer(body)
        guard let item = document["data"], item.objectValue != nil else {
            throw .upstreamError("item answer has no \"data\" object")
        }
        guard let ownerField = resource.owner, let value = item[ownerField], !value.isNull else { return nil }
        // An expanded relation (`user_created.*`) carries the user id as its `id`.
        let key = value.objectValue != nil ? (value["id"] ?? .null) : value
        if key.isNull { return nil }
        guard let owner = key.idString else {
            throw .upstreamError("owner field \"\(ownerField)\" is a \(key.typeName)")
        }
        return owner
    }

    /// Is `raw` (an already percent-decoded path segment) a valid key for the resource's `idType`?
    ///
    /// - integer: 1…18 ASCII digits in canonical form (no sign, no leading zero except `0` itself),
    ///   so that one item has one URL.
    /// - uuid: 8-4-4-4-12 hex digits, either case.
    /// - string: 1…255 Unicode scalars, no `/`, no control character, and not `.` or `..`.
    func isValidID(_ raw: String) -> Bool {
        switch resource.idType {
        case .integer:
            let bytes = raw.utf8
            guard (1...18).contains(bytes.count), bytes.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }) else { return false }
            return bytes.count == 1 || bytes.first != UInt8(ascii: "0")
        case .uuid:
            let bytes = Array(raw.utf8)
            guard bytes.count == 36 else { return false }
            for (i, b) in bytes.enumerated() {
                if i == 8 || i == 13 || i == 18 || i == 23 {
                    guard b == UInt8(ascii: "-") else { return false }
                } else {
                    guard Self.isHexDigit(b) else { return false }
                }
            }
            return true
        case .string:
            let scalars = raw.unicodeScalars
            guard (1...255).contains(scalars.count), raw != ".", raw != ".." else { return false }
            return !scalars.contains { $0 == "/" || $0.properties.generalCategory == .control }
        }
    }

    /// True for `0-9`, `a-f`, `A-F`.
    private static func isHexDigit(_ b: UInt8) -> Bool {
        (0x30...0x39).contains(b) || (0x61...0x66).contains(b) || (0x41...0x46).contains(b)
    }
}
