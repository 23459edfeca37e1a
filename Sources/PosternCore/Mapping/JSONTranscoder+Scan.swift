import FoundationEssentials
import PosternHTTP

/// One run of the transcoder over one answer: the input cursor, the nesting depth and the output.
///
/// Validation follows `JSONValue.parse` rule for rule (RFC 8259, whitespace ` \t\n\r`, strings valid
/// UTF-8 with no raw control character, surrogate escapes in pairs, numbers that fit a Double,
/// containers at most `maxDepth` deep), so that the transcoder refuses exactly what the reference
/// renderer refuses. Nested values are skipped without recursion.
struct TranscodePass {
    /// The deepest nesting accepted (the reference parser's default).
    static let maxDepth = 64

    /// The answer's bytes.
    let p: UnsafePointer<UInt8>
    /// The answer's length.
    let end: Int
    /// The next byte to read.
    var pos = 0
    /// Containers open at `pos`.
    var depth = 0
    /// The client body being written.
    var out: TranscoderOutput
    /// Where one-to-many lists are rendered while their item is scanned (made at the first list).
    var side: TranscoderOutput?
    /// The relational plan (nil for a flat resource, which takes `transcodeItem`). `unowned(unsafe)` as `plan`,
    /// which holds it.
    unowned(unsafe) let relations: RelationPlan?
    /// `relations == nil`, read per item without binding the optional (which retains the plan).
    let isFlat: Bool
    /// The resource's tables. `unowned(unsafe)`: the pass lives only inside `JSONTranscoder.run`,
    /// whose caller holds the plan, so it is never freed under the pass; reading it then costs no
    /// retain and release per item.
    unowned(unsafe) let plan: TranscoderPlan
    /// The mapped fields (`plan.fields`).
    let fields: UnsafeMutablePointer<TranscoderField>
    /// `plan.fieldCount`, `plan.onlyField`, `plan.names`, `plan.fieldIndices`, `plan.keyBytes` and
    /// `plan.itemBytes`, copied so that the item loop reads them without touching the plan object.
    let fieldCount: Int
    /// See `fieldCount`.
    let onlyField: UnsafeMutablePointer<Int>
    /// See `fieldCount`.
    let names: UnsafeMutablePointer<TranscoderName>
    /// See `fieldCount`.
    let fieldIndices: UnsafeMutablePointer<Int>
    /// See `fieldCount`.
    let keyBytes: UnsafeMutablePointer<UInt8>
    /// See `fieldCount`.
    let itemBytes: Int
    /// Items are tried with `streamItems` (a list) or `streamItem` (an item answer) first (`TranscoderPlan.streams`,
    /// until the second item of the answer that is not in its shape).
    var streams: Bool
    /// An item of the answer has left the stream: the next one that leaves it turns the stream off.
    var leftStream = false
    /// One slot per mapped field, reused for every item.
    let slots: UnsafeMutablePointer<TranscoderSlot>
    /// The key tokens of the first `KeyPrediction.capacity` members of the last items.
    let predictions: UnsafeMutablePointer<KeyPrediction>

    /// A pass over `count` bytes at `bytes`.
    init(bytes: UnsafePointer<UInt8>, count: Int, plan: TranscoderPlan, slots: UnsafeMutablePointer<TranscoderSlot>,
         predictions: UnsafeMutablePointer<KeyPrediction>) {
        p = bytes
        end = count
        self.plan = plan
        fields = plan.fields
        fieldCount = plan.fieldCount
        onlyField = plan.onlyField
        names = plan.names
        fieldIndices = plan.fieldIndices
        keyBytes = plan.keyBytes
        itemBytes = plan.itemBytes
        self.slots = slots
        self.predictions = predictions
        relations = plan.relations
        isFlat = plan.relations == nil
        streams = plan.streams
        out = TranscoderOutput(capacity: count + 256)
    }

    /// A 502 for an answer that is not JSON (out of line: it keeps the scanners' frames small).
    @inline(never)
    func fail(_ what: String) -> GatewayError {
        .upstreamError("answer is not JSON: \(what) at byte \(pos)")
    }

    // MARK: - The document

    /// Transcodes a list answer `{"data":[…],"meta":{…}}`.
    mutating func list() throws(GatewayError) {
        try document(list: true)
    }

