/// What a ``CountdownCenter`` keeps under its lock: the countdown table, the
/// deadline heap of their ends, the groups and the observations.
///
/// A countdown costs its table slot (an end, a generation, a group and a
/// heap position: 20 bytes) and its heap entry (16 bytes); nothing else
/// until it is observed.
struct CenterState {
    /// This center's number: handles and groups carry it.
    let center: UInt32

    init(center: UInt32) {
        self.center = center
    }

    // MARK: The table

    /// Each slot's end, on the time base (nanoseconds).
    private var ends: [Int64] = []
    /// Each slot's generation; a handle is valid while they match.
    private var generations: [UInt32] = []
    /// Each slot's group (0: none).
    private var groups: [UInt32] = []
    /// A live slot's index in the heap; a free slot's next free slot.
    private var positions: [UInt32] = []
    private var freeSlot = UInt32.max
    private var heap = DeadlineHeap()
    /// Countdowns yet to end.
    private(set) var live = 0
    private var groupCount: UInt32 = 0

    // MARK: Observations and handlers

    enum Target: Equatable {
        case countdown(Countdown)
        case group(UInt32)
        case all
    }

    enum Handler {
        case countdown(@Sendable (CountdownEvent) -> Void)
        case group(@Sendable (GroupEvent) -> Void)
        case all(@Sendable (CenterTick) -> Void)
    }

    struct Observer {
        var target: Target
        /// The granularity, nanoseconds.
        var step: Int64
        /// When it ticks next, on the time base.
        var next: Int64
        /// For a countdown: the value shown since the last tick.
        var value: Int64
        var handler: Handler
    }

    private(set) var observers: [UInt64: Observer] = [:]
    /// The observations by next tick.
    private var tickQueue = TickQueue()
    /// The observations of each observed countdown's slot.
    private var slotObservers: [UInt32: [UInt64]] = [:]
    private var nextObserverKey: UInt64 = 1

    var endHandler: (@Sendable (CountdownEnd) -> Void)?
    var jumpHandler: (@Sendable (TimeBaseJump) -> Void)?
    var jumpThreshold: Int64 = 0
    /// Base time minus boot time at the last look (trusted time base).
    var baseOffset: Int64 = 0
    /// What the timer is armed for, on the time base; `nil`: idle.
    var armed: Int64?

    // MARK: Countdowns

    mutating func makeGroup() -> CountdownGroup {
        groupCount += 1
        return CountdownGroup(id: groupCount, center: center)
    }

    func hasGroup(_ group: CountdownGroup) -> Bool {
        group.center == center && group.id >= 1 && group.id <= groupCount
    }

    mutating func insert(end: Int64, group: UInt32) -> Countdown {
        let slot: UInt32
        if freeSlot != .max {
            slot = freeSlot
            freeSlot = positions[Int(slot)]
        } else {
            slot = UInt32(ends.count)
            ends.append(0)
            generations.append(1)
            groups.append(0)
            positions.append(0)
        }
        ends[Int(slot)] = end
        groups[Int(slot)] = group
        heap.push(slot: slot, deadline: end, positions: &positions)
        live += 1
        return Countdown(center: center, slot: slot, generation: generations[Int(slot)])
    }

    /// The end of a live countdown, or `nil`.
    func end(of countdown: Countdown) -> Int64? {
        let slot = Int(countdown.slot)
        guard countdown.center == center, slot < generations.count,
            generations[slot] == countdown.generation
        else { return nil }
        return ends[slot]
    }

    /// Takes a live countdown out (its observations end). False if it is not live.
    mutating func remove(_ countdown: Countdown) -> Bool {
        guard end(of: countdown) != nil else { return false }
        heap.remove(at: Int(positions[Int(countdown.slot)]), positions: &positions)
        free(countdown.slot)
        for key in slotObservers.removeValue(forKey: countdown.slot) ?? [] {
            observers[key] = nil
        }
        return true
    }

    private mutating func free(_ slot: UInt32) {
        generations[Int(slot)] &+= 1
        if generations[Int(slot)] == 0 { generations[Int(slot)] = 1 }
        positions[Int(slot)] = freeSlot
        freeSlot = slot
        live -= 1
    }

    // MARK: Observations

    /// Adds an observation ticking first at `next`; `value` is what a
    /// countdown's display shows now.
    mutating func observe(
        _ target: Target, step: Int64, next: Int64, value: Int64 = 0, handler: Handler
    ) -> UInt64 {
        let key = nextObserverKey
        nextObserverKey += 1
        if case .countdown(let countdown) = target {
            slotObservers[countdown.slot, default: []].append(key)
        }
        observers[key] = Observer(target: target, step: step, next: next, value: value, handler: handler)
        if next != .max { tickQueue.push(key, at: next) }
        return key
    }

    /// Ends an observation. False if it had ended already.
    mutating func unobserve(_ key: UInt64) -> Bool {
        guard let observer = observers.removeValue(forKey: key) else { return false }
        if case .countdown(let countdown) = observer.target {
            slotObservers[countdown.slot]?.removeAll { $0 == key }
            if slotObservers[countdown.slot]?.isEmpty == true { slotObservers[countdown.slot] = nil }
        }
        return true
    }

