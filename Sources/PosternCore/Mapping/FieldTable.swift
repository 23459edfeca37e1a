/// One mapped field of a resource, resolved once at start-up.
import PosternHTTP

struct MappedField: Sendable {
    /// The client-facing name (the key at its level of the output).
    let resourceName: String
    /// The Directus path it reads, as sent in `fields=` (relative to the row of its list, if in one). A raw
    /// many-to-one key whose relation is also read below reads `<field>.id` (Directus then answers an object).
    let directusName: String
    /// True for the resource's `id` field (rendered as a string, never null).
    let isID: Bool
    /// Never null in output (`""` instead); must be present on create.
    let isRequired: Bool
    /// A client may write it.
    let isWritable: Bool
    /// `"<resourceName>":` as UTF-8, ready to append to an output object.
    let keyBytes: [UInt8]
    /// Configured as a dot path, or inside a nested object or list: read through a relation, read-only.
    var isRelated = false

    /// The segments of `directusName`.
    var path: [Substring] { directusName.split(separator: ".") }
}

/// One output member of a resource, as a tree (docs/api.md, Relations).
indirect enum FieldNode: Sendable {
    /// A value read from one Directus path.
    case field(MappedField)
    /// A nested object: its members, in output order.
    case object(name: String, keyBytes: [UInt8], members: [FieldNode])
    /// A one-to-many list.
    case list(FieldList)

    /// The output name.
    var name: String {
        switch self {
        case .field(let field): return field.resourceName
        case .object(let name, _, _): return name
        case .list(let list): return list.name
        }
    }
}

/// A one-to-many list of a resource: what is asked upstream and how each row renders.
struct FieldList: Sendable {
    /// The output name.
    let name: String
    /// `"<name>":` as UTF-8.
    let keyBytes: [UInt8]
    /// The alias field.
    let from: String
    /// `deep[<from>][_sort]`, if any.
    let sort: String?
    /// `deep[<from>][_limit]`.
    let limit: Int
    /// Each row's members, in output order (paths relative to the row).
    let members: [FieldNode]
}

/// The lookup tables of one resource: built once at start-up, read on every request.
struct FieldTable: Sendable {
    /// The resource field that holds the key.
    static let idField = "id"

    /// The output, as a tree in config order.
    let nodes: [FieldNode]
    /// The top-level fields (plain or dot paths) in config (output) order.
    let fields: [MappedField]
    /// Resource field name → index into `fields`.
    let indexByResourceName: [String: Int]
    /// Directus field name → indices into `fields` (a Directus field may be mapped more than once).
    let indicesByDirectusName: [String: [Int]]
    /// The Directus field that holds the key (the one `id` maps to, else `id`).
    let directusIDField: String
    /// Top-level names that read through a relation (dot paths, nested objects, lists): read-only.
    let relatedNames: Set<String>
    /// True when every member is a top-level field of the collection itself (no relation).
    let isFlat: Bool
    /// Every Directus path the output reads, for `fields=` (lists' paths under their alias), in first-use order.
    let directusPaths: [String]
    /// The lists, in output order (their `deep` parameters).
    let lists: [FieldList]

    /// Resolves `resource`'s `fields` (and `detail_fields` when `detail`) into tables. Never traps, even on a
    /// config that validation would refuse.
    init(_ resource: ResourceConfig, detail: Bool = false) {
        let required = Set(resource.required)
        let writable = Set(resource.writable)
        var specs: [(String, FieldSpec)] = []
        var names = Set<String>()
        for (name, spec) in resource.fields + (detail ? resource.detailFields : []) where names.insert(name).inserted {
            specs.append((name, spec))
        }
        let nodes = Self.build(specs, expanded: Self.expandedRelations(specs), top: true, required: required, writable: writable)
        self.nodes = nodes
        var fields: [MappedField] = []
        var byResource: [String: Int] = [:]
        var byDirectus: [String: [Int]] = [:]
        var related = Set<String>()
        for node in nodes {
            guard case .field(let field) = node else {
                related.insert(node.name)
                continue
            }
            if field.isRelated { related.insert(field.resourceName) }
            byResource[field.resourceName] = fields.count
            byDirectus[field.directusName, default: []].append(fields.count)
            fields.append(field)
        }
        self.fields = fields
        self.indexByResourceName = byResource
        self.indicesByDirectusName = byDirectus
        self.relatedNames = related
        self.isFlat = related.isEmpty && !fields.contains { $0.directusName.contains(".") }
        self.directusIDField = byResource[Self.idField].map { fields[$0].directusName } ?? Self.idField
        var paths: [String] = []
        var seen = Set<String>()
        var lists: [FieldList] = []
        Self.collect(nodes, prefix: "", into: &paths, seen: &seen, lists: &lists)
        self.directusPaths = paths
        self.lists = lists
    }

