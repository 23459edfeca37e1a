import FoundationEssentials
import PosternHTTP

extension TranscodePass {
    /// Writes the item at `pos` while it is scanned, when its mapped members come in config order (`streamMembers`).
    /// True when the item was written; false, with nothing consumed and nothing written, at the first member that
    /// needs the slots; `transcodeItem` then renders the item from its start. For an item answer; a list's items go
    /// through `streamItems`.
    mutating func streamItem() throws(GatewayError) -> Bool {
        let itemStart = pos
        try enter()
        out.reserve(itemBytes &+ (end &- itemStart))
        guard let (o, i) = try streamMembers(itemStart, open: out.count) else { return giveUp(itemStart) }
        out.commit(o)
        pos = i
        depth -= 1
        return true
    }

    /// The items of a list's `data` array from the first one's `{` at `pos` (checked by `items`) on: each written as
    /// it is scanned (`streamMembers`) while the stream is on, else (and for an item that leaves the stream) by
    /// `transcodeItem`, with a `,` between them. Returns how many, with `pos` past the array's `]`; a syntax error
    /// between the items is thrown as `items` throws it, at the same byte. One loop for the whole array: no call and
    /// no frame per item.
    mutating func streamItems() throws(GatewayError) -> Int {
        let p = self.p
        let end = self.end
        var count = 0
        var i = pos
        while true {
            if streams {
                try enter()
                out.reserve(itemBytes &+ (end &- i))
                if let (o, next) = try streamMembers(i, open: out.count) {
                    out.commit(o)
                    depth -= 1
                    i = next
                } else {
                    _ = giveUp(i)
                    try transcodeItem()
                    i = pos
                }
            } else {
                pos = i
                try transcodeItem()
                i = pos
            }
            count &+= 1
            i = Self.skipSpace(p, i, end)
            guard i < end else {
                pos = i
                throw fail("unexpected end of input")
            }
            let separator = p[i]
            if separator == UInt8(ascii: "]") {
                pos = i &+ 1
                return count
            }
            guard separator == UInt8(ascii: ",") else {
                pos = i
                throw fail("expected ',' or ']'")
            }
            i = Self.skipSpace(p, i &+ 1, end)
            guard i < end else {
                pos = i
                throw fail("unexpected end of input")
            }
            guard p[i] == UInt8(ascii: "{") else {
                pos = i
                throw .upstreamError("item is not an object")
            }
            out.append(UInt8(ascii: ","))
        }
    }

    /// Writes the members of the item whose `{` is at `itemStart` while they are scanned, at output offset `open` on
    /// (inside room reserved for the item, its nesting level entered): each value goes to the output as it is read
    /// (a string validated and copied in the same sixteen-byte blocks), with no slots and no second pass. Returns the
    /// output offset and the input offset past the item's `}`; nil, with nothing committed, at the first member that
    /// needs the slots: a mapped key ahead of its turn, or a value that is not a common shape (a string to
    /// re-encode, an empty id, a number that is not a plain non-negative integer, a boolean, a container, a null id,
    /// a missing id). Unmapped members and later occurrences of a key already written are validated and skipped. A
    /// syntax error is thrown where the slots' scan would throw it: both read the item with the same scanners.
    ///
    /// Only for a plan whose Directus names each feed one field (`TranscoderPlan.streams`), so that name `k` is
    /// field `k`. Room is reserved once for the item: its values are no longer than the input left. Every field is
    /// written behind a comma; the first one's becomes the item's `{`.
    @inline(__always)
    private mutating func streamMembers(_ itemStart: Int, open: Int) throws(GatewayError) -> (Int, Int)? {
        let p = self.p
        let end = self.end
        let keyBytes = self.keyBytes
        var o = open
        // The next field to write; fields before it are written (or left out).
        var next = 0
        var member = 0
        var i = itemStart
        while true {
            let name: Int
            (name, i) = try nextKey(&member, at: i)
            if name == next {
                let field = fields[next]
                let key = keyBytes + (field.keyStart &- 1)
                let keyCount = field.keyCount &+ 1
                let b = i < end ? p[i] : 0
                if b == UInt8(ascii: "\"") {
                    let at = out.storeBlocks(key, keyCount, at: o)
                    let (stop, flags) = try copyString(at: i, to: at)
                    guard flags & JSONTokenFlags.reencoded == 0, !field.isID || stop &- i > 2 else {
                        return nil
                    }
                    o = at &+ (stop &- i)
                    i = stop
                } else if b &- 0x31 < 9, let stop = Self.plainIntegerEnd(p, i, end) {
                    o = storeInteger(field, key, keyCount, i, stop, at: o)
                    i = stop
                } else {
                    let start = i
                    let kind: JSONTokenKind
                    let flags: UInt8
                    (i, kind, flags) = try memberValue(at: i)
                    if kind == .number, flags & JSONTokenFlags.plainInteger != 0, p[start] != UInt8(ascii: "-") {
                        o = storeInteger(field, key, keyCount, start, i, at: o)
                    } else if kind == .null, !field.isID {
                        if field.isRequired { o = storeEmptyString(key, keyCount, at: o) }
                    } else {
                        return nil
                    }
                }
                next &+= 1
            } else if name > next {
                return nil
            } else if name == KeyPrediction.closed {
                break
            } else {
                (i, _, _) = try memberValue(at: i)
            }
        }
        // The fields the item does not have: a required one is `""`, an optional one left out, a missing id
        // refused (by the slots' path, which says so).
        while next < fieldCount {
            let field = fields[next]
            if field.isID { return nil }
            if field.isRequired { o = storeEmptyString(keyBytes + (field.keyStart &- 1), field.keyCount &+ 1, at: o) }
            next &+= 1
        }
        // The first field's comma is the `{`; with no field, `{}`.
        if o == open { o &+= 1 }
        _ = out.store(UInt8(ascii: "{"), at: open)
        o = out.store(UInt8(ascii: "}"), at: o)
        return (o, i)
    }

