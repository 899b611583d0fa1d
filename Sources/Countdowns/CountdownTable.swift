/// The countdowns of a ``CountdownCenter``: one 24-byte slot each, reused
/// through a free list, and named by a slot number and a generation (a
/// ``Countdown`` handle) so that a stale handle names nothing.
struct CountdownTable {
    struct Slot {
        /// The end, on the center's time base (nanoseconds).
        var end: Int64
        /// Bumped when the slot is freed; a handle is valid while it matches.
        var generation: UInt32
        /// The countdown's group (0: none).
        var group: UInt32
        /// How many observations watch this countdown.
        var observers: UInt32
        /// A free slot's next free slot (`UInt32.max`: none); a live
        /// slot's is `UInt32.max - 1`.
        var nextFree: UInt32

        var isLive: Bool { nextFree == CountdownTable.live }
    }

    private static let none = UInt32.max
    fileprivate static let live = UInt32.max - 1

    private(set) var slots: [Slot] = []
    private var freeSlot = CountdownTable.none
    /// Live slots.
    private(set) var count = 0

    /// Takes a free slot (or a new one) for a countdown of `group` ending
    /// at `end`. Returns the slot and its generation.
    mutating func allocate(end: Int64, group: UInt32) -> (slot: UInt32, generation: UInt32) {
        count += 1
        if freeSlot != Self.none {
            let slot = freeSlot
            return slots.withUnsafeMutableBufferPointer { slots in
                freeSlot = slots[Int(slot)].nextFree
                slots[Int(slot)].end = end
                slots[Int(slot)].group = group
                slots[Int(slot)].observers = 0
                slots[Int(slot)].nextFree = Self.live
                return (slot, slots[Int(slot)].generation)
            }
        }
        precondition(slots.count < Int(Self.live), "a countdown center holds fewer than 2^32 - 2 countdowns")
        slots.append(Slot(end: end, generation: 1, group: group, observers: 0, nextFree: Self.live))
        return (UInt32(slots.count - 1), 1)
    }

    /// Gives a live slot back: its handles, and its heap entry, name
    /// nothing from now on.
    mutating func free(_ slot: UInt32) {
        slots.withUnsafeMutableBufferPointer { slots in
            slots[Int(slot)].generation &+= 1
            if slots[Int(slot)].generation == 0 { slots[Int(slot)].generation = 1 }
            slots[Int(slot)].nextFree = freeSlot
        }
        freeSlot = slot
        count -= 1
    }

    /// The slot that `slot` and `generation` name, if that countdown is live.
    func live(slot: UInt32, generation: UInt32) -> Slot? {
        guard Int(slot) < slots.count else { return nil }
        let entry = slots[Int(slot)]
        return entry.generation == generation && entry.isLive ? entry : nil
    }

    /// Whether a heap entry belongs to a live countdown and holds its end
    /// (the entry of an end that was moved holds the old one).
    func isLive(_ entry: DeadlineHeap.Entry) -> Bool {
        let slot = slots[Int(entry.slot)]
        return slot.generation == entry.generation && slot.isLive && slot.end == entry.deadline
    }

    /// Sets a live slot's end.
    mutating func setEnd(_ slot: UInt32, _ end: Int64) {
        slots[Int(slot)].end = end
    }

    subscript(slot: UInt32) -> Slot {
        slots[Int(slot)]
    }

    mutating func addObserver(_ slot: UInt32) {
        slots[Int(slot)].observers += 1
    }

    mutating func removeObserver(_ slot: UInt32) {
        slots[Int(slot)].observers -= 1
    }
}
