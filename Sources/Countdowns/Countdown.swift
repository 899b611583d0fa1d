/// A countdown in a ``CountdownCenter``: a handle to its end on the center's
/// time base. Holding one costs nothing; the center keeps the countdown
/// until it ends or is removed, after which the handle names nothing (a
/// slot's later countdowns get new handles).
public struct Countdown: Hashable, Sendable, CustomStringConvertible {
    /// The slot (low 32 bits) and its generation (high 32 bits).
    let id: UInt64
    /// The center it belongs to: another center's handle names nothing here.
    let center: UInt32

    init(center: UInt32, slot: UInt32, generation: UInt32) {
        self.center = center
        id = UInt64(generation) << 32 | UInt64(slot)
    }

    var slot: UInt32 { UInt32(truncatingIfNeeded: id) }
    var generation: UInt32 { UInt32(truncatingIfNeeded: id >> 32) }

    /// `countdown #slot.generation`.
    public var description: String { "countdown #\(slot).\(generation)" }
}

/// A set of countdowns observed together: the countdowns of one page of a
/// list, say, which one observer redraws at each tick. Made by
/// ``CountdownCenter/makeGroup()``.
public struct CountdownGroup: Hashable, Sendable, CustomStringConvertible {
    let id: UInt64
    /// The center that made it.
    let center: UInt32

    /// `group #id`.
    public var description: String { "group #\(id)" }
}
