/// A min-heap of the ends of a ``CountdownCenter``'s countdowns
/// (nanoseconds on the center's time base): the earliest end in O(1),
/// adding an end and taking the earliest out in O(log n).
///
/// Removal is lazy. Each entry names its countdown by slot and generation;
/// removing a countdown only frees its slot in the ``CountdownTable``, and
/// its entry, now stale, is dropped when it reaches the top or when stale
/// entries come to outnumber live ones (``compact(keeping:)``, O(n), so
/// O(1) amortized a removal). A removal thus touches one table slot and no
/// heap entry, and an entry moving in the heap touches nothing else.
///
/// Four children a node: fewer levels than a binary heap, and the four
/// siblings (64 bytes) share a cache line when the storage is aligned.
struct DeadlineHeap {
    /// 16 bytes: the end, and the countdown it belongs to.
    struct Entry {
        var deadline: Int64
        var slot: UInt32
        var generation: UInt32
    }

    private(set) var entries: [Entry] = []

    var count: Int { entries.count }

    /// The earliest entry, stale or not.
    var top: Entry? { entries.first }

    /// Adds an entry.
    ///
    /// - Complexity: O(log n).
    mutating func push(_ entry: Entry) {
        entries.append(entry)
        siftUp(entries.count - 1)
    }

    /// Removes the earliest entry.
    ///
    /// - Complexity: O(log n).
    mutating func removeTop() {
        let last = entries.removeLast()
        guard !entries.isEmpty else { return }
        entries[0] = last
        siftDown(0)
    }

    /// Keeps only the entries `isLive` accepts, and restores the heap order.
    ///
    /// - Complexity: O(n).
    mutating func compact(keeping isLive: (Entry) -> Bool) {
        entries.removeAll { !isLive($0) }
        guard entries.count > 1 else { return }
        for index in stride(from: (entries.count - 2) / 4, through: 0, by: -1) {
            siftDown(index)
        }
    }

    /// Earlier deadline first; for equal deadlines, the lower slot, then the
    /// lower generation (any fixed order would do).
    private static func before(_ a: Entry, _ b: Entry) -> Bool {
        if a.deadline != b.deadline { return a.deadline < b.deadline }
        return a.slot != b.slot ? a.slot < b.slot : a.generation < b.generation
    }

    private mutating func siftUp(_ start: Int) {
        entries.withUnsafeMutableBufferPointer { entries in
            var index = start
            let entry = entries[index]
            while index > 0 {
                let parent = (index - 1) / 4
                guard Self.before(entry, entries[parent]) else { break }
                entries[index] = entries[parent]
                index = parent
            }
            entries[index] = entry
        }
    }

    private mutating func siftDown(_ start: Int) {
        entries.withUnsafeMutableBufferPointer { entries in
            var index = start
            let entry = entries[index]
            let count = entries.count
            while true {
                let first = index * 4 + 1
                guard first < count else { break }
                var best = first
                var child = first + 1
                while child < min(first + 4, count) {
                    if Self.before(entries[child], entries[best]) { best = child }
                    child += 1
                }
                guard Self.before(entries[best], entry) else { break }
                entries[index] = entries[best]
                index = best
            }
            entries[index] = entry
        }
    }
}
