/// The observations of a ``CountdownCenter``, in a slab: each is named by a
/// key (its index, and a generation in the high 32 bits, so that the key of
/// an ended observation names nothing), and found without hashing. What a
/// tick reads and writes is plain data; the handlers are kept apart, and
/// touched only to deliver.
struct ObserverTable {
    /// What is observed.
    enum Target: Equatable {
        case countdown(Countdown)
        case group(UInt64)
        case all
    }

    /// Who is told.
    enum Handler {
        case countdown(@Sendable (CountdownEvent) -> Void)
        case group(@Sendable (GroupEvent) -> Void)
        case all(@Sendable (CenterTick) -> Void)
    }

    struct Observer {
        var target: Target
        /// The granularity, nanoseconds.
        var step: Int64
        /// When it ticks next, on the time base (`Int64.max`: never; a
        /// countdown's end is told by its end event).
        var next: Int64
        /// For a countdown: the value shown since the last tick.
        var value: Int64
        /// For a countdown: its end (kept here so that a tick reads nothing
        /// of the countdown table; moved with it by `CenterState.moveEnd`).
        var end: Int64
    }

    private struct Record {
        var generation: UInt32
        var isLive: Bool
        var observer: Observer
    }

    private var records: [Record] = []
    private var handlers: [Handler?] = []
    private var free: [UInt32] = []
    /// Live observations.
    private(set) var count = 0

    var isEmpty: Bool { count == 0 }

    /// Adds an observation; returns its key.
    mutating func insert(_ observer: Observer, handler: Handler) -> UInt64 {
        count += 1
        let index: UInt32
        if let reused = free.popLast() {
            index = reused
            records[Int(index)].observer = observer
            records[Int(index)].isLive = true
            handlers[Int(index)] = handler
        } else {
            index = UInt32(records.count)
            records.append(Record(generation: 1, isLive: true, observer: observer))
            handlers.append(handler)
        }
        return UInt64(records[Int(index)].generation) << 32 | UInt64(index)
    }

    /// The live observation `key` names.
    subscript(key: UInt64) -> Observer? {
        guard let index = index(of: key) else { return nil }
        return records[index].observer
    }

    /// The handler of the live observation `key` names.
    func handler(_ key: UInt64) -> Handler? {
        guard let index = index(of: key) else { return nil }
        return handlers[index]
    }

    /// Whether `key` names a live observation due to tick at `next`.
    func isCurrent(_ key: UInt64, next: Int64) -> Bool {
        guard let index = index(of: key) else { return false }
        return records[index].observer.next == next
    }

    /// Changes the live observation `key` names, in place, and returns what
    /// `body` returns; `nil` if there is none.
    mutating func update<Result>(_ key: UInt64, _ body: (inout Observer) -> Result) -> Result? {
        guard let index = index(of: key) else { return nil }
        return records.withUnsafeMutableBufferPointer { body(&$0[index].observer) }
    }

    /// Runs `body` on every live observation, in place, with its key.
    mutating func updateAll(_ body: (UInt64, inout Observer) -> Void) {
        records.withUnsafeMutableBufferPointer { records in
            for index in records.indices where records[index].isLive {
                body(UInt64(records[index].generation) << 32 | UInt64(index), &records[index].observer)
            }
        }
    }

    /// Ends the observation `key` names; returns it and its handler, or
    /// `nil` if none.
    @discardableResult
    mutating func remove(_ key: UInt64) -> (observer: Observer, handler: Handler)? {
        guard let index = index(of: key), let handler = handlers[index] else { return nil }
        let observer = records[index].observer
        records[index].isLive = false
        records[index].generation &+= 1
        if records[index].generation == 0 { records[index].generation = 1 }
        handlers[index] = nil
        free.append(UInt32(index))
        count -= 1
        return (observer, handler)
    }

    /// The keys and handlers of the live observations of group `group`.
    func groupHandlers(_ group: UInt64) -> [(UInt64, @Sendable (GroupEvent) -> Void)] {
        records.indices.compactMap { index in
            guard records[index].isLive, records[index].observer.target == .group(group),
                case .group(let handler)? = handlers[index]
            else { return nil }
            return (UInt64(records[index].generation) << 32 | UInt64(index), handler)
        }
    }

    private func index(of key: UInt64) -> Int? {
        let index = Int(UInt32(truncatingIfNeeded: key))
        guard index < records.count, records[index].generation == UInt32(truncatingIfNeeded: key >> 32),
            records[index].isLive
        else { return nil }
        return index
    }
}
