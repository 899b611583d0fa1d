/// The observations of a ``CountdownCenter`` in the order they tick: a
/// binary min-heap of (next tick, observation key), so that finding the next
/// tick is O(1) and a tick costs O(log k) in the k observations, whatever
/// their number. Entries go stale when an observation ends or moves on;
/// they are dropped when they reach the top.
struct TickQueue {
    private struct Entry {
        var next: Int64
        var key: UInt64
    }

    private var entries: [Entry] = []

    /// Queues observation `key` to tick at `next`.
    mutating func push(_ key: UInt64, at next: Int64) {
        entries.append(Entry(next: next, key: key))
        var index = entries.count - 1
        let entry = entries[index]
        while index > 0 {
            let parent = (index - 1) / 2
            guard entry.next < entries[parent].next else { break }
            entries[index] = entries[parent]
            index = parent
        }
        entries[index] = entry
    }

    /// The earliest entry that `isCurrent` accepts, dropping stale ones on
    /// the way.
    mutating func first(where isCurrent: (UInt64, Int64) -> Bool) -> (key: UInt64, next: Int64)? {
        while let top = entries.first {
            if isCurrent(top.key, top.next) { return (top.key, top.next) }
            removeFirst()
        }
        return nil
    }

    /// Removes the earliest entry.
    mutating func removeFirst() {
        let last = entries.removeLast()
        guard !entries.isEmpty else { return }
        var index = 0
        let count = entries.count
        while true {
            let left = 2 * index + 1
            guard left < count else { break }
            var child = left
            if left + 1 < count && entries[left + 1].next < entries[left].next { child = left + 1 }
            guard entries[child].next < last.next else { break }
            entries[index] = entries[child]
            index = child
        }
        entries[index] = last
    }
}
