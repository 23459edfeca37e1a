import FoundationEssentials
import PosternHTTP

/// Renders Directus answers in one pass over their bytes, straight into one output buffer: no tree,
/// no `String` per value (docs/api.md, Resources).
///
/// Produces byte for byte what a renderer through a `JSONValue` tree produces (the tests' reference,
/// `JSONValueRenderer`), and refuses (502) exactly the answers it refuses: the whole answer is validated as JSON (UTF-8,
/// escapes, surrogates, numbers that fit a Double, nesting at most 64 deep), mapped fields are
/// picked in one scan of each item (first occurrence of a key wins) and written in config order.
/// Rare shapes (keys with escapes or non-ASCII text, numbers with a fraction or exponent in an id
/// or required field, `meta` counts that are not plain integers) go through `JSONValue` on that one
/// value, so that they follow the reference's rules exactly.
///
/// The common shapes take fast paths that never read past the answer: plain ASCII in strings is
/// scanned sixteen bytes at a time with vector compares (`JSONWord.specials16`: SSE2 or NEON in the
/// `CJSONScan` header), keys are matched by length and 16-byte words, each item's `"key":` bytes are
/// first compared with those at the same member of the previous item (`KeyPrediction`), and strings
/// (including those whose escapes the reference writes alike: `\"`, `\\`, `\n`, `\r`, `\t`) and
/// plain numbers are copied to the output sixteen bytes at a time, into room reserved once per item.
/// Per render it allocates the output buffer and the `HeapBytes` that hold it only.
package struct JSONTranscoder: Sendable {
    /// The resource's field tables, flattened for the byte scanner.
    let plan: TranscoderPlan

    /// A transcoder for `resource`, its tables built once.
    package init(_ resource: ResourceConfig) {
        self.init(table: FieldTable(resource), name: resource.name)
    }

    /// A transcoder over already-built tables.
    init(table: FieldTable, name: String) {
        self.plan = TranscoderPlan(table: table, name: name)
    }

    /// `{"<name>":[…],"total":N}` from `{"data":[…],"meta":{"filter_count":N}}`.
    package func renderList(directusBody: HTTPBody) throws(GatewayError) -> HTTPBody {
        try transcode(directusBody, list: true)
    }

    /// `{"<name>":[item],"total":1}` from `{"data":{…}}`.
    func renderItem(directusBody: HTTPBody) throws(GatewayError) -> HTTPBody {
        try transcode(directusBody, list: false)
    }

    /// `renderList(directusBody:)` from and to `Data` (tests, fuzz targets: the gateway renders to `HeapBytes`).
    package func renderList(directusBody: Data) throws(GatewayError) -> Data {
        try transcode(.data(directusBody), list: true).data
    }

    /// `renderItem(directusBody:)` from and to `Data` (tests, fuzz targets).
    func renderItem(directusBody: Data) throws(GatewayError) -> Data {
        try transcode(.data(directusBody), list: false).data
    }

    /// Runs one pass over `body`; the output buffer becomes the returned body without a copy.
    private func transcode(_ body: HTTPBody, list: Bool) throws(GatewayError) -> HTTPBody {
        let plan = self.plan
        // The closures return a `Result` rather than setting a captured variable, which would cost
        // a dynamic exclusivity check per render.
        let result = body.withUnsafeBytes { (raw: UnsafeRawBufferPointer) -> Result<HTTPBody, GatewayError> in
            guard let base = raw.baseAddress, raw.count > 0 else {
                return .failure(.upstreamError("answer is not JSON: empty body"))
            }
            return Self.run(base.assumingMemoryBound(to: UInt8.self), raw.count, plan, list: list)
        }
        return try result.get()
    }

    /// One pass over `count` bytes at `bytes`, its slots and key predictions on the stack.
    private static func run(_ bytes: UnsafePointer<UInt8>, _ count: Int, _ plan: TranscoderPlan,
                            list: Bool) -> Result<HTTPBody, GatewayError> {
        withUnsafeTemporaryAllocation(of: TranscoderSlot.self,
                                      capacity: max(plan.fieldCount, plan.relations?.slotCount ?? 0, 1)) { slots in
            withUnsafeTemporaryAllocation(of: KeyPrediction.self, capacity: KeyPrediction.capacity) { guesses in
                // Temporary allocations of capacity ≥ 1 always have a base address.
                let predictions = guesses.baseAddress!
                predictions.initialize(from: plan.seeds, count: KeyPrediction.capacity)
                var pass = TranscodePass(bytes: bytes, count: count, plan: plan, slots: slots.baseAddress!,
                                         predictions: predictions)
                do throws(GatewayError) {
                    if list { try pass.list() } else { try pass.item() }
                    pass.side?.discard()
                    return .success(pass.out.finish())
                } catch {
                    pass.out.discard()
                    pass.side?.discard()
                    return .failure(error)
                }
            }
        }
    }
}

