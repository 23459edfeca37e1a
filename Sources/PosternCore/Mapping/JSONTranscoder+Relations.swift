import FoundationEssentials
import Glibc
import PosternHTTP

/// The transcoder's plan for a resource that reads through relations (docs/api.md, Relations): what to look for
/// in each object of the answer (`TranscoderScope`, a tree of the Directus paths), and how to write the output
/// (`TranscoderNode`, the config's tree). Both meet in slots: one per Directus path, holding where its value lies
/// in the answer. The pass stays single: a related object is scanned once, its mapped values located as it goes;
/// a one-to-many list is written row by row as it is scanned, into a side buffer that the item then copies in
/// place. No tree of the answer is built.
final class RelationPlan: Sendable {
    /// The item's scope.
    let root: TranscoderScope
    /// The item's output, in config order.
    let nodes: [TranscoderNode]
    /// The lists.
    let lists: [TranscoderList]
    /// Slots of the item and its lists (a list's own rendering has a slot too).
    let slotCount: Int

    /// The plan of `table`, which is not flat.
    init(_ table: FieldTable) {
        var builder = Builder()
        let rootTrie = Builder.Trie()
        nodes = builder.nodes(table.nodes, trie: rootTrie)
        root = rootTrie.scope()
        lists = builder.lists
        slotCount = builder.slotCount
    }

    /// Assigns slots and builds the scopes.
    private struct Builder {
        /// A node of the path tree of one scope.
        final class Trie {
            var children: [(String, Trie)] = []
            var slot: Int?
            var list: Int?

            /// The child `name`, made when missing.
            func child(_ name: String) -> Trie {
                if let found = children.first(where: { $0.0 == name }) { return found.1 }
                let made = Trie()
                children.append((name, made))
                return made
            }

            /// The scan scope of this node's children.
            func scope() -> TranscoderScope {
                TranscoderScope(children.map { name, node -> (String, TranscoderScope.Entry) in
                    if let list = node.list { return (name, .list(list)) }
                    if !node.children.isEmpty { return (name, .object(node.scope())) }
                    return (name, .leaf(node.slot ?? -1))
                })
            }
        }

        var slotCount = 0
        var lists: [TranscoderList] = []

        /// The output nodes of `members`, their paths entered into `trie`.
        mutating func nodes(_ members: [FieldNode], trie: Trie) -> [TranscoderNode] {
            members.map { member -> TranscoderNode in
                switch member {
                case .field(let field):
                    var node = trie
                    for segment in field.path { node = node.child(String(segment)) }
                    let slot: Int
                    if let existing = node.slot {
                        slot = existing
                    } else {
                        slot = slotCount
                        slotCount += 1
                        node.slot = slot
                    }
                    return .field(key: field.keyBytes, slot: slot, isID: field.isID, isRequired: field.isRequired,
                                  quotesInteger: field.resourceName == FieldTable.idField)
                case .object(_, let key, let inner):
                    let children = nodes(inner, trie: trie)
                    return .object(key: key, members: children, slots: Self.slots(children))
                case .list(let list):
                    let slot = slotCount
                    slotCount += 1
                    let index = lists.count
                    lists.append(TranscoderList(scope: TranscoderScope([]), nodes: [], slot: slot, slots: 0..<0))
                    trie.child(list.from).list = index
                    let first = slotCount
                    let rowTrie = Trie()
                    let rows = nodes(list.members, trie: rowTrie)
                    lists[index] = TranscoderList(scope: rowTrie.scope(), nodes: rows, slot: slot, slots: first..<slotCount)
                    return .list(key: list.keyBytes, slot: slot)
                }
            }
        }

        /// Every slot under `nodes` (an object is written when one of them has a value).
        static func slots(_ nodes: [TranscoderNode]) -> [Int] {
            nodes.flatMap { node -> [Int] in
                switch node {
                case .field(_, let slot, _, _, _): return [slot]
                case .object(_, _, let slots): return slots
                case .list(_, let slot): return [slot]
                }
            }
        }
    }
}