    /// Transcodes an item answer `{"data":{…}}`.
    mutating func item() throws(GatewayError) {
        try document(list: false)
    }

    /// The top-level object: the first `data` is transcoded, the first `meta` read for its counts,
    /// everything else validated and skipped.
    private mutating func document(list: Bool) throws(GatewayError) {
        skipSpace()
        guard pos < end, p[pos] == UInt8(ascii: "{") else {
            throw .upstreamError(list ? "list answer has no \"data\" array" : "item answer has no \"data\" object")
        }
        try enter()
        pos += 1
        out.append(plan.prefix)
        var sawData = false
        var sawMeta = false
        var itemCount = 0
        var filterCount = TranscoderSlot.empty
        var totalCount = TranscoderSlot.empty
        skipSpace()
        if pos < end, p[pos] == UInt8(ascii: "}") {
            pos += 1
        } else {
            while true {
                skipSpace()
                guard pos < end, p[pos] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
                let keyStart = pos
                let keyFlags = try scanString()
                let isData = !sawData && keyEquals(keyStart, pos, keyFlags, "data")
                let isMeta = !isData && !sawMeta && keyEquals(keyStart, pos, keyFlags, "meta")
                try colon()
                if isData {
                    sawData = true
                    if list {
                        guard pos < end, p[pos] == UInt8(ascii: "[") else {
                            throw .upstreamError("list answer has no \"data\" array")
                        }
                        itemCount = try items()
                    } else {
                        guard pos < end, p[pos] == UInt8(ascii: "{") else {
                            throw .upstreamError("item answer has no \"data\" object")
                        }
                        try dataItem()
                    }
                } else if isMeta, pos < end, p[pos] == UInt8(ascii: "{") {
                    sawMeta = true
                    try meta(filterCount: &filterCount, totalCount: &totalCount)
                } else {
                    sawMeta = sawMeta || isMeta
                    _ = try scanValue()
                }
                if try nextMember(closer: UInt8(ascii: "}")) { break }
            }
        }
        depth -= 1
        skipSpace()
        guard pos == end else { throw fail("unexpected data after the JSON value") }
        guard sawData else {
            throw .upstreamError(list ? "list answer has no \"data\" array" : "item answer has no \"data\" object")
        }
        if list {
            let total = count(filterCount) ?? count(totalCount) ?? Int64(itemCount)
            out.append(Self.totalKey)
            out.appendDecimal(total)
            out.append(UInt8(ascii: "}"))
        } else {
            out.append(Self.itemTail)
        }
    }

    /// `],"total":`.
    static let totalKey: [UInt8] = Array("],\"total\":".utf8)
    /// `],"total":1}`.
    static let itemTail: [UInt8] = Array("],\"total\":1}".utf8)

    /// The `data` array of a list answer: each element must be an object; returns how many. A flat resource whose
    /// items can be streamed has them written by `streamItems`, in one loop.
    private mutating func items() throws(GatewayError) -> Int {
        if try openIsEmpty(closing: UInt8(ascii: "]")) { return 0 }
        var n = 0
        while true {
            skipSpace()
            guard pos < end else { throw fail("unexpected end of input") }
            guard p[pos] == UInt8(ascii: "{") else { throw .upstreamError("item is not an object") }
            if isFlat, streams {
                n = try streamItems()
                break
            }
            if n > 0 { out.append(UInt8(ascii: ",")) }
            try dataItem()
            n += 1
            if try nextMember(closer: UInt8(ascii: "]")) { break }
        }
        depth -= 1
        return n
    }

    /// `meta`: the first `filter_count` and `total_count` are kept, everything else validated and skipped.
    private mutating func meta(filterCount: inout TranscoderSlot, totalCount: inout TranscoderSlot) throws(GatewayError) {
        if try openIsEmpty(closing: UInt8(ascii: "}")) { return }
        while true {
            skipSpace()
            guard pos < end, p[pos] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
            let keyStart = pos
            let keyFlags = try scanString()
            let isFilter = filterCount.start < 0 && keyEquals(keyStart, pos, keyFlags, "filter_count")
            let isTotal = !isFilter && totalCount.start < 0 && keyEquals(keyStart, pos, keyFlags, "total_count")
            try colon()
            let start = pos
            let (kind, flags) = try scanValue()
            let slot = TranscoderSlot(start: start, end: pos, kind: kind, flags: flags)
            if isFilter { filterCount = slot } else if isTotal { totalCount = slot }
            if try nextMember(closer: UInt8(ascii: "}")) { break }
        }
        depth -= 1
    }