/// One mapped field as the transcoder reads it: where its `"<name>":` bytes are, and how it renders.
struct TranscoderField {
    /// Offset of `"<resourceName>":` in `TranscoderPlan.keyBytes` (a comma precedes it).
    var keyStart: Int
    /// Length of `"<resourceName>":`.
    var keyCount: Int
    /// The resource's key (a non-empty string, never null).
    var isID: Bool
    /// Never null (`""` instead); a number or boolean rendered as its text.
    var isRequired: Bool
}

/// One distinct Directus field name: its UTF-8 bytes, and the fields it feeds.
struct TranscoderName {
    /// Offset of the name in `TranscoderPlan.nameBytes`.
    var start: Int
    /// Length of the name in bytes.
    var count: Int
    /// First entry in `TranscoderPlan.fieldIndices`.
    var firstIndex: Int
    /// Number of entries in `TranscoderPlan.fieldIndices`.
    var indexCount: Int
}

/// Where the first value of one mapped field lies in the answer, and what it is.
struct TranscoderSlot {
    /// Offset of the value's first byte; -1 when the item has no such key.
    var start: Int
    /// Offset just past the value.
    var end: Int
    /// What the value is.
    var kind: JSONTokenKind
    /// `JSONTokenFlags` of the value.
    var flags: UInt8
}

/// The field tables of one resource as flat arrays behind pointers, built once and then only read.
///
/// `@unchecked Sendable`: every stored property is set in `init` and never written again; the
/// memory is freed in `deinit`, when no render can be using it.
final class TranscoderPlan: @unchecked Sendable {
    /// Number of mapped fields.
    let fieldCount: Int
    /// The mapped fields in config (output) order.
    let fields: UnsafeMutablePointer<TranscoderField>
    /// `,"<resourceName>":` of every field, back to back, then sixteen bytes of padding.
    let keyBytes: UnsafeMutablePointer<UInt8>
    /// Number of distinct Directus names.
    let nameCount: Int
    /// The distinct Directus names.
    let names: UnsafeMutablePointer<TranscoderName>
    /// The Directus names' UTF-8, back to back.
    let nameBytes: UnsafeMutablePointer<UInt8>
    /// The first sixteen bytes of every name as two little-endian words, zero-padded (for lookups).
    let nameWords: UnsafeMutablePointer<UInt64>
    /// Field indices of every name, back to back.
    let fieldIndices: UnsafeMutablePointer<Int>
    /// For every name, the one field it feeds, or -1 when it feeds several (see `fieldIndices`).
    let onlyField: UnsafeMutablePointer<Int>
    /// True when every Directus name feeds exactly one field of a flat resource (name `k` is then field `k`): items
    /// whose members come in config order are written while they are scanned (`TranscodePass.streamMembers`).
    let streams: Bool
    /// True when every Directus name is ASCII, so that an ASCII key matches by its bytes alone.
    let namesAreASCII: Bool
    /// Room one item's output needs beyond its values' bytes: braces, every `,"<resourceName>":`,
    /// two quotes per field and sixteen bytes for block stores.
    let itemBytes: Int
    /// The key predictions each render starts from: member `m` of the first item is guessed to be
    /// the `m`-th distinct Directus name, in config order, behind a `{` (the first) or `,` (`.none` past them, and
    /// for a name whose `"name":` token is not its plain bytes or does not fit fifteen bytes). A wrong guess costs
    /// what no guess costs: the key is read and looked up.
    let seeds: UnsafeMutablePointer<KeyPrediction>
    /// `{"<name>":[` as UTF-8.
    let prefix: [UInt8]
    /// How a resource that reads through relations is scanned and written (nil for a flat one).
    let relations: RelationPlan?
    /// The distinct Directus names as strings, for keys that need `String` comparison (escapes,
    /// non-ASCII text): the same canonical-equivalence rules as the reference's dictionary lookup.
    let distinctNames: [String]

