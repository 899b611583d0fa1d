/// What a ``CountdownCenter`` keeps under its lock: the countdown table, the
/// deadline heap of their ends, the groups and the observations.
///
/// A countdown costs its table slot (24 bytes) and its heap entry (16
/// bytes), plus at most one stale entry's worth while the entries of
/// removed countdowns and of moved ends wait to be dropped; nothing else
/// until it is observed.
struct CenterState {
    /// This center's number: handles and groups carry it.
    let center: UInt32

    init(center: UInt32) {
        self.center = center
    }

    // MARK: The table

    private var table = CountdownTable()
    /// The ends; entries of removed countdowns and of moved ends are
    /// dropped lazily.
    private var heap = DeadlineHeap()
    /// Heap entries of removed countdowns and of moved ends not dropped yet.
    private var staleEntries = 0
    /// Countdowns yet to end.
    var live: Int { table.count }
    /// Groups made so far; the last one's number. 64 bits, so that a
    /// center can make groups for as long as it runs.
    var groupsMade: UInt64 = 0

    // MARK: Observations and handlers

    private(set) var observers = ObserverTable()
    /// The observations by next tick.
    private var tickQueue = TickQueue()
    /// The observations of each observed countdown's slot.
    private var slotObservers: [UInt32: [UInt64]] = [:]
    /// The observations due at a serve (kept to reuse its storage).
    private var dueTicks: [UInt64] = []

    var endHandler: (@Sendable (CountdownEnd) -> Void)?
    var jumpHandler: (@Sendable (TimeBaseJump) -> Void)?
    var jumpThreshold: Int64 = 0
    /// What the timer is armed for, on the time base; `nil`: idle.
    var armed: Int64?
    /// A delivery buffer kept between serves, so that serving allocates
    /// nothing once it has grown.
    var spareDeliveries: [Delivery] = []
    /// Serves delivering now (more than one when a handler runs the loop).
    var deliveringServes = 0
    /// Observations that ended while a serve was delivering: what it
    /// collected for them is not delivered.
    private(set) var endedWhileDelivering: Set<UInt64> = []

    /// Notes that `key` ended, if a serve is delivering.
    private mutating func noteEnded(_ key: UInt64) {
        if deliveringServes > 0 { endedWhileDelivering.insert(key) }
    }

    /// A serve finished delivering.
    mutating func finishDelivering() {
        deliveringServes -= 1
        if deliveringServes == 0 { endedWhileDelivering.removeAll() }
    }

    // MARK: Countdowns

    mutating func makeGroup() -> CountdownGroup {
        groupsMade += 1
        return CountdownGroup(id: groupsMade, center: center)
    }

    func hasGroup(_ group: CountdownGroup) -> Bool {
        group.center == center && group.id >= 1 && group.id <= groupsMade
    }

    mutating func insert(end: Int64, group: UInt64) -> Countdown {
        let (slot, generation) = table.allocate(end: end, group: group)
        heap.push(DeadlineHeap.Entry(deadline: end, slot: slot, generation: generation))
        return Countdown(center: center, slot: slot, generation: generation)
    }

    /// The end of a live countdown, or `nil`.
    func end(of countdown: Countdown) -> Int64? {
        guard countdown.center == center else { return nil }
        return table.live(slot: countdown.slot, generation: countdown.generation)?.end
    }

    /// Takes a live countdown out (its observations end). False if it is not live.
    ///
    /// - Complexity: O(1) amortized: its heap entry stays, stale, until it
    ///   reaches the top or the stale entries outnumber the live ones.
    /// The removed observations' handlers go to `released`, to be let go
    /// of after the center's lock is dropped (a handler may hold the last
    /// reference to another observation, whose deinit cancels it).
    mutating func remove(_ countdown: Countdown, releasing released: inout [ObserverTable.Handler]) -> Bool {
        guard countdown.center == center,
            let slot = table.live(slot: countdown.slot, generation: countdown.generation)
        else { return false }
        table.free(countdown.slot)
        if slot.observers > 0 {
            for key in slotObservers.removeValue(forKey: countdown.slot) ?? [] {
                if let removed = observers.remove(key) { released.append(removed.handler) }
                noteEnded(key)
            }
        }
        staleEntries += 1
        if staleEntries > 1_024 && staleEntries > table.count {
            let table = table
            heap.compact { table.isLive($0) }
            // Not always 0: a countdown whose end moved back to an earlier
            // one has two entries that match it, one of them to drop later.
            staleEntries = heap.count - table.count
        }
        return true
    }