    /// One Directus item at `pos`: through the relational plan, else written as it is scanned when it can be
    /// (`streamItem`), else through the slots (`transcodeItem`).
    @inline(__always)
    private mutating func dataItem() throws(GatewayError) {
        if isFlat {
            if streams, try streamItem() { return }
            try transcodeItem()
        } else if let relations {
            try relationalItem(relations)
        }
    }

    /// One Directus item of a flat resource: its mapped fields' first values are located, then written in config
    /// order.
    ///
    /// The cursor lives in a local (a register) and is stored to `pos` only around the calls that
    /// read it (the rare paths and errors): the common member (a predicted key, a plain ASCII string
    /// or a small integer) never touches `self.pos`.
    mutating func transcodeItem() throws(GatewayError) {
        try enter()
        let slots = self.slots
        for k in 0..<fieldCount { slots[k].start = -1 }
        // Bytes of the mapped values found (the first of each field), for the output's reserve.
        var valueBytes = 0
        var member = 0
        var i = pos
        while true {
            let name: Int
            (name, i) = try nextKey(&member, at: i)
            if name == KeyPrediction.closed { break }
            let start = i
            let kind: JSONTokenKind
            let flags: UInt8
            (i, kind, flags) = try memberValue(at: i)
            if name >= 0 {
                let slot = TranscoderSlot(start: start, end: i, kind: kind, flags: flags)
                let field = onlyField[name]
                if field >= 0 {
                    if slots[field].start < 0 {
                        slots[field] = slot
                        valueBytes &+= i &- start
                    }
                } else {
                    let entry = names[name]
                    for k in entry.firstIndex..<(entry.firstIndex &+ entry.indexCount) {
                        let index = fieldIndices[k]
                        if slots[index].start < 0 {
                            slots[index] = slot
                            valueBytes &+= i &- start
                        }
                    }
                }
            }
        }
        pos = i
        depth -= 1
        try writeItem(valueBytes: valueBytes)
    }

    /// The offset of the first byte at or after `i` that is not JSON whitespace (or `end`). One
    /// compare when there is none: every whitespace byte is at most 0x20.
    @inline(__always)
    static func skipSpace(_ p: UnsafePointer<UInt8>, _ from: Int, _ end: Int) -> Int {
        var i = from
        while i < end {
            let b = p[i]
            guard b <= 0x20, b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { return i }
            i &+= 1
        }
        return i
    }

    /// The offset after the `{` at `at` and the whitespace after it, and false; or the offset past the `}` of an
    /// empty object, and true.
    @inline(__always)
    static func openObject(_ p: UnsafePointer<UInt8>, _ at: Int, _ end: Int) -> (Int, Bool) {
        let i = skipSpace(p, at &+ 1, end)
        if i < end, p[i] == UInt8(ascii: "}") { return (i &+ 1, true) }
        return (i, false)
    }

    /// The next member of an item from `from` (the item's `{` for member 0, else the end of the previous member's
    /// value), counted on in `member`: its key's index in `plan.names` (or -1) and the offset of its value, past the
    /// `:` and the whitespace after it; or `KeyPrediction.closed` and the offset past the item's `}`.
    ///
    /// What the same member of the earlier items started with is compared first, as two masked words (see
    /// `KeyPrediction`): its `,` (or `{`) and `"key":` with nothing between them, or the item's `}`. When the bytes
    /// differ, they are read one by one (`nextKeyMiss`).
    @inline(__always)
    mutating func nextKey(_ member: inout Int, at from: Int) throws(GatewayError) -> (Int, Int) {
        let p = self.p
        let end = self.end
        if member < KeyPrediction.capacity, from &+ 16 <= end, case let guess = predictions[member],
           (JSONWord.load(p + from) ^ guess.first) & guess.firstMask
            | (JSONWord.load(p + from + 8) ^ guess.second) & guess.secondMask == 0 {
            if guess.name >= -1 {
                member &+= 1
                return (guess.name, Self.skipSpace(p, from &+ guess.length, end))
            }
            if guess.name == KeyPrediction.closed { return (KeyPrediction.closed, from &+ 1) }
        }
        return try nextKeyMiss(&member, at: from)
    }

