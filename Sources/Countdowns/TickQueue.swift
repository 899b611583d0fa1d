/// The observations of a ``CountdownCenter`` in the order they tick: a
/// four-ary min-heap of (next tick, observation key), so that finding the
/// next tick is O(1) and a tick costs O(log k) in the k observations,
/// whatever their number. Entries go stale when an observation ends or
/// moves on; they are dropped when they reach the top.
struct TickQueue {
    struct Entry {
        var next: Int64
        var key: UInt64
    }

    private var entries: [Entry] = []

    /// The earliest entry, stale or not.
    var top: Entry? { entries.first }

    /// Queues observation `key` to tick at `next`.
    mutating func push(_ key: UInt64, at next: Int64) {
        entries.append(Entry(next: next, key: key))
        entries.withUnsafeMutableBufferPointer { entries in
            var index = entries.count - 1
            let entry = entries[index]
            while index > 0 {
                let parent = (index - 1) / 4
                guard entry.next < entries[parent].next else { break }
                entries[index] = entries[parent]
                index = parent
            }
            entries[index] = entry
        }
    }

    /// Removes the earliest entry.
    mutating func removeFirst() {
        let last = entries.removeLast()
        guard !entries.isEmpty else { return }
        entries.withUnsafeMutableBufferPointer { entries in
            var index = 0
            let count = entries.count
            while true {
                let first = 4 * index + 1
                guard first < count else { break }
                var best = first
                var child = first + 1
                while child < min(first + 4, count) {
                    if entries[child].next < entries[best].next { best = child }
                    child += 1
                }
                guard entries[best].next < last.next else { break }
                entries[index] = entries[best]
                index = best
            }
            entries[index] = last
        }
    }
}