/// The keys to look for in one object of the answer, and what each leads to.
final class TranscoderScope: Sendable {
    /// What a key leads to.
    enum Entry: Sendable {
        /// A value to keep, in this slot.
        case leaf(Int)
        /// A many-to-one relation: an object scanned with its own scope (a null stays without values).
        case object(TranscoderScope)
        /// A one-to-many alias: a list rendered row by row (index into `RelationPlan.lists`).
        case list(Int)
    }

    /// The keys' UTF-8.
    let names: [[UInt8]]
    /// The keys as strings (for keys with escapes or non-ASCII text).
    let strings: [String]
    /// What each key leads to.
    let entries: [Entry]

    /// A scope over `members`.
    init(_ members: [(String, Entry)]) {
        names = members.map { Array($0.0.utf8) }
        strings = members.map(\.0)
        entries = members.map(\.1)
    }

    /// The index of the key token `start..<end` (quotes included) of `p`, or -1.
    func index(_ p: UnsafePointer<UInt8>, _ start: Int, _ end: Int, _ flags: UInt8) -> Int {
        if flags == 0 {
            let count = end - start - 2
            for (i, name) in names.enumerated() where name.count == count {
                let same = name.withUnsafeBufferPointer { memcmp($0.baseAddress!, p + start + 1, count) == 0 }
                if same { return i }
            }
            return -1
        }
        return strings.firstIndex(of: TranscodePass.decodedString(p, start, end, flags)) ?? -1
    }
}

/// One output member of a relational resource.
indirect enum TranscoderNode: Sendable {
    /// A value from `slot`. `quotesInteger`: an `id` below the item's, written as a string when it is an integer
    /// (as every id of the API).
    case field(key: [UInt8], slot: Int, isID: Bool, isRequired: Bool, quotesInteger: Bool)
    /// A nested object, written when one of `slots` has a value.
    case object(key: [UInt8], members: [TranscoderNode], slots: [Int])
    /// A list, rendered into the side buffer at `slot` (`[]` when the answer had none).
    case list(key: [UInt8], slot: Int)
}

/// One one-to-many list: its rows' scope and output, and its slots.
struct TranscoderList: Sendable {
    /// What to look for in each row.
    let scope: TranscoderScope
    /// How each row is written.
    let nodes: [TranscoderNode]
    /// Where the rendered list lies in the side buffer.
    let slot: Int
    /// The rows' slots (cleared before each row).
    let slots: Range<Int>
}

extension TranscodePass {
    /// One item of a relational resource: scanned once with the plan's scopes, then written from its slots.
    mutating func relationalItem(_ relations: RelationPlan) throws(GatewayError) {
        for k in 0..<relations.slotCount { slots[k] = .empty }
        side?.rewind()
        try scanObject(relations.root, relations)
        out.append(UInt8(ascii: "{"))
        var first = true
        try writeMembers(relations.nodes, &first)
        out.append(UInt8(ascii: "}"))
    }

    /// The object at `pos`: the first value of each key of `scope` is kept in its slot (a relation scanned with
    /// its own scope, a list rendered); every other member is validated and skipped.
    private mutating func scanObject(_ scope: TranscoderScope, _ relations: RelationPlan) throws(GatewayError) {
        if try openIsEmpty(closing: UInt8(ascii: "}")) { return }
        var seen: UInt64 = 0
        while true {
            skipSpace()
            guard pos < end, p[pos] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let keyStart = pos
            let keyFlags = try scanString()
            let index = scope.index(p, keyStart, pos, keyFlags)
            try colon()
            let bit: UInt64 = index >= 0 && index < 64 ? 1 << UInt64(index) : 0
            if index >= 0, seen & bit == 0 {
                seen |= bit
                switch scope.entries[index] {
                case .leaf(let slot):
                    let start = pos
                    let (kind, flags) = try scanValue()
                    if slot >= 0, slots[slot].start < 0 {
                        slots[slot] = TranscoderSlot(start: start, end: pos, kind: kind, flags: flags)
                    }
                case .object(let inner):
                    if pos < end, p[pos] == UInt8(ascii: "{") {
                        try scanObject(inner, relations)
                    } else {
                        _ = try scanValue()  // null (no related row, or one the caller may not read)
                    }
                case .list(let list):
                    if pos < end, p[pos] == UInt8(ascii: "[") {
                        try scanList(relations.lists[list], relations)
                    } else {
                        _ = try scanValue()  // null: written as []
                    }
                }
            } else {
                _ = try scanValue()
            }
            if try nextMember(closer: UInt8(ascii: "}")) { break }
        }
        depth -= 1
    }