    /// `nextKey` when the guess does not match: the `{`, `,` or `}`, whitespace, the key (scanned and looked up) and
    /// the `:`, read byte by byte; what was read is remembered for the next items (`memberKeyMiss`).
    @inline(never)
    private mutating func nextKeyMiss(_ member: inout Int, at from: Int) throws(GatewayError) -> (Int, Int) {
        let i: Int
        let closed: Bool
        if member == 0 {
            (i, closed) = Self.openObject(p, from, end)
        } else {
            (i, closed) = try memberEnd(at: from)
            if closed, member < KeyPrediction.capacity {
                predictions[member] = i == from &+ 1 ? .closing : .none
            }
        }
        if closed { return (KeyPrediction.closed, i) }
        let k = Self.skipSpace(p, i, end)
        guard k < end, p[k] == UInt8(ascii: "\"") else {
            pos = k
            throw fail("expected a string key")
        }
        pos = k
        let name = try memberKeyMiss(member)
        member &+= 1
        return (name, pos)
    }

    /// The `,` or `}` after an item's member, whitespace first from `from`: the offset past it, and true at the `}`.
    @inline(__always)
    mutating func memberEnd(at from: Int) throws(GatewayError) -> (Int, Bool) {
        let i = Self.skipSpace(p, from, end)
        guard i < end else {
            pos = i
            throw fail("unexpected end of input")
        }
        let c = p[i]
        if c == UInt8(ascii: ",") { return (i &+ 1, false) }
        if c == UInt8(ascii: "}") { return (i &+ 1, true) }
        pos = i
        throw fail("expected ',' or '}'")
    }

    /// The offset past the positive integer whose first digit (1 to 9) is at `i`, when it has at most 18 digits
    /// and a byte other than a digit, `.`, `e` or `E` follows it before `end`: a plain integer, its text its
    /// rendering. Nil otherwise (the number scanner then reads it).
    ///
    /// With eight bytes of input at `i`, an integer shorter than eight digits (an id, a count) ends at the first
    /// byte of the word that is not a digit (`JSONWord.nonDigits`); longer ones and the input's last bytes are read
    /// byte by byte.
    @inline(__always)
    static func plainIntegerEnd(_ p: UnsafePointer<UInt8>, _ i: Int, _ end: Int) -> Int? {
        var j = i &+ 1
        if i &+ 8 <= end {
            let nonDigits = JSONWord.nonDigits(JSONWord.load(p + i))
            if nonDigits != 0 {
                j = i &+ (nonDigits.trailingZeroBitCount &>> 3)
                let c = p[j]
                guard c != UInt8(ascii: "."), c != UInt8(ascii: "e"), c != UInt8(ascii: "E") else { return nil }
                return j
            }
            j = i &+ 8
        }
        while j < end, p[j] &- 0x30 < 10 { j &+= 1 }
        guard j &- i <= 18, j < end else { return nil }
        let c = p[j]
        guard c != UInt8(ascii: "."), c != UInt8(ascii: "e"), c != UInt8(ascii: "E") else { return nil }
        return j
    }

    /// Validates the value at `i`: the offset past it, its kind and its `JSONTokenFlags`. A plain ASCII string and
    /// a positive integer of at most 18 digits end here; anything else goes on in the scanners, through `pos`.
    @inline(__always)
    mutating func memberValue(at i: Int) throws(GatewayError) -> (Int, JSONTokenKind, UInt8) {
        let p = self.p
        let end = self.end
        let b = i < end ? p[i] : 0
        if b == UInt8(ascii: "\"") {
            var j = i &+ 1
            let last = end &- 16
            while j <= last {
                let specials = JSONWord.specials16(p + j)
                if specials == 0 {
                    // A constant step: the next load does not wait for this block's test.
                    j &+= 16
                    continue
                }
                j &+= JSONWord.firstFlagged16(specials)
                if p[j] == UInt8(ascii: "\"") { return (j &+ 1, .string, 0) }
                break
            }
            pos = i
            let flags = try scanStringRest(j, flags: 0)
            return (pos, .string, flags)
        }
        if b &- 0x31 < 9 {
            if let j = Self.plainIntegerEnd(p, i, end) { return (j, .number, JSONTokenFlags.plainInteger) }
            pos = i
            let flags = try scanNumber()
            return (pos, .number, flags)
        }
        pos = i
        let (kind, flags) = try scanValue()
        return (pos, kind, flags)
    }

