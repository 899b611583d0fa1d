/// A min-heap of deadlines (nanoseconds on the center's time base) of the
/// slots of a ``CountdownCenter``'s table, with each slot's position kept so
/// that any entry is removed in O(log n): what makes adding and removing a
/// countdown cheap and an end event O(log n), whatever the count.
///
/// Four children a node (fewer levels than a binary heap, and siblings close
/// together); equal deadlines come out in the order they went in.
struct DeadlineHeap {
    /// 16 bytes: the deadline, the order it went in, the slot.
    struct Entry {
        var deadline: Int64
        var sequence: UInt32
        var slot: UInt32
    }

    private(set) var entries: [Entry] = []
    private var nextSequence: UInt32 = 0

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }

    /// The earliest entry.
    var top: Entry? { entries.first }

    /// Room for `capacity` entries without growing.
    mutating func reserve(_ capacity: Int) {
        entries.reserveCapacity(capacity)
    }

    /// Adds `slot` at `deadline`; `positions[slot]` tracks where it is.
    ///
    /// - Complexity: O(log n).
    mutating func push(slot: UInt32, deadline: Int64, positions: inout [UInt32]) {
        let entry = Entry(deadline: deadline, sequence: nextSequence, slot: slot)
        nextSequence &+= 1
        entries.append(entry)
        siftUp(entries.count - 1, positions: &positions)
    }

    /// Removes the entry at `index`.
    ///
    /// - Complexity: O(log n).
    mutating func remove(at index: Int, positions: inout [UInt32]) {
        let last = entries.removeLast()
        guard index < entries.count else { return }
        entries[index] = last
        positions[Int(last.slot)] = UInt32(index)
        if index > 0 && Self.before(entries[index], entries[(index - 1) / 4]) {
            siftUp(index, positions: &positions)
        } else {
            siftDown(index, positions: &positions)
        }
    }

    /// Earlier deadline first, then the one that went in first (sequence
    /// numbers wrap: compared as a signed distance, right for entries fewer
    /// than 2^31 pushes apart).
    private static func before(_ a: Entry, _ b: Entry) -> Bool {
        a.deadline != b.deadline
            ? a.deadline < b.deadline : Int32(bitPattern: a.sequence &- b.sequence) < 0
    }

    private mutating func siftUp(_ start: Int, positions: inout [UInt32]) {
        var index = start
        let entry = entries[index]
        while index > 0 {
            let parent = (index - 1) / 4
            guard Self.before(entry, entries[parent]) else { break }
            entries[index] = entries[parent]
            positions[Int(entries[index].slot)] = UInt32(index)
            index = parent
        }
        entries[index] = entry
        positions[Int(entry.slot)] = UInt32(index)
    }

    private mutating func siftDown(_ start: Int, positions: inout [UInt32]) {
        var index = start
        let entry = entries[index]
        let count = entries.count
        while true {
            let first = index * 4 + 1
            guard first < count else { break }
            var best = first
            for child in (first + 1)..<min(first + 4, count) where Self.before(entries[child], entries[best]) {
                best = child
            }
            guard Self.before(entries[best], entry) else { break }
            entries[index] = entries[best]
            positions[Int(entries[index].slot)] = UInt32(index)
            index = best
        }
        entries[index] = entry
        positions[Int(entry.slot)] = UInt32(index)
    }
}