    /// The first segments that some path of `specs` reads below (outside lists): Directus answers an object for
    /// them, so a raw key among them is read as `<field>.id`.
    static func expandedRelations(_ specs: [(String, FieldSpec)]) -> Set<String> {
        var out = Set<String>()
        for (_, spec) in specs {
            switch spec {
            case .path(let path):
                let segments = path.split(separator: ".")
                // Every proper prefix is an object in the answer.
                for n in stride(from: 1, to: segments.count, by: 1) { out.insert(segments.prefix(n).joined(separator: ".")) }
            case .object(let members):
                out.formUnion(expandedRelations(members))
            case .list:
                break
            }
        }
        return out
    }

    /// The nodes of `specs`; `expanded` are the paths answered as objects at this level.
    private static func build(_ specs: [(String, FieldSpec)], expanded: Set<String>, top: Bool,
                              required: Set<String>, writable: Set<String>) -> [FieldNode] {
        specs.map { name, spec -> FieldNode in
            var key: [UInt8] = []
            JSONValue.writeString(name, into: &key)
            key.append(UInt8(ascii: ":"))
            switch spec {
            case .path(let path):
                let read = expanded.contains(path) ? path + ".id" : path
                let plain = top && !path.contains(".")
                return .field(MappedField(resourceName: name, directusName: read,
                                          isID: top && name == Self.idField,
                                          isRequired: plain && required.contains(name),
                                          isWritable: plain && writable.contains(name) && name != Self.idField,
                                          keyBytes: key, isRelated: !plain))
            case .object(let members):
                return .object(name: name, keyBytes: key,
                               members: build(members, expanded: expanded, top: false, required: [], writable: []))
            case .list(let list):
                let inner = build(list.fields, expanded: expandedRelations(list.fields), top: false, required: [], writable: [])
                return .list(FieldList(name: name, keyBytes: key, from: list.from, sort: list.sort,
                                       limit: min(max(1, list.limit), ListSpec.maxLimit), members: inner))
            }
        }
    }

    /// Every Directus path below `nodes` (lists' under their alias), and the lists.
    private static func collect(_ nodes: [FieldNode], prefix: String, into paths: inout [String], seen: inout Set<String>,
                                lists: inout [FieldList]) {
        for node in nodes {
            switch node {
            case .field(let field):
                let path = prefix + field.directusName
                if seen.insert(path).inserted { paths.append(path) }
            case .object(_, _, let members):
                collect(members, prefix: prefix, into: &paths, seen: &seen, lists: &lists)
            case .list(let list):
                lists.append(list)
                collect(list.members, prefix: prefix + list.from + ".", into: &paths, seen: &seen, lists: &lists)
            }
        }
    }

    /// The Directus path that output path `name` (`author.name`, dot-separated through nested objects) reads; nil
    /// when there is no such field. Throws when it names a list or an object.
    func directusPath(ofOutput name: String) -> Result<String, OutputPathProblem>? {
        var nodes = self.nodes
        let parts = name.split(separator: ".", omittingEmptySubsequences: false)
        for (i, part) in parts.enumerated() {
            guard let node = nodes.first(where: { $0.name == part }) else { return nil }
            switch node {
            case .field(let field):
                return i == parts.count - 1 ? .success(field.directusName) : nil
            case .object(_, _, let members):
                if i == parts.count - 1 { return .failure(.object) }
                nodes = members
            case .list:
                return .failure(.list)
            }
        }
        return nil
    }

    /// Why an output path cannot be sorted by.
    enum OutputPathProblem: Error {
        /// It names a nested object.
        case object
        /// It names or goes through a one-to-many list.
        case list
    }
}
