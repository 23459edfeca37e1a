/// A hash index of slot numbers (open addressing, linear probing, 4 bytes a bucket): the keys live in the
/// records the slots name, so the index stores none itself. The caller hashes keys and compares them.
///
/// Used by `MemorySessionStore`, whose sessions are many: a `Dictionary` keyed by a 32-byte digest
/// costs about ten times as much per entry.
struct SlotIndex {
    private static let empty: Int32 = -1
    private var buckets: [Int32] = Array(repeating: SlotIndex.empty, count: 16)
    /// The number of slots indexed.
    private(set) var count = 0

    private var mask: Int { buckets.count - 1 }

    /// The indexed slot whose key hashes to `hash` and for which `matches` is true.
    func find(hash: Int, _ matches: (Int32) -> Bool) -> Int32? {
        var i = hash & mask
        while true {
            let slot = buckets[i]
            if slot == SlotIndex.empty { return nil }
            if matches(slot) { return slot }
            i = (i + 1) & mask
        }
    }

    /// Calls `body` with every indexed slot that may have a key hashing to `hash` (the run of slots probed from
    /// its bucket; the caller compares keys): for an index whose keys are not unique.
    func forEachCandidate(hash: Int, _ body: (Int32) -> Void) {
        var i = hash & mask
        while buckets[i] != SlotIndex.empty {
            body(buckets[i])
            i = (i + 1) & mask
        }
    }

    /// Adds `slot`, whose key hashes to `hash` (its key must not be indexed yet); `hashOf` gives the hash of
    /// any indexed slot's key (for growing).
    mutating func insert(_ slot: Int32, hash: Int, hashOf: (Int32) -> Int) {
        if (count + 1) * 4 > buckets.count * 3 { grow(hashOf) }
        place(slot, hash: hash)
        count += 1
    }

    /// Removes `slot`, whose key hashes to `hash` (no-op when it is not indexed).
    mutating func remove(_ slot: Int32, hash: Int, hashOf: (Int32) -> Int) {
        var i = hash & mask
        while buckets[i] != slot {
            if buckets[i] == SlotIndex.empty { return }
            i = (i + 1) & mask
        }
        buckets[i] = SlotIndex.empty
        count -= 1
        // Backward shift: move up every later entry of the run that would no longer be found.
        var j = i
        while true {
            j = (j + 1) & mask
            let moved = buckets[j]
            if moved == SlotIndex.empty { return }
            let home = hashOf(moved) & mask
            // The entry stays when its home lies cyclically in (i, j].
            let stays = i <= j ? (i < home && home <= j) : (i < home || home <= j)
            if !stays {
                buckets[i] = moved
                buckets[j] = SlotIndex.empty
                i = j
            }
        }
    }

    private mutating func place(_ slot: Int32, hash: Int) {
        var i = hash & mask
        while buckets[i] != SlotIndex.empty { i = (i + 1) & mask }
        buckets[i] = slot
    }

    private mutating func grow(_ hashOf: (Int32) -> Int) {
        let old = buckets
        buckets = Array(repeating: SlotIndex.empty, count: old.count * 2)
        for slot in old where slot != SlotIndex.empty { place(slot, hash: hashOf(slot)) }
    }
}

/// Values in numbered slots, in fixed-size pages (growing never copies what is stored), with freed
/// slots reused.
struct SlotPages<Value> {
    private static var pageSize: Int { 1024 }
    private var pages: [[Value?]] = []
    private var free: [Int32] = []
    /// The number of occupied slots.
    private(set) var count = 0

    /// The value in `slot` (nil when free).
    subscript(slot: Int32) -> Value? {
        get {
            let (page, offset) = Int(slot).quotientAndRemainder(dividingBy: SlotPages.pageSize)
            return page < pages.count ? pages[page][offset] : nil
        }
        _modify {
            let (page, offset) = Int(slot).quotientAndRemainder(dividingBy: SlotPages.pageSize)
            yield &pages[page][offset]
        }
    }

    /// Stores `value` in a free slot and returns it.
    mutating func add(_ value: Value) -> Int32 {
        let slot: Int32
        if let reused = free.popLast() {
            slot = reused
        } else {
            if count == pages.count * SlotPages.pageSize {
                pages.append(Array(repeating: nil, count: SlotPages.pageSize))
            }
            slot = Int32(count)
        }
        self[slot] = value
        count += 1
        return slot
    }

    /// Frees `slot`, returning what it held.
    mutating func remove(_ slot: Int32) -> Value? {
        guard let value = self[slot] else { return nil }
        self[slot] = nil
        free.append(slot)
        count -= 1
        return value
    }
}