    /// Moves a live countdown's end to `end`, keeping its handle, and
    /// re-plans its observations' ticks from `now`: one whose displayed
    /// value changed ticks at once (as after a move of the time base). False
    /// if it is not live.
    ///
    /// - Complexity: O(log n) and O(k log k) in its k observations: a new
    ///   heap entry, the old one left stale (dropped as a removed
    ///   countdown's is).
    mutating func moveEnd(of countdown: Countdown, to end: Int64, now: Int64) -> Bool {
        guard countdown.center == center,
            let slot = table.live(slot: countdown.slot, generation: countdown.generation)
        else { return false }
        guard slot.end != end else { return true }
        table.setEnd(countdown.slot, end)
        heap.push(DeadlineHeap.Entry(deadline: end, slot: countdown.slot, generation: countdown.generation))
        staleEntries += 1
        for key in slotObservers[countdown.slot] ?? [] {
            // Queued again only if its next tick moved: an entry at the
            // same time is queued already, and a second one would tick twice.
            let next = observers.update(key) { observer -> Int64? in
                observer.end = end
                let planned = observer.next
                Self.replanCountdownTick(&observer, now: now)
                return observer.next == planned ? nil : observer.next
            }
            if let next = next ?? nil, next != .max { tickQueue.push(key, at: next) }
        }
        return true
    }

    /// The earliest live end, dropping stale entries from the top.
    private mutating func earliestEnd() -> DeadlineHeap.Entry? {
        while let top = heap.top {
            if table.isLive(top) { return top }
            heap.removeTop()
            staleEntries -= 1
        }
        return nil
    }

    // MARK: Observations

    /// Adds an observation ticking first at `next`; `value` is what a
    /// countdown's display shows now, `end` its end.
    mutating func observe(
        _ target: ObserverTable.Target, step: Int64, next: Int64, value: Int64 = 0, end: Int64 = 0,
        handler: ObserverTable.Handler
    ) -> UInt64 {
        let key = observers.insert(
            ObserverTable.Observer(target: target, step: step, next: next, value: value, end: end),
            handler: handler)
        if case .countdown(let countdown) = target {
            slotObservers[countdown.slot, default: []].append(key)
            table.addObserver(countdown.slot)
        }
        if next != .max { tickQueue.push(key, at: next) }
        return key
    }

    /// Ends an observation and returns its handler, to be let go of after
    /// the center's lock is dropped; nil if it had ended already.
    mutating func unobserve(_ key: UInt64) -> ObserverTable.Handler? {
        guard let (observer, handler) = observers.remove(key) else { return nil }
        noteEnded(key)
        if case .countdown(let countdown) = observer.target {
            slotObservers[countdown.slot]?.removeAll { $0 == key }
            if slotObservers[countdown.slot]?.isEmpty == true { slotObservers[countdown.slot] = nil }
            table.removeObserver(countdown.slot)
        }
        return handler
    }

    /// Silences an observation that its countdown's end ended, if a serve
    /// is delivering: the end it collected for it may not be delivered yet,
    /// and an observation cancelled hears nothing more. False if no serve
    /// is delivering, or if it was silenced already.
    mutating func silenceCollectedEnd(_ key: UInt64) -> Bool {
        guard deliveringServes > 0 else { return false }
        return endedWhileDelivering.insert(key).inserted
    }

    /// Plans every observation's next tick again from `now`, after the time
    /// base moved: a countdown whose displayed value changed ticks at once
    /// (with the values it skipped, if it moved forward), the others at their
    /// next change; a grid observation whose planned point the move passed
    /// ticks at once (with the points it skipped), the others at the next
    /// grid point after `now`.
    mutating func replanTicks(now: Int64) {
        tickQueue = TickQueue()
        observers.updateAll { key, observer in
            switch observer.target {
            case .countdown:
                Self.replanCountdownTick(&observer, now: now)
            case .group, .all:
                // A point passed is kept: gridTick counts from it.
                if observer.next > now { observer.next = Self.nextGridPoint(step: observer.step, now: now) }
            }
            if observer.next != .max { tickQueue.push(key, at: observer.next) }
        }
    }

