import FoundationEssentials
import PosternHTTP

/// Write body translation (docs/api.md, Resources).
extension ResourceMapper {
    /// What kind of write a body is for.
    enum WriteMode: Sendable, Equatable {
        /// `POST` without an `id`: required fields must be present.
        case create
        /// `PATCH`/`PUT`: a partial update; at least one writable field.
        case update
        /// `POST` in the tutorial's compatibility form: an `id` in the body selects an update of that item.
        case createOrUpdate
    }

    /// A client body translated for Directus.
    struct WritePayload: Sendable, Equatable {
        /// The item to update, from the body's `id` (only in `createOrUpdate` mode), else nil.
        var id: String?
        /// The Directus payload: an object keyed by Directus field names, in config order.
        var payload: JSONValue

        /// Builds a payload.
        init(id: String?, payload: JSONValue) {
            self.id = id
            self.payload = payload
        }
    }

    /// Translates a client JSON body into a Directus payload. Every problem is 400 `invalid_request`
    /// naming the field: not JSON, not an object, a duplicate, unknown or read-only field (related fields are
    /// read-only), `id` outside
    /// `createOrUpdate` (where it must be a valid key, as a string or an integer), a value that is not a
    /// string or null, a required field null (or missing on create), or an update with no writable field.
    func writePayload(_ body: Data, mode: WriteMode) throws(GatewayError) -> WritePayload {
        let document: JSONValue
        do {
            document = try JSONValue.parse(body)
        } catch {
            throw .invalidRequest("request body is not valid JSON")
        }
        guard case .object(let members) = document else {
            throw .invalidRequest("request body must be a JSON object")
        }

        var values = [JSONValue?](repeating: nil, count: table.fields.count)
        var seen = Set<String>()
        var id: String?
        for (name, value) in members {
            guard seen.insert(name).inserted else { throw .invalidRequest("field \"\(name)\" is given twice") }
            if name == FieldTable.idField, mode == .createOrUpdate {
                id = try bodyID(value)
                continue
            }
            if detailTable.relatedNames.contains(name) {
                throw .invalidRequest("field \"\(name)\" reads through a relation and is read-only")
            }
            guard let index = table.indexByResourceName[name] else {
                throw .invalidRequest("unknown field \"\(name)\"")
            }
            let field = table.fields[index]
            guard field.isWritable else { throw .invalidRequest("field \"\(name)\" is read-only") }
            switch value {
            case .string: break
            case .null where !field.isRequired: break
            case .null: throw .invalidRequest("field \"\(name)\" is required")
            default: throw .invalidRequest("field \"\(name)\" must be a string or null, not a \(value.typeName)")
            }
            values[index] = value
        }

        let isCreate = mode == .create || (mode == .createOrUpdate && id == nil)
        if isCreate, let missing = table.fields.indices.first(where: {
            table.fields[$0].isWritable && table.fields[$0].isRequired && values[$0] == nil
        }) {
            throw .invalidRequest("field \"\(table.fields[missing].resourceName)\" is required")
        }
        var payload: [(String, JSONValue)] = []
        for (index, field) in table.fields.enumerated() {
            if let value = values[index] { payload.append((field.directusName, value)) }
        }
        if !isCreate, payload.isEmpty {
            throw .invalidRequest("no writable field given")
        }
        return WritePayload(id: id, payload: .object(payload))
    }

    /// The `id` of a compatibility `POST` body: nil for null, else a valid key given as a string or an integer
    /// (a number without a fraction, such as `12.0`, counts as one).
    private func bodyID(_ value: JSONValue) throws(GatewayError) -> String? {
        let text: String?
        switch value {
        case .null: return nil
        case .string(let s): text = s
        case .int(let i): text = String(i)
        case .double: text = value.intValue.map { String($0) }  // `12.0` is the integer 12 in JSON
        default: text = nil
        }
        guard let text, isValidID(text) else {
            throw .invalidRequest("field \"id\" is not a valid id")
        }
        return text
    }
}
