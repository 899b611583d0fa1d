/// The countdowns of a ``CountdownCenter``: one 24-byte slot each, reused
/// through a free list, and named by a slot number and a generation (a
/// ``Countdown`` handle) so that a stale handle names nothing.
struct CountdownTable {
    struct Slot {
        /// The end, on the center's time base (nanoseconds).
        var end: Int64
        /// A live slot's group (0: none), or a free slot's next free slot
        /// (`UInt64.max`: none). One field for both, so that a group's
        /// number is 64 bits (a center can make groups for as long as it
        /// runs) and the slot stays 24 bytes.
        fileprivate var link: UInt64
        /// Odd while the slot is live: moved on when the slot is taken and
        /// when it is freed, so a handle, which carries the generation its
        /// slot had when taken, is valid while it matches. A slot goes
        /// through 2^31 live generations before one comes back, so a handle
        /// kept across that many reuses of its slot would name the countdown
        /// there then.
        var generation: UInt32
        /// How many observations watch this countdown.
        var observers: UInt32

        var isLive: Bool { generation & 1 == 1 }
        /// The countdown's group (0: none), for a live slot.
        var group: UInt64 { link }
    }

    private static let none = UInt64.max

    private(set) var slots: [Slot] = []
    private var freeSlot = CountdownTable.none
    /// Live slots.
    private(set) var count = 0

    /// Takes a free slot (or a new one) for a countdown of `group` ending
    /// at `end`. Returns the slot and its generation.
    mutating func allocate(end: Int64, group: UInt64) -> (slot: UInt32, generation: UInt32) {
        if freeSlot != Self.none {
            let slot = UInt32(truncatingIfNeeded: freeSlot)
            count += 1
            return slots.withUnsafeMutableBufferPointer { slots in
                freeSlot = slots[Int(slot)].link
                slots[Int(slot)].end = end
                slots[Int(slot)].link = group
                slots[Int(slot)].observers = 0
                // Even (free) to odd (live).
                slots[Int(slot)].generation &+= 1
                return (slot, slots[Int(slot)].generation)
            }
        }
        precondition(slots.count < Int(UInt32.max), "a countdown center holds fewer than 2^32 countdowns")
        count += 1
        slots.append(Slot(end: end, link: group, generation: 1, observers: 0))
        return (UInt32(slots.count - 1), 1)
    }

    /// Gives a live slot back: its handles, and its heap entry, name
    /// nothing from now on.
    mutating func free(_ slot: UInt32) {
        slots.withUnsafeMutableBufferPointer { slots in
            // Odd (live) to even (free): from UInt32.max, to 0.
            slots[Int(slot)].generation &+= 1
            slots[Int(slot)].link = freeSlot
        }
        freeSlot = UInt64(slot)
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