    /// The key of member `member` of an item at `pos` (its opening quote) and the `:` after it: its index in
    /// `plan.names`, or -1. The key is scanned and looked up, and remembered for the next items with the `{` (member
    /// 0) or `,` before it when that byte is just before it, the key is plain ASCII, the `:` follows it at once and
    /// the whole fits sixteen bytes.
    private mutating func memberKeyMiss(_ member: Int) throws(GatewayError) -> Int {
        let keyStart = pos
        let keyFlags = try scanString()
        let name = Self.lookUpName(p, end, plan, keyStart, pos, keyFlags)
        let keyEnd = pos
        try colon()
        if member < KeyPrediction.capacity {
            // From the separator the caller read: the byte before the key when it is that `{` or `,` (whitespace
            // alone can stand between them).
            let start = keyStart &- 1
            let length = keyEnd &+ 1 &- start
            let separator = member == 0 ? UInt8(ascii: "{") : UInt8(ascii: ",")
            if p[start] == separator, keyFlags == 0, length <= 16, start &+ 16 <= end,
               p[keyEnd] == UInt8(ascii: ":") {
                predictions[member] = KeyPrediction(
                    first: JSONWord.prefix(JSONWord.load(p + start), length),
                    second: JSONWord.prefix(JSONWord.load(p + start + 8), length &- 8),
                    firstMask: JSONWord.prefix(~0, length), secondMask: JSONWord.prefix(~0, length &- 8),
                    length: length, name: name)
            } else {
                predictions[member] = .none
            }
        }
        return name
    }

    // MARK: - Structure

    /// Skips JSON whitespace.
    @inline(__always)
    mutating func skipSpace() {
        while pos < end {
            let b = p[pos]
            guard b == 0x20 || b == 0x0A || b == 0x0D || b == 0x09 else { return }
            pos += 1
        }
    }

    /// Opens a container: one level deeper, at most `maxDepth`.
    @inline(__always)
    mutating func enter() throws(GatewayError) {
        depth += 1
        if depth > Self.maxDepth { throw fail("nesting too deep") }
    }

    /// Opens the object or array whose first byte is at `pos` (`enter`) and skips the whitespace inside; true when it
    /// is empty (its `closing` byte follows), which is then closed too.
    @inline(__always)
    mutating func openIsEmpty(closing: UInt8) throws(GatewayError) -> Bool {
        try enter()
        pos += 1
        skipSpace()
        guard pos < end, p[pos] == closing else { return false }
        pos += 1
        depth -= 1
        return true
    }

    /// `:` between a key and its value, with the whitespace around it.
    @inline(__always)
    mutating func colon() throws(GatewayError) {
        skipSpace()
        guard pos < end, p[pos] == UInt8(ascii: ":") else { throw fail("expected ':'") }
        pos += 1
        skipSpace()
    }

    /// After a member or element: true at the container's `closer` (consumed), false after a `,`.
    @inline(__always)
    mutating func nextMember(closer: UInt8) throws(GatewayError) -> Bool {
        skipSpace()
        guard pos < end else { throw fail("unexpected end of input") }
        let b = p[pos]
        pos += 1
        if b == UInt8(ascii: ",") { return false }
        if b == closer { return true }
        pos -= 1
        throw fail(closer == UInt8(ascii: "}") ? "expected ',' or '}'" : "expected ',' or ']'")
    }