    /// When a countdown ending at `end` next changes its displayed value
    /// (remaining rounded up to `step`) after `now`: at `end - (v - 1) * step`
    /// for the value `v` shown now. `Int64.max` when the next change is the
    /// end itself, which the end event reports.
    static func nextChange(end: Int64, step: Int64, now: Int64) -> Int64 {
        let value = displayedValue(remaining: end.subtractingSaturating(now), step: step)
        guard value >= 2 else { return .max }
        let (back, overflow) = (value - 1).multipliedReportingOverflow(by: step)
        return overflow ? .min : end.subtractingSaturating(back)
    }

    /// `remaining` in units of `step`, rounded up (0 once nothing remains).
    static func displayedValue(remaining: Int64, step: Int64) -> Int64 {
        guard remaining > 0 else { return 0 }
        return remaining / step + (remaining % step == 0 ? 0 : 1)
    }

    /// The first point of the `step` grid of the time base after `now`.
    static func nextGridPoint(step: Int64, now: Int64) -> Int64 {
        let floor = now >= 0 ? now / step : (now - step + 1) / step
        let (point, overflow) = (floor + 1).multipliedReportingOverflow(by: step)
        return overflow ? .max : point
    }

    // MARK: Serving

    /// The earliest end or tick, on the time base; `nil` if there is none.
    mutating func nextWake() -> Int64? {
        let tick = nextTick()
        guard let end = heap.top?.deadline else { return tick?.next }
        return min(end, tick?.next ?? .max)
    }

    /// The observation that ticks first, dropping queue entries that went
    /// stale (the observation ended, or its next tick moved).
    private mutating func nextTick() -> (key: UInt64, next: Int64)? {
        let observers = observers
        return tickQueue.first { key, next in observers[key]?.next == next }
    }

    /// Takes every end due at `now` out of the heap and every tick due, and
    /// returns what to call, in order: the ends (earliest first), then the
    /// ticks.
    mutating func collectDue(now: Int64) -> [@Sendable () -> Void] {
        var deliveries: [@Sendable () -> Void] = []
        // Ends.
        while let top = heap.top, top.deadline <= now {
            let slot = top.slot
            heap.remove(at: 0, positions: &positions)
            let countdown = Countdown(center: center, slot: slot, generation: generations[Int(slot)])
            let group = groups[Int(slot)]
            let event = CountdownEnd(
                countdown: countdown, group: group == 0 ? nil : CountdownGroup(id: group, center: center),
                lateness: .nanoseconds(now.subtractingSaturating(top.deadline)))
            free(slot)
            if let endHandler { deliveries.append { endHandler(event) } }
            for key in slotObservers.removeValue(forKey: slot) ?? [] {
                guard case .countdown(let handler)? = observers.removeValue(forKey: key)?.handler else {
                    continue
                }
                deliveries.append { handler(.ended(event)) }
            }
            if group != 0 {
                for observer in observers.values where observer.target == .group(group) {
                    if case .group(let handler) = observer.handler {
                        deliveries.append { handler(.ended(event)) }
                    }
                }
            }
        }
        // Ticks: the observations due, from the queue.
        var due: [UInt64] = []
        while let (key, next) = nextTick(), next <= now {
            tickQueue.removeFirst()
            due.append(key)
        }
        for key in due {
            guard var observer = observers[key] else { continue }
            switch (observer.target, observer.handler) {
            case (.countdown(let countdown), .countdown(let handler)):
                guard let end = end(of: countdown) else { continue }
                let remaining = end.subtractingSaturating(now)
                let value = Self.displayedValue(remaining: remaining, step: observer.step)
                // The tick was for the value one below the last shown; a
                // lower one means values went by unseen.
                let expected = observer.value - 1
                let tick = CountdownTick(
                    countdown: countdown, remaining: .nanoseconds(max(0, remaining)), value: value,
                    skipped: UInt64(max(0, expected - value)))
                observer.value = value
                observer.next = Self.nextChange(end: end, step: observer.step, now: now)
                deliveries.append { handler(.tick(tick)) }
            case (_, .group(let handler)):
                let tick = gridTick(&observer, now: now)
                deliveries.append { handler(.tick(tick)) }
            case (_, .all(let handler)):
                let tick = gridTick(&observer, now: now)
                deliveries.append { handler(tick) }
            default:
                continue
            }
            observers[key] = observer
            if observer.next != .max { tickQueue.push(key, at: observer.next) }
        }
        return deliveries
    }

    /// The tick of a grid observation due at `now`, moving it to its next point.
    private func gridTick(_ observer: inout Observer, now: Int64) -> CenterTick {
        let late = now.subtractingSaturating(observer.next)
        let skipped = UInt64(late / observer.step)
        observer.next = Self.nextGridPoint(step: observer.step, now: now)
        return CenterTick(time: now, skipped: skipped)
    }
}