    /// Flattens `table` for the resource called `name`.
    init(table: FieldTable, name: String) {
        var prefix: [UInt8] = [UInt8(ascii: "{")]
        JSONValue.writeString(name, into: &prefix)
        prefix.append(contentsOf: ":[".utf8)
        self.prefix = prefix
        relations = table.isFlat ? nil : RelationPlan(table)

        fieldCount = table.fields.count
        fields = .allocate(capacity: max(fieldCount, 1))
        // Every key behind a comma; sixteen zero bytes of padding, so that
        // `TranscoderOutput.appendBlocks` can copy any key.
        let keys = table.fields.flatMap { [UInt8(ascii: ",")] + $0.keyBytes }
        itemBytes = 2 + keys.count + 2 * fieldCount + 16
        keyBytes = .allocate(capacity: keys.count + 16)
        keyBytes.initialize(from: keys, count: keys.count)
        (keyBytes + keys.count).initialize(repeating: 0, count: 16)
        var offset = 0
        for (i, field) in table.fields.enumerated() {
            (fields + i).initialize(to: TranscoderField(keyStart: offset + 1, keyCount: field.keyBytes.count,
                                                        isID: field.isID, isRequired: field.isRequired))
            offset += 1 + field.keyBytes.count
        }

        // Distinct Directus names in first-use order (the order does not matter for lookups).
        var distinct: [String] = []
        for field in table.fields where !distinct.contains(field.directusName) { distinct.append(field.directusName) }
        nameCount = distinct.count
        distinctNames = distinct
        names = .allocate(capacity: max(nameCount, 1))
        let allNameBytes = distinct.flatMap { Array($0.utf8) }
        nameBytes = .allocate(capacity: max(allNameBytes.count, 1))
        nameBytes.initialize(from: allNameBytes, count: allNameBytes.count)
        let allIndices = distinct.flatMap { table.indicesByDirectusName[$0] ?? [] }
        fieldIndices = .allocate(capacity: max(allIndices.count, 1))
        fieldIndices.initialize(from: allIndices, count: allIndices.count)
        var byteOffset = 0
        var indexOffset = 0
        for (i, name) in distinct.enumerated() {
            let count = name.utf8.count
            let indexCount = table.indicesByDirectusName[name]?.count ?? 0
            (names + i).initialize(to: TranscoderName(start: byteOffset, count: count,
                                                      firstIndex: indexOffset, indexCount: indexCount))
            byteOffset += count
            indexOffset += indexCount
        }
        onlyField = .allocate(capacity: max(nameCount, 1))
        for (i, name) in distinct.enumerated() {
            let indices = table.indicesByDirectusName[name] ?? []
            (onlyField + i).initialize(to: indices.count == 1 ? indices[0] : -1)
        }
        streams = table.isFlat && nameCount == fieldCount
        namesAreASCII = allNameBytes.allSatisfy { $0 < 0x80 }
        nameWords = .allocate(capacity: max(2 * nameCount, 1))
        for (i, name) in distinct.enumerated() {
            var words: (UInt64, UInt64) = (0, 0)
            for (j, byte) in name.utf8.prefix(16).enumerated() {
                if j < 8 { words.0 |= UInt64(byte) << UInt64(8 * j) } else { words.1 |= UInt64(byte) << UInt64(8 * (j - 8)) }
            }
            (nameWords + 2 * i).initialize(to: words.0)
            (nameWords + 2 * i + 1).initialize(to: words.1)
        }
        seeds = .allocate(capacity: KeyPrediction.capacity)
        seeds.initialize(repeating: .none, count: KeyPrediction.capacity)
        for (i, name) in distinct.prefix(KeyPrediction.capacity).enumerated() {
            let token = [i == 0 ? UInt8(ascii: "{") : UInt8(ascii: ",")] + [UInt8(ascii: "\"")] + Array(name.utf8)
                + Array("\":".utf8)
            // Only bytes that stand for themselves in a JSON string, and a token of at most 16 bytes.
            guard token.count <= 16, name.utf8.allSatisfy({ $0 >= 0x20 && $0 < 0x80 && $0 != 0x22 && $0 != 0x5C }) else {
                continue
            }
            let padded = token + [UInt8](repeating: 0, count: 16 - token.count)
            var first: UInt64 = 0
            var second: UInt64 = 0
            for j in 0..<8 {
                first |= UInt64(padded[j]) << UInt64(8 * j)
                second |= UInt64(padded[j + 8]) << UInt64(8 * j)
            }
            (seeds + i).pointee = KeyPrediction(first: first, second: second,
                                                firstMask: JSONWord.prefix(~0, token.count),
                                                secondMask: JSONWord.prefix(~0, token.count - 8),
                                                length: token.count, name: i)
        }
    }

    deinit {
        fields.deallocate()
        keyBytes.deallocate()
        names.deallocate()
        nameBytes.deallocate()
        fieldIndices.deallocate()
        nameWords.deallocate()
        onlyField.deallocate()
        seeds.deallocate()
    }
}
