import FoundationEssentials
import PosternHTTP

extension TranscodePass {
    /// Writes the item at `pos` while it is scanned, when its mapped members come in config order: each value goes
    /// to the output as it is read (a string validated and copied in the same sixteen-byte blocks), with no slots
    /// and no second pass. True when the item was written; false, with nothing consumed and nothing written, at the
    /// first member that needs the slots: a mapped key ahead of its turn, or a value that is not a common shape (a
    /// string to re-encode, an empty id, a number that is not a plain non-negative integer, a boolean, a container,
    /// a null id, a missing id). `transcodeItem` then renders the item from its start. Unmapped members and later
    /// occurrences of a key already written are validated and skipped. A syntax error is thrown where the slots'
    /// scan would throw it: both read the item with the same scanners.
    ///
    /// Only for a plan whose Directus names each feed one field (`TranscoderPlan.streams`), so that name `k` is
    /// field `k`. Room is reserved once for the item: its values are no longer than the input left.
    mutating func streamItem() throws(GatewayError) -> Bool {
        let p = self.p
        let end = self.end
        let keyBytes = self.keyBytes
        let itemStart = pos
        try enter()
        out.reserve(itemBytes &+ (end &- itemStart))
        var o = out.store(UInt8(ascii: "{"), at: out.count)
        // The next field to write; fields before it are written (or left out).
        var next = 0
        var comma = 0
        var member = 0
        var i = Self.skipSpace(p, itemStart &+ 1, end)
        if i < end, p[i] == UInt8(ascii: "}") {
            i &+= 1
        } else {
            var closed = false
            while true {
                i = Self.skipSpace(p, i, end)
                guard i < end, p[i] == UInt8(ascii: "\"") else {
                    pos = i
                    throw fail("expected a string key")
                }
                let name: Int
                (name, i) = try memberKey(member, at: i)
                member &+= 1
                i = Self.skipSpace(p, i, end)
                if name == next {
                    let field = fields[next]
                    let key = keyBytes + (field.keyStart &- comma)
                    let keyCount = field.keyCount &+ comma
                    if i < end, p[i] == UInt8(ascii: "\"") {
                        let at = out.storeBlocks(key, keyCount, at: o)
                        let (stop, flags) = try copyString(at: i, to: at)
                        guard flags & JSONTokenFlags.reencoded == 0, !field.isID || stop &- i > 2 else { break }
                        o = at &+ (stop &- i)
                        i = stop
                        comma = 1
                    } else {
                        let start = i
                        let kind: JSONTokenKind
                        let flags: UInt8
                        (i, kind, flags) = try memberValue(at: i)
                        if kind == .number, flags & JSONTokenFlags.plainInteger != 0, p[start] != UInt8(ascii: "-") {
                            o = out.storeBlocks(key, keyCount, at: o)
                            let quoted = field.isID || field.isRequired
                            if quoted { o = out.store(UInt8(ascii: "\""), at: o) }
                            o = storeToken(start, i, at: o)
                            if quoted { o = out.store(UInt8(ascii: "\""), at: o) }
                            comma = 1
                        } else if kind == .null, !field.isID {
                            if field.isRequired {
                                o = storeEmptyString(key, keyCount, at: o)
                                comma = 1
                            }
                        } else {
                            break
                        }
                    }
                    next &+= 1
                } else if name > next {
                    break
                } else {
                    (i, _, _) = try memberValue(at: i)
                }
                // `,` or `}` after the member.
                i = Self.skipSpace(p, i, end)
                guard i < end else {
                    pos = i
                    throw fail("unexpected end of input")
                }
                let c = p[i]
                i &+= 1
                if c == UInt8(ascii: ",") { continue }
                if c == UInt8(ascii: "}") {
                    closed = true
                    break
                }
                pos = i &- 1
                throw fail("expected ',' or '}'")
            }
            // Left before the item's end: a member needs the slots.
            guard closed else { return giveUp(itemStart) }
        }
        // The fields the item does not have: a required one is `""`, an optional one left out, a missing id
        // refused (by the slots' path, which says so).
        while next < fieldCount {
            let field = fields[next]
            if field.isID { return giveUp(itemStart) }
            if field.isRequired {
                o = storeEmptyString(keyBytes + (field.keyStart &- comma), field.keyCount &+ comma, at: o)
                comma = 1
            }
            next &+= 1
        }
        o = out.store(UInt8(ascii: "}"), at: o)
        out.commit(o)
        pos = i
        depth -= 1
        return true
    }

    /// Hands the item that starts at `itemStart` back to `transcodeItem` (false), and the rest of the answer too: its
    /// items are likely to have the same shape.
    private mutating func giveUp(_ itemStart: Int) -> Bool {
        pos = itemStart
        depth -= 1
        streams = false
        return false
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
    /// blocks; from the first other byte on, the rest is scanned (`scanStringRest`) and the whole token copied.
    /// Returns the offset past the closing quote and the string's `JSONTokenFlags`.
    @inline(__always)
    private mutating func copyString(at i: Int, to: Int) throws(GatewayError) -> (Int, UInt8) {
        let p = self.p
        let end = self.end
        var j = i &+ 1
        let shift = to &- i
        _ = out.store(UInt8(ascii: "\""), at: to)
        while j &+ 16 <= end {
            let specials = JSONWord.specials16(p + j)
            _ = out.storeBlocks(p + j, 16, at: j &+ shift)
            if specials == 0 {
                j &+= 16
                continue
            }
            j &+= JSONWord.firstFlagged16(specials)
            if p[j] == UInt8(ascii: "\"") { return (j &+ 1, 0) }
            break
        }
        pos = i
        let flags = try scanStringRest(j, flags: 0)
        _ = storeToken(i, pos, at: to)
        return (pos, flags)
    }
}