    /// The array at `pos`, rendered row by row into the side buffer as it is scanned; its slot says where.
    /// An element that is not an object (an id without its fields) has nothing to render and is skipped.
    private mutating func scanList(_ list: TranscoderList, _ relations: RelationPlan) throws(GatewayError) {
        try enter()
        pos += 1
        if side == nil { side = TranscoderOutput(capacity: 256) }
        // The rows are written with the same writers as the item: `out` is the side buffer meanwhile. A
        // failure leaves them swapped; both are freed then.
        swap(&out, &side!)
        let start = out.count
        out.append(UInt8(ascii: "["))
        var rows = 0
        skipSpace()
        if pos < end, p[pos] == UInt8(ascii: "]") {
            pos += 1
        } else {
            while true {
                skipSpace()
                guard pos < end else { throw fail("unexpected end of input") }
                if p[pos] == UInt8(ascii: "{") {
                    for k in list.slots { slots[k] = .empty }
                    try scanObject(list.scope, relations)
                    if rows > 0 { out.append(UInt8(ascii: ",")) }
                    out.append(UInt8(ascii: "{"))
                    var first = true
                    try writeMembers(list.nodes, &first)
                    out.append(UInt8(ascii: "}"))
                    rows += 1
                } else {
                    _ = try scanValue()
                }
                if try nextMember(closer: UInt8(ascii: "]")) { break }
            }
        }
        depth -= 1
        out.append(UInt8(ascii: "]"))
        let stop = out.count
        swap(&out, &side!)
        if slots[list.slot].start < 0 {
            slots[list.slot] = TranscoderSlot(start: start, end: stop, kind: .array, flags: 0)
        }
    }

    /// Writes `nodes` from their slots: a field without a value is left out (the item's id and required fields
    /// as the flat item writes them), an object without any value too, a list without rows is `[]`.
    private mutating func writeMembers(_ nodes: [TranscoderNode], _ first: inout Bool) throws(GatewayError) {
        for node in nodes {
            switch node {
            case .field(let key, let slotIndex, let isID, let isRequired, let quotesInteger):
                let slot = slotIndex >= 0 ? slots[slotIndex] : .empty
                let present = slot.start >= 0 && slot.kind != .null
                if isID {
                    guard present else { throw .upstreamError("item has no usable id: missing or null") }
                    writeKey(key, &first)
                    try writeID(slot)
                } else if isRequired {
                    writeKey(key, &first)
                    if present {
                        try writeRequired(slot)
                    } else {
                        out.append(Self.emptyString)
                    }
                } else if present {
                    writeKey(key, &first)
                    if quotesInteger, slot.kind == .number, slot.flags & JSONTokenFlags.plainInteger != 0 {
                        writeQuoted(slot.start, slot.end)
                    } else {
                        writeValue(slot)
                    }
                }
            case .object(let key, let members, let inner):
                guard inner.contains(where: { slots[$0].start >= 0 && slots[$0].kind != .null }) else { continue }
                writeKey(key, &first)
                out.append(UInt8(ascii: "{"))
                var innerFirst = true
                try writeMembers(members, &innerFirst)
                out.append(UInt8(ascii: "}"))
            case .list(let key, let slotIndex):
                writeKey(key, &first)
                let slot = slots[slotIndex]
                if slot.start >= 0, let side {
                    out.append(side.base + slot.start, slot.end - slot.start)
                } else {
                    out.append(Self.emptyList)
                }
            }
        }
    }

    /// `"<name>":`, after a comma unless it is the first member.
    private mutating func writeKey(_ key: [UInt8], _ first: inout Bool) {
        if !first { out.append(UInt8(ascii: ",")) }
        first = false
        out.append(key)
    }

    /// `""`.
    static let emptyString: [UInt8] = [UInt8(ascii: "\""), UInt8(ascii: "\"")]
    /// `[]`.
    static let emptyList: [UInt8] = [UInt8(ascii: "["), UInt8(ascii: "]")]
}
