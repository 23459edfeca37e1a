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
        let deepQuery: [(String, String)]
        let readQuery: [(String, String)]
        let upstreamCollectionPath: String
        let searchDirectusFields: [String]
        let defaultListQuery: [(String, String)]
        let table: FieldTable
        let detailTable: FieldTable
        let resourceNameByDirectus: [String: String]
        let detailRenderer: JSONTranscoder?
        let queryParameters: Set<String>

        init(_ resource: ResourceConfig, _ table: FieldTable, _ detailTable: FieldTable, detailRenderer: JSONTranscoder?) {
            self.resource = resource
            self.detailRenderer = detailRenderer
            self.table = table
            self.detailTable = detailTable
            let fieldList = Self.fieldList(table, owner: resource.owner)
            self.directusFieldList = fieldList
            self.deepQuery = Self.deep(table)
            self.readQuery = [("fields", Self.fieldList(detailTable, owner: resource.owner))] + Self.deep(detailTable)
            self.upstreamCollectionPath = "/items/" + QueryString.encode(resource.collection, encodingDots: true)
            self.searchDirectusFields = resource.effectiveSearchFields.compactMap { resource.directusField($0) }
            let limit = min(max(1, resource.defaultLimit), max(1, resource.maxLimit))
            self.defaultListQuery = [("fields", fieldList)] + deepQuery
                + [("limit", String(limit)), ("offset", "0"), ("meta", "filter_count")]
            var byDirectus: [String: String] = [:]
            for field in table.fields where byDirectus[field.directusName] == nil && !table.relatedNames.contains(field.resourceName) {
                byDirectus[field.directusName] = field.resourceName
            }
            self.resourceNameByDirectus = byDirectus
            self.queryParameters = Set(resource.listQueryParameters)
        }

        /// The `fields` CSV of `table`: every path it reads, then the owner field if unread (as `<owner>.id`
        /// when a path reads below it: Directus then answers an object).
        static func fieldList(_ table: FieldTable, owner: String?) -> String {
            var paths = table.directusPaths
            if let owner {
                let expanded = paths.contains { $0.hasPrefix(owner + ".") }
                let read = expanded ? owner + ".id" : owner
                if !paths.contains(read) { paths.append(read) }
            }
            return paths.joined(separator: ",")
        }

        /// `deep[<alias>][_limit]` and `deep[<alias>][_sort]` of every list of `table`.
        static func deep(_ table: FieldTable) -> [(String, String)] {
            table.lists.flatMap { list -> [(String, String)] in
                var pairs = [("deep[\(list.from)][_limit]", String(list.limit))]
                if let sort = list.sort { pairs.append(("deep[\(list.from)][_sort]", sort)) }
                return pairs
            }
        }
    }

    private let tables: Tables

    /// The resource this mapper serves.
    var resource: ResourceConfig { tables.resource }
    /// Renders Directus answers as resource bodies in a single pass (`fields`: lists and writes).
    var renderer: JSONTranscoder
    /// Renders `GET /{id}` answers (`fields` and `detail_fields`; `renderer` without detail fields).
    var detailRenderer: JSONTranscoder { tables.detailRenderer ?? renderer }
    /// The `fields` CSV for Directus lists and writes: every mapped Directus path, then the owner field if unmapped.
    var directusFieldList: String { tables.directusFieldList }
    /// The `deep` pairs of the lists in `fields` (empty without one).
    var deepQuery: [(String, String)] { tables.deepQuery }
    /// The Directus query of `GET /{id}`: `fields` with `detail_fields`, and their `deep` pairs.
    var readQuery: [(String, String)] { tables.readQuery }
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
    /// The field tables of `GET /{id}`.
    var detailTable: FieldTable { tables.detailTable }

    /// Builds the mapper and its tables for `resource`.
    init(_ resource: ResourceConfig) {
        let table = FieldTable(resource)
        let detailTable = resource.detailFields.isEmpty ? table : FieldTable(resource, detail: true)
        let renderer = JSONTranscoder(table: table, name: resource.name)
        self.tables = Tables(resource, table, detailTable,
                             detailRenderer: resource.detailFields.isEmpty ? nil : JSONTranscoder(table: detailTable, name: resource.name))
        self.renderer = renderer
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
    func owner(ofDirectusItem body: HTTPBody) throws(GatewayError) -> String? {
        let document = try JSONValue.parseAnswer(body.data)
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