    /// Hands the item that starts at `itemStart` back to `transcodeItem` (false). The stream stays on after the
    /// answer's first odd item and goes off at its second: at most two partial scans are wasted per answer.
    @inline(never)
    private mutating func giveUp(_ itemStart: Int) -> Bool {
        pos = itemStart
        depth -= 1
        if leftStream { streams = false }
        leftStream = true
        return false
    }

    /// `,"<resourceName>":` (the `keyCount` bytes at `key`) and the plain non-negative integer `start..<stop` of
    /// the input, quoted for the id and a required field, at output offset `at` inside room reserved already;
    /// returns the offset past it.
    @inline(__always)
    private func storeInteger(_ field: TranscoderField, _ key: UnsafePointer<UInt8>, _ keyCount: Int,
                              _ start: Int, _ stop: Int, at: Int) -> Int {
        var o = out.storeBlocks(key, keyCount, at: at)
        let quoted = field.isID || field.isRequired
        if quoted { o = out.store(UInt8(ascii: "\""), at: o) }
        o = storeToken(start, stop, at: o)
        if quoted { o = out.store(UInt8(ascii: "\""), at: o) }
        return o
    }

    /// `,"<resourceName>":""` (the `keyCount` bytes at `key`, then an empty string) at output offset `at`, inside
    /// room reserved already; returns the offset past it.
    @inline(__always)
    private func storeEmptyString(_ key: UnsafePointer<UInt8>, _ keyCount: Int, at: Int) -> Int {
        let o = out.storeBlocks(key, keyCount, at: at)
        return out.store(UInt8(ascii: "\""), at: out.store(UInt8(ascii: "\""), at: o))
    }

    /// Validates the string whose opening quote is at `i` and copies it, quotes included, to output offset `to`
    /// (room reserved for it and sixteen bytes more): plain ASCII is tested and stored in the same sixteen-byte
    /// blocks; from the first other byte on, `copyStringRest` goes on. Returns the offset past the closing quote
    /// and the string's `JSONTokenFlags`.
    @inline(__always)
    private mutating func copyString(at i: Int, to: Int) throws(GatewayError) -> (Int, UInt8) {
        // The content's first byte in the input and in the output, and the offset from it of the input's last whole
        // block (negative when there is none): one counter `k` runs the loop.
        let s = p + (i &+ 1)
        let d = out.base + (to &+ 1)
        let last = end &- 16 &- (i &+ 1)
        _ = out.store(UInt8(ascii: "\""), at: to)
        var k = 0
        while k <= last {
            let specials = JSONWord.specials16(s + k)
            TranscoderOutput.copyBlock(s + k, to: d + k)
            if specials == 0 {
                k &+= 16
                continue
            }
            k &+= JSONWord.firstFlagged16(specials)
            if s[k] == UInt8(ascii: "\"") { return (i &+ 2 &+ k, 0) }
            break
        }
        return try copyStringRest(at: i, from: i &+ 1 &+ k, to: to)
    }

    /// `copyString` from `from`, the first byte of the string at `i` that is not plain ASCII (or the start of the
    /// input's last sixteen bytes), everything before it stored already. Still sixteen bytes at a time: a
    /// well-formed UTF-8 character (`JSONScan.utf8SequenceLength`) or an escape the reference writes alike (`\"`,
    /// `\\`, `\n`, `\r`, `\t`) is stored as part of the sixteen bytes at it and stepped over, and the blocks go on
    /// after it. Anything else (another escape, a control byte, a bad sequence), and the input's last sixteen bytes,
    /// go to the byte-wise scanner (`scanStringRest`), which refuses or reads to the closing quote; the whole token
    /// is then copied. Out of line: the plain strings' loop stays small where it is inlined.
    @inline(never)
    private mutating func copyStringRest(at i: Int, from: Int, to: Int) throws(GatewayError) -> (Int, UInt8) {
        let p = self.p
        // The input and output cursors: every byte of the string before `s` has been stored before `d`.
        var s = p + from
        var d = out.base + (to &+ (from &- i))
        let last = p + (end &- 16)
        var flags: UInt8 = 0
        while s <= last {
            let b = s.pointee
            // The sixteen bytes at `s`: a plain run's block, or the bytes of the character or escape at `s`.
            TranscoderOutput.copyBlock(s, to: d)
            let n: Int
            if b >= 0x80 {
                n = JSONScan.utf8SequenceLength(s)
                if n == 0 { break }
                flags |= JSONTokenFlags.nonASCII
            } else if b == UInt8(ascii: "\\") {
                guard JSONScan.isCanonicalEscape(s[1]) else { break }
                n = 2
                flags |= JSONTokenFlags.escaped
            } else if b == UInt8(ascii: "\"") {
                return ((s - p) &+ 1, flags)
            } else {
                let specials = JSONWord.specials16(s)
                // No special byte: the whole block; else up to the first one (a control byte is refused there).
                n = specials == 0 ? 16 : JSONWord.firstFlagged16(specials)
                if n == 0 { break }
            }
            s += n
            d += n
        }
        pos = i
        flags = try scanStringRest(s - p, flags: flags)
        _ = storeToken(i, pos, at: to)
        return (pos, flags)
    }
}