    /// Plans a countdown observation's next tick from `now`, after its end
    /// or the time base moved: at once if its displayed value changed, else
    /// at the next change.
    private static func replanCountdownTick(_ observer: inout ObserverTable.Observer, now: Int64) {
        let value = displayedValue(remaining: observer.end.subtractingSaturating(now), step: observer.step)
        observer.next = value != observer.value ? now : nextChange(end: observer.end, step: observer.step, now: now)
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
    /// (`Int64.max` past the last point that `Int64` holds.) Any `now` works,
    /// down to `Int64.min`: a time base saturates there after a sync with a
    /// server time before 1678.
    static func nextGridPoint(step: Int64, now: Int64) -> Int64 {
        // now / step rounded down, from the quotient rounded toward zero.
        let quotient = now / step
        let floor = now % step < 0 ? quotient - 1 : quotient
        let (next, carry) = floor.addingReportingOverflow(1)
        let (point, overflow) = next.multipliedReportingOverflow(by: step)
        return carry || overflow ? .max : point
    }

    // MARK: Serving

    /// The earliest end or tick, on the time base; `nil` if there is none.
    mutating func nextWake() -> Int64? {
        let tick = nextTick()
        guard let end = earliestEnd()?.deadline else { return tick?.next }
        return min(end, tick?.next ?? .max)
    }

    /// The observation that ticks first, dropping queue entries that went
    /// stale (the observation ended, or its next tick moved).
    private mutating func nextTick() -> (key: UInt64, next: Int64)? {
        while let top = tickQueue.top {
            if observers.isCurrent(top.key, next: top.next) { return (top.key, top.next) }
            tickQueue.removeFirst()
        }
        return nil
    }

    /// Takes every end due at `now` out of the heap and every tick due, and
    /// appends what to call to `deliveries`, in order: the ends (earliest
    /// first), then the ticks.
    mutating func collectDue(now: Int64, into deliveries: inout [Delivery]) {
        // Ends.
        while let top = earliestEnd(), top.deadline <= now {
            heap.removeTop()
            let entry = table[top.slot]
            table.free(top.slot)
            let countdown = Countdown(center: center, slot: top.slot, generation: top.generation)
            let group = entry.group
            let event = CountdownEnd(
                countdown: countdown, group: group == 0 ? nil : CountdownGroup(id: group, center: center),
                // Exact: an end from long ago may be over Int64.max ns back.
                lateness: .nanoseconds(now) - .nanoseconds(top.deadline))
            if let endHandler { deliveries.append(.end(endHandler, event)) }
            if entry.observers > 0 {
                for key in slotObservers.removeValue(forKey: top.slot) ?? [] {
                    guard case .countdown(let handler)? = observers.remove(key)?.handler else { continue }
                    deliveries.append(.countdown(key, handler, .ended(event)))
                }
            }
            if group != 0 {
                for (key, handler) in observers.groupHandlers(group) {
                    deliveries.append(.group(key, handler, .ended(event)))
                }
            }
        }
        // Ticks: the observations due, taken from the queue first and put
        // back after (so that the entries put back, all later, do not sift
        // through the ones still to take).
        dueTicks.removeAll(keepingCapacity: true)
        while let (key, next) = nextTick(), next <= now {
            tickQueue.removeFirst()
            dueTicks.append(key)
        }
        for key in dueTicks {
            // An observation ticks once per serve: a second entry of it at
            // the same time (an entry left when a moved end planned its
            // tick at once, that the tick after lands on again) finds it
            // moved on, and goes without being queued again.
            guard
                let tick = observers.update(key, { $0.next <= now ? Self.tick(&$0, now: now) : nil }) ?? nil
            else { continue }
            switch tick {
            case .countdown(let event, _):
                guard case .countdown(let handler)? = observers.handler(key) else { continue }
                deliveries.append(.countdown(key, handler, .tick(event)))
            case .grid(let event, _):
                switch observers.handler(key) {
                case .group(let handler)?: deliveries.append(.group(key, handler, .tick(event)))
                case .all(let handler)?: deliveries.append(.all(key, handler, event))
                default: continue
                }
            }
            if tick.next != .max { tickQueue.push(key, at: tick.next) }
        }
    }

    /// What a tick computed: the event, and when the observation ticks next.
    private enum Tick {
        case countdown(CountdownTick, next: Int64)
        case grid(CenterTick, next: Int64)

        var next: Int64 {
            switch self {
            case .countdown(_, let next), .grid(_, let next): next
            }
        }
    }

    /// `observer`'s tick due at `now`, moving it to its next tick.
    private static func tick(_ observer: inout ObserverTable.Observer, now: Int64) -> Tick {
        switch observer.target {
        case .countdown(let countdown):
            let remaining = observer.end.subtractingSaturating(now)
            let value = displayedValue(remaining: remaining, step: observer.step)
            // The tick was for the value one below the last shown; a lower
            // one means values went by unseen.
            let expected = observer.value - 1
            let tick = CountdownTick(
                countdown: countdown, remaining: .nanoseconds(max(0, remaining)), value: value,
                skipped: UInt64(max(0, expected - value)))
            observer.value = value
            observer.next = nextChange(end: observer.end, step: observer.step, now: now)
            return .countdown(tick, next: observer.next)
        case .group, .all:
            return .grid(gridTick(&observer, now: now), next: observer.next)
        }
    }

    /// The tick of a grid observation due at `now`, moving it to its next point.
    private static func gridTick(_ observer: inout ObserverTable.Observer, now: Int64) -> CenterTick {
        let late = now.subtractingSaturating(observer.next)
        let skipped = UInt64(late / observer.step)
        observer.next = nextGridPoint(step: observer.step, now: now)
        return CenterTick(time: now, skipped: skipped)
    }
}