    /// Validates and skips one value of any type; returns what it was.
    mutating func scanValue() throws(GatewayError) -> (JSONTokenKind, UInt8) {
        guard pos < end else { throw fail("unexpected end of input") }
        switch p[pos] {
        case UInt8(ascii: "\""): return (.string, try scanString())
        case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): return (.number, try scanNumber())
        case UInt8(ascii: "{"): try skipContainer(); return (.object, 0)
        case UInt8(ascii: "["): try skipContainer(); return (.array, 0)
        case UInt8(ascii: "t"), UInt8(ascii: "f"): try scanLiteral(); return (.bool, 0)
        case UInt8(ascii: "n"): try scanLiteral(); return (.null, 0)
        default: throw fail("unexpected character")
        }
    }

    /// Validates and skips the object or array at `pos`, nested ones included, with no recursion:
    /// bit `d - 1` of a 64-bit mask says whether the container at depth `d` is an array.
    private mutating func skipContainer() throws(GatewayError) {
        let base = depth
        var arrays: UInt64 = 0
        var expectValue = try open(&arrays)
        while true {
            if expectValue {
                let inArray = (arrays >> UInt64(depth - 1)) & 1 == 1
                if !inArray {
                    guard pos < end, p[pos] == UInt8(ascii: "\"") else { throw fail("expected a string key") }
                    _ = try scanString()
                    try colon()
                }
                guard pos < end else { throw fail("unexpected end of input") }
                switch p[pos] {
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    expectValue = try open(&arrays)
                    continue
                case UInt8(ascii: "\""): _ = try scanString()
                case UInt8(ascii: "-"), UInt8(ascii: "0")...UInt8(ascii: "9"): _ = try scanNumber()
                case UInt8(ascii: "t"), UInt8(ascii: "f"), UInt8(ascii: "n"): try scanLiteral()
                default: throw fail("unexpected character")
                }
                expectValue = false
            } else {
                if depth == base { return }
                let inArray = (arrays >> UInt64(depth - 1)) & 1 == 1
                if try nextMember(closer: inArray ? UInt8(ascii: "]") : UInt8(ascii: "}")) {
                    depth -= 1
                } else {
                    skipSpace()
                    expectValue = true
                }
            }
        }
    }

    /// Opens the container at `pos`; returns false when it closes at once (`{}`, `[ ]`).
    private mutating func open(_ arrays: inout UInt64) throws(GatewayError) -> Bool {
        try enter()
        let isArray = p[pos] == UInt8(ascii: "[")
        let bit: UInt64 = 1 << UInt64(depth - 1)
        if isArray { arrays |= bit } else { arrays &= ~bit }
        pos += 1
        skipSpace()
        if pos < end, p[pos] == (isArray ? UInt8(ascii: "]") : UInt8(ascii: "}")) {
            pos += 1
            depth -= 1
            return false
        }
        return true
    }

    // MARK: - Scalars

    /// `true`, `false` or `null` at `pos` (`JSONScan.literal`).
    private mutating func scanLiteral() throws(GatewayError) {
        do {
            pos = try JSONScan.literal(p, pos, end)
        } catch {
            throw Self.notJSON(error)
        }
    }

    /// A 502 for an answer the shared scanner refused (out of line, as `fail`).
    @inline(never)
    static func notJSON(_ error: JSONParseError) -> GatewayError {
        .upstreamError("answer is not JSON: \(error.description)")
    }

    /// The string at `pos` (its opening quote): validated and skipped; returns its `JSONTokenFlags`.
    ///
    /// Plain ASCII goes sixteen bytes at a time (`JSONWord.specials16`, vector compares in
    /// `CJSONScan`, finds the first `"`, `\`, control byte or byte above 0x7F of a block), then
    /// eight (`JSONWord.special`) in the last
    /// sixteen bytes of the input; escapes and UTF-8 sequences are checked byte by byte, and the last
    /// bytes of the input (fewer than eight) one at a time, so that no read passes `end`.
    ///
    /// A plain string that closes within its first sixteen bytes (a key: `data`, `meta`, `filter_count`, a member's
    /// name read afresh) ends here, after one block test, without the call to the shared scanner.
    mutating func scanString() throws(GatewayError) -> UInt8 {
        let from = pos &+ 1
        if from &+ 16 <= end {
            let specials = JSONWord.specials16(p + from)
            if specials != 0 {
                let k = from &+ JSONWord.firstFlagged16(specials)
                if p[k] == UInt8(ascii: "\"") {
                    pos = k &+ 1
                    return 0
                }
            }
        }
        return try scanStringRest(from, flags: 0)
    }

    /// The rest of a string whose content before `from` was scanned already with `flags` (`scanJSONStringRest`).
    mutating func scanStringRest(_ from: Int, flags scanned: UInt8) throws(GatewayError) -> UInt8 {
        do {
            let (next, flags) = try scanJSONStringRest(p, from, end, flags: scanned)
            pos = next
            return flags
        } catch {
            throw Self.notJSON(error)
        }
    }

    /// The number at `pos` (`scanJSONNumber`): `JSONTokenFlags.plainInteger` for an integer of at most 18 digits.
    private mutating func scanNumber() throws(GatewayError) -> UInt8 {
        do {
            let (next, flags) = try scanJSONNumber(p, pos, end)
            pos = next
            return flags
        } catch {
            throw Self.notJSON(error)
        }
    }

    /// The number at `bytes` exactly as `JSONValue.parse` reads it (`JSONScan.numberValue`).
    @inline(__always)
    static func numberValue(_ bytes: UnsafePointer<UInt8>, _ count: Int) -> JSONValue? {
        JSONScan.numberValue(bytes, count)
    }

    /// The value of one hex digit, either case (`JSONScan.hexValue`).
    @inline(__always)
    static func hexValue(_ b: UInt8) -> UInt32? {
        JSONScan.hexValue(b)
    }

    // MARK: - Keys

    /// Is the key token `start..<end` (quotes included) equal, as a `String`, to `name` (ASCII)?
    private func keyEquals(_ start: Int, _ end: Int, _ flags: UInt8, _ name: StaticString) -> Bool {
        if flags == 0 {
            let count = end - start - 2
            guard count == name.utf8CodeUnitCount else { return false }
            let expected = name.utf8Start
            for i in 0..<count where p[start + 1 + i] != expected[i] { return false }
            return true
        }
        return decodedString(start, end, flags) == name.description
    }

    /// The index in `plan.names` of the key token `start..<end`, or -1 for an unmapped key.
    ///
    /// Takes what it reads as arguments rather than through `self`: a non-mutating call in the middle
    /// of the mutating scan would copy the whole pass (and stall on the store of `pos` just made).
    @inline(__always)
    private static func lookUpName(_ p: UnsafePointer<UInt8>, _ inputEnd: Int, _ plan: TranscoderPlan,
                                   _ start: Int, _ end: Int, _ flags: UInt8) -> Int {
        if flags == 0, plan.namesAreASCII {
            let count = end &- start &- 2
            if start &+ 17 <= inputEnd { return plan.asciiNameIndex(p + start + 1, count) }
            return plan.asciiNameIndexBytewise(p + start + 1, count)
        }
        // Escapes or non-ASCII text: compare as `String`s, as the reference's dictionary does.
        return plan.distinctNames.firstIndex(of: decodedString(p, start, end, flags)) ?? -1
    }

    /// The decoded text of the validated string token `start..<end` (quotes included).
    func decodedString(_ start: Int, _ end: Int, _ flags: UInt8) -> String {
        Self.decodedString(p, start, end, flags)
    }

    /// The decoded text of the validated string token `start..<end` (quotes included) of `p`.
    static func decodedString(_ p: UnsafePointer<UInt8>, _ start: Int, _ end: Int, _ flags: UInt8) -> String {
        if flags & JSONTokenFlags.escaped == 0 {
            return String(decoding: UnsafeBufferPointer(start: p + start + 1, count: end - start - 2), as: UTF8.self)
        }
        // Escapes are rare in keys and counts: the reference parser decodes this one token.
        guard case .string(let s)? = try? JSONValue.parse(Data(bytes: p + start, count: end - start)) else { return "" }
        return s
    }

    /// A `meta` count as the reference reads it: an integer (or integral double), or a string holding
    /// one; nil when absent, of another type, or negative.
    private func count(_ slot: TranscoderSlot) -> Int64? {
        guard slot.start >= 0 else { return nil }
        let value: Int64?
        switch slot.kind {
        case .number where slot.flags & JSONTokenFlags.plainInteger != 0:
            value = parsePlainInteger(slot.start, slot.end)
        case .number:
            value = Self.numberValue(p + slot.start, slot.end - slot.start)?.intValue
        case .string:
            value = Int64(decodedString(slot.start, slot.end, slot.flags))
        default:
            value = nil
        }
        guard let value, value >= 0 else { return nil }
        return value
    }

    /// The plain integer (at most 18 digits, optional `-`) at `start..<end`.
    func parsePlainInteger(_ start: Int, _ end: Int) -> Int64 {
        var i = start
        let negative = p[i] == UInt8(ascii: "-")
        if negative { i += 1 }
        var value: Int64 = 0
        while i < end {
            value = value * 10 + Int64(p[i] &- 0x30)
            i += 1
        }
        return negative ? -value : value
    }
}

extension TranscoderSlot {
    /// No value.
    static let empty = TranscoderSlot(start: -1, end: -1, kind: .null, flags: 0)
}
