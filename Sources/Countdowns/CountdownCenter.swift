import Synchronization
import TimerKit
import TrustedTime

/// One ticker for all its countdowns: a countdown is an end on a time base,
/// remaining time is always read from the clock, and only what is observed
/// costs anything per tick.
///
/// ```swift
/// let center = try CountdownCenter(loop: loop)                  // boot clock: counts suspend
/// let sale = center.add(remaining: .seconds(79_836), measuredAt: received)
/// let watching = try center.observe(sale) { event in
///     switch event {
///     case .tick(let tick): label.show(seconds: tick.value)
///     case .ended: page.reload()
///     }
/// }
/// ```
///
/// **Ends.** Every countdown's end is delivered exactly once, never early,
/// whether anyone observes it or not: the ends wait in a deadline heap
/// (O(log n) to add or end one, O(1) amortized to remove one, whose entry is
/// dropped later) and the center's one timer is armed
/// for the earliest. An end that passed while the machine was suspended is
/// delivered as soon as it resumes, with its lateness. ``onEnd(_:)`` hears
/// every end; an observer of a countdown or of its group hears its own.
/// The one exception is an end at the boot clock's last instant,
/// `Int64.max` nanoseconds, where ends beyond the clock's range saturate:
/// like every timer's deadline there, it never comes, even on a manual loop
/// moved to that instant (the countdown then stays, with no time
/// ``remaining(_:)``).
///
/// **Ticks.** An observation of one countdown ticks exactly when its
/// displayed value changes: its remaining time rounded up to the
/// granularity, so ticks fall on whole seconds (or units) of remaining time.
/// An observation of a group, or of the whole center, ticks on the grid of
/// its granularity on the time base, and reads remaining times with
/// ``remaining(_:at:)``. A late tick says how many it skipped. Nothing ticks
/// while nothing is observed: cancelling the last observation stops the
/// ticker.
///
/// **Time bases.** On the boot clock (`CLOCK_BOOTTIME`, which counts suspend
/// and which nobody can set), or on a `TrustedClock`'s server time, so that a
/// user who sets the wall clock moves no countdown. With a trusted clock, a
/// re-sync that moves server time re-plans every end at once, and
/// ``onTimeBaseJump(threshold:_:)`` hears large moves. Before the clock's
/// first sync, when its server time is the wall clock, the center counts
/// from the wall clock's reading when it was made, carried on by the boot
/// clock: setting the wall clock then moves nothing either, and the first
/// sync is a move like any re-sync. A reset, which makes the clock drop its
/// samples, moves nothing too: the center goes on from where it stood,
/// carried on by the boot clock, until the next sync places it.
///
/// Events are delivered on the center's loop, in the modes given (by default
/// the common modes, so a list in `LoopMode.tracking` keeps counting), with no
/// lock held: handlers may add, remove and observe. A handler that runs the
/// loop itself (a nested run, as a modal does) holds the center's ends and
/// ticks back until it returns, since a loop never fires a timer while a
/// callback of it runs: the rest of that serve's ends and ticks then come,
/// with the values read when the serve began, and the next serve catches
/// up. (A time-base jump is told by a timer of its own, which such a run
/// may fire.)
///
/// Thread safety: every member may be used from any thread.
public final class CountdownCenter: Sendable {
    /// What the center's countdowns end on.
    public enum TimeBase: Sendable {
        /// The boot clock (`CLOCK_BOOTTIME`) of the center's loop.
        case boot
        /// Server time, from a `TrustedClock` (whose readings should be the
        /// loop's: `SystemClockReadings` for a real loop,
        /// `LoopClockReadings` for a manual one).
        case trusted(TrustedClock)
    }

    /// The loop events are delivered on.
    public let loop: TimerLoop

    /// What the center's countdowns end on.
    public let timeBase: TimeBase

    let state: ThreadLocked<CenterState>
    /// The modes events are delivered in.
    private let modes: [LoopMode]
    /// Bumped whenever an observation ends early (cancelled, or its
    /// countdown removed), so that a serve delivering knows to check.
    private let observationsEnded = Atomic<UInt64>(0)
    /// Bumped, under the lock, whenever ``onEnd(_:)`` sets a handler, so
    /// that a serve delivering ends collected for the handler before knows
    /// to give them to the one set now.
    private let endHandlerChanges = Atomic<UInt64>(0)
    private let timer: LoopTimer<BootClock>
    private let sampleObserver: UInt64?
    /// On a trusted center, server time minus boot time: where the time
    /// base stands against the boot clock. Taken from the clock when the
    /// center is made and at every change of the clock's samples (a sync, a
    /// restore) that leaves it synced, and constant in between, as a synced
    /// clock's server time moves with the boot clock. Before the clock's
    /// first sync that holds the wall clock's reading of then, and after a
    /// reset what it held: setting the wall clock later moves nothing.
    /// Never held while taking the state's lock.
    private let trustedOffset: ThreadLocked<Duration>

    /// The last center's number.
    private static let numbers = ThreadLocked<UInt32>(0)

    /// Longer than any wait: the timer's "not armed".
    private static let idleInterval = Duration.seconds(365 * 86_400)

    /// A center on `timeBase`, delivering on `loop` in `modes`.
    ///
    /// - Throws: ``CountdownError/timer(_:)`` if the loop refuses the
    ///   center's timer (a mode error, for example).
    public init(loop: TimerLoop, timeBase: TimeBase = .boot, modes: [LoopMode] = [.common])
        throws(CountdownError)
    {
        self.loop = loop
        self.timeBase = timeBase
        self.modes = modes
        state = ThreadLocked(CenterState(center: Self.numbers.withLock { number in
            number &+= 1
            return number
        }))
        let weakCenter = WeakCenter()
        do {
            timer = try LoopTimer(
                fireAt: loop.now(.boot) + Self.idleInterval, repeating: Self.idleInterval
            ) { _, _ in
                weakCenter.center?.serve()
            }
            try loop.add(timer, in: modes)
        } catch {
            throw .timer(error)
        }
        if case .trusted(let clock) = timeBase {
            trustedOffset = ThreadLocked(Self.offset(of: clock).offset)
            sampleObserver = clock.addSampleObserver { weakCenter.center?.timeBaseChanged() }
        } else {
            trustedOffset = ThreadLocked(.zero)
            sampleObserver = nil
        }
        weakCenter.set(self)
        if case .trusted(let clock) = timeBase {
            // Read again, under the lock, now that a change of the clock's
            // samples reaches the center: one made before the observer
            // could see it is taken here, and one after, by
            // `timeBaseChanged()`, which reads under the same lock.
            // Unsynced then (a reset came meanwhile), it keeps the reading
            // above, as `timeBaseChanged()` keeps what it holds.
            trustedOffset.withLock { current in
                let now = Self.offset(of: clock)
                if now.isSynced { current = now.offset }
            }
        }
    }

    deinit {
        timer.invalidate()
        if case .trusted(let clock) = timeBase, let sampleObserver {
            clock.removeSampleObserver(sampleObserver)
        }
    }

    // MARK: Time

    /// The time base now, in nanoseconds, with the boot-clock reading it
    /// belongs to.
    func now() -> (base: Int64, boot: BootClock.Instant) {
        switch timeBase {
        case .boot:
            let boot = loop.now(.boot)
            return (boot.offset.saturatingNanoseconds, boot)
        case .trusted(let clock):
            let boot = clock.readings.boot
            let offset = trustedOffset.withLock { $0 }
            return (boot.offset.addingSaturating(offset).saturatingNanoseconds, boot)
        }
    }

    /// Server time minus boot time on `clock` now, constant while its
    /// samples are (the wall clock's offset while it has none), and whether
    /// it is synced, from one reading.
    private static func offset(of clock: TrustedClock) -> (offset: Duration, isSynced: Bool) {
        let reading = clock.reading()
        return (reading.time.sinceEpoch.subtractingSaturating(reading.boot.offset), reading.time.isSynced)
    }

    /// `instant` of the boot clock on the time base, rounded up to whole
    /// nanoseconds (it is an end).
    func base(of instant: BootClock.Instant) -> Int64 {
        switch timeBase {
        case .boot: instant.offset.nanosecondsRoundedUp
        case .trusted:
            instant.offset.addingSaturating(trustedOffset.withLock { $0 }).nanosecondsRoundedUp
        }
    }

    // MARK: Adding and removing

    /// Makes a group for countdowns observed together.
    public func makeGroup() -> CountdownGroup {
        state.withLock { $0.makeGroup() }
    }

    /// Adds a countdown that ends at `end` of the boot clock (placed in
    /// server time, through the trusted clock, on a trusted center).
    ///
    /// A `group` made by another center is ignored: the countdown is added
    /// in no group (observing such a group throws
    /// ``CountdownError/noSuchGroup(_:)``).
    ///
    /// - Complexity: O(log n).
    @discardableResult
    public func add(endingAt end: BootClock.Instant, in group: CountdownGroup? = nil) -> Countdown {
        insert(end: base(of: end), group: group)
    }

    /// Adds a countdown that ends at `end`, a server-time instant. (Before
    /// the clock's first sync the center counts from the wall clock's
    /// reading when it was made: an instant read from the clock after the
    /// wall clock was set is off by the step.)
    ///
    /// A `group` made by another center is ignored: the countdown is added
    /// in no group (observing such a group throws
    /// ``CountdownError/noSuchGroup(_:)``).
    ///
    /// - Throws: ``CountdownError/needsTrustedClock`` on a boot-clock center.
    /// - Complexity: O(log n).
    @discardableResult
    public func add(endingAt end: TrustedTime, in group: CountdownGroup? = nil)
        throws(CountdownError) -> Countdown
    {
        guard case .trusted = timeBase else { throw .needsTrustedClock }
        return insert(end: end.sinceEpoch.nanosecondsRoundedUp, group: group)
    }

    /// Adds a countdown from a server's "remaining" figure (a flash sale's
    /// seconds to go): it ends `remaining` after `measuredAt`, the boot-clock
    /// instant the server's reply arrived (now, by default). On a trusted
    /// center the end is placed in server time with the clock's estimate at
    /// `measuredAt`, and a later re-sync moves it with server time.
    /// A `measuredAt` after the boot clock's reading now counts as now: a
    /// reply cannot have arrived later than that, and an end counted from
    /// it would come late.
    ///
    /// A `group` made by another center is ignored: the countdown is added
    /// in no group (observing such a group throws
    /// ``CountdownError/noSuchGroup(_:)``).
    ///
    /// - Complexity: O(log n).
    @discardableResult
    public func add(
        remaining: Duration, measuredAt: BootClock.Instant? = nil, in group: CountdownGroup? = nil
    ) -> Countdown {
        let now = loop.now(.boot)
        let start = measuredAt.map { min($0, now) } ?? now
        return insert(end: base(of: start).addingSaturating(remaining.nanosecondsRoundedUp), group: group)
    }

    private func insert(end: Int64, group: CountdownGroup?) -> Countdown {
        state.withLock { state in
            // Another center's group is no group here.
            let id = group.flatMap { state.hasGroup($0) ? $0.id : nil } ?? 0
            let countdown = state.insert(end: end, group: id)
            // Only an end before what the timer waits for moves it.
            if state.armed.map({ end < $0 }) ?? true { rearm(&state) }
            return countdown
        }
    }

    /// Removes a countdown before its end: no end event comes for it, and
    /// its observations end. Returns whether it was there.
    ///
    /// - Complexity: O(1) amortized: its slot is freed at once, and its
    ///   heap entry is dropped when it reaches the top, or with the others
    ///   when removed countdowns' entries outnumber the live ones (O(n)).
    @discardableResult
    public func remove(_ countdown: Countdown) -> Bool {
        // The timer stays armed: if it waited for this end, it wakes for
        // nothing once and then waits for the next one.
        // Handlers are let go of with no lock held: one may hold the last
        // reference to another observation, whose deinit cancels it.
        var released: [ObserverTable.Handler] = []
        let removed = state.withLock { state in
            guard state.remove(countdown, releasing: &released) else { return false }
            observationsEnded.add(1, ordering: .releasing)
            return true
        }
        released.removeAll()
        return removed
    }

    /// Moves `countdown`'s end to `end` of the boot clock (placed in server
    /// time on a trusted center), keeping its handle and its observations:
    /// an observation whose displayed value changes ticks at once with the
    /// new value, and each hears the end at the new end. Returns whether it
    /// was there (it had not ended, nor been removed).
    ///
    /// - Complexity: O(log n); the old end's heap entry is dropped later,
    ///   as a removed countdown's is.
    @discardableResult
    func moveEnd(of countdown: Countdown, to end: BootClock.Instant) -> Bool {
        let end = base(of: end)
        let now = now().base
        return state.withLock { state in
            guard state.moveEnd(of: countdown, to: end, now: now) else { return false }
            rearm(&state)
            return true
        }
    }

    /// How many countdowns have yet to end.
    public var count: Int {
        state.withLock { $0.live }
    }

    /// Whether `countdown` has yet to end.
    public func contains(_ countdown: Countdown) -> Bool {
        state.withLock { $0.end(of: countdown) != nil }
    }

    /// The time left until `countdown` ends, read from the clock now; `nil`
    /// if it is not in the center (it ended, or was removed). Exact, even
    /// past `Int64.max` nanoseconds (a time base's whole range).
    public func remaining(_ countdown: Countdown) -> Duration? {
        let now = now().base
        guard let end = state.withLock({ $0.end(of: countdown) }) else { return nil }
        return max(.zero, .nanoseconds(end) - .nanoseconds(now))
    }

    /// The time `countdown` had left at `tick` (of a group or of the center),
    /// so that a page redraws every cell for the same moment; `nil` if it is
    /// not in the center.
    public func remaining(_ countdown: Countdown, at tick: CenterTick) -> Duration? {
        guard let end = state.withLock({ $0.end(of: countdown) }) else { return nil }
        return max(.zero, .nanoseconds(end) - .nanoseconds(tick.time))
    }

    // MARK: Observing

    /// Calls `handler` on the center's loop each time `countdown`'s displayed
    /// value (its remaining time rounded up to `granularity`) changes, and
    /// once when it ends, after which the observation is over. The ticker
    /// runs while any observation is alive: cancel it, or drop it.
    ///
    /// - Throws: ``CountdownError/noSuchCountdown(_:)``,
    ///   ``CountdownError/invalidGranularity(_:)``.
    public func observe(
        _ countdown: Countdown, every granularity: Duration = .seconds(1),
        _ handler: @escaping @Sendable (CountdownEvent) -> Void
    ) throws(CountdownError) -> CountdownObservation {
        let step = try Self.granularity(granularity)
        let now = now().base
        let key = try state.withLock { (state) throws(CountdownError) -> UInt64 in
            guard let end = state.end(of: countdown) else { throw .noSuchCountdown(countdown) }
            let key = state.observe(
                .countdown(countdown), step: step,
                next: CenterState.nextChange(end: end, step: step, now: now),
                value: CenterState.displayedValue(remaining: end.subtractingSaturating(now), step: step),
                end: end, handler: .countdown(handler))
            rearm(&state)
            return key
        }
        return CountdownObservation(center: self, key: key)
    }

    /// Calls `handler` on the center's loop at every point of the
    /// `granularity` grid of the time base while the observation is alive,
    /// and at the end of each countdown of `group`.
    ///
    /// - Throws: ``CountdownError/noSuchGroup(_:)``,
    ///   ``CountdownError/invalidGranularity(_:)``.
    public func observe(
        _ group: CountdownGroup, every granularity: Duration = .seconds(1),
        _ handler: @escaping @Sendable (GroupEvent) -> Void
    ) throws(CountdownError) -> CountdownObservation {
        let step = try Self.granularity(granularity)
        let now = now().base
        let key = try state.withLock { (state) throws(CountdownError) -> UInt64 in
            guard state.hasGroup(group) else { throw .noSuchGroup(group) }
            let key = state.observe(
                .group(group.id), step: step, next: CenterState.nextGridPoint(step: step, now: now),
                handler: .group(handler))
            rearm(&state)
            return key
        }
        return CountdownObservation(center: self, key: key)
    }

    /// Calls `handler` on the center's loop at every point of the
    /// `granularity` grid of the time base while the observation is alive:
    /// a center-wide notification, for views that redraw whatever they show.
    ///
    /// - Throws: ``CountdownError/invalidGranularity(_:)``.
    public func observeAll(
        every granularity: Duration = .seconds(1), _ handler: @escaping @Sendable (CenterTick) -> Void
    ) throws(CountdownError) -> CountdownObservation {
        let step = try Self.granularity(granularity)
        let now = now().base
        let key = state.withLock { state in
            let key = state.observe(
                .all, step: step, next: CenterState.nextGridPoint(step: step, now: now),
                handler: .all(handler))
            rearm(&state)
            return key
        }
        return CountdownObservation(center: self, key: key)
    }

    /// Calls `handler` on the center's loop for every countdown's end,
    /// observed or not; `nil` removes it.
    ///
    /// The handler set before is called no more, as a cancelled
    /// observation's is: called on the loop's thread (from any handler),
    /// this takes effect at once: ends of the same serve that the old
    /// handler has not heard yet go to `handler` (to none for `nil`; a serve
    /// that began with no handler set collected none). Called from another thread,
    /// no call of the old handler starts after it returns, except one the
    /// loop's thread was starting at that very moment.
    public func onEnd(_ handler: (@Sendable (CountdownEnd) -> Void)?) {
        // The old handler is let go of with no lock held (see remove(_:)).
        let old = state.withLock { state in
            defer {
                state.endHandler = handler
                endHandlerChanges.add(1, ordering: .releasing)
            }
            return state.endHandler
        }
        _ = old
    }

    /// Calls `handler` on the center's loop whenever a sync of the center's
    /// trusted clock (a re-sync, or the first one, which moves the center
    /// from the wall clock's reading it counted from) moves server time by
    /// more than `threshold`;
    /// `nil` removes it. (Every end is re-planned at once whatever the move,
    /// and so is every tick: after a move forward, an observation whose
    /// next value or grid point the move passed ticks at once and says what
    /// it skipped; after a move back, a countdown whose displayed value grew
    /// ticks at once with the larger value, and grid ticks go on from the
    /// next grid point of the new time.)
    ///
    /// A jump is told on the loop, after the re-sync: to the handler set
    /// when it is told, if the move passes that handler's threshold, so
    /// that one replaced or removed in the meantime hears nothing more, and
    /// one set in the meantime hears it.
    public func onTimeBaseJump(
        threshold: Duration = .seconds(1), _ handler: (@Sendable (TimeBaseJump) -> Void)?
    ) {
        let old = state.withLock { state in
            defer { state.jumpHandler = handler }
            state.jumpThreshold = max(0, threshold.saturatingNanoseconds)
            return state.jumpHandler
        }
        _ = old
    }

    /// Whether any observation is alive, so that the ticker runs.
    public var isTicking: Bool {
        state.withLock { !$0.observers.isEmpty }
    }

    /// Ends an observation (``CountdownObservation/cancel()``).
    func cancel(_ key: UInt64) {
        // The handler is let go of with no lock held (see remove(_:)).
        let handler = state.withLock { state -> ObserverTable.Handler? in
            if let handler = state.unobserve(key) {
                observationsEnded.add(1, ordering: .releasing)
                rearm(&state)
                return handler
            } else if state.silenceCollectedEnd(key) {
                // Its countdown's end ended it already, but a serve still
                // delivering holds that end for it: it hears it no more.
                observationsEnded.add(1, ordering: .releasing)
            }
            return nil
        }
        _ = handler
    }

    private static func granularity(_ granularity: Duration) throws(CountdownError) -> Int64 {
        let step = granularity.saturatingNanoseconds
        guard step >= 1 else { throw .invalidGranularity(granularity) }
        return step
    }

    // MARK: Serving

    /// Arms the timer for the earliest end or tick, if that changed.
    private func rearm(_ state: inout CenterState) {
        guard let next = state.nextWake() else {
            if state.armed != nil {
                state.armed = nil
                setTimer(loop.now(.boot) + Self.idleInterval)
            }
            return
        }
        if let armed = state.armed, armed == next { return }
        state.armed = next
        let (baseNow, boot) = now()
        let wait = next.subtractingSaturating(baseNow)
        setTimer(boot + .nanoseconds(max(0, wait)))
    }

    private func setTimer(_ fireDate: BootClock.Instant) {
        do {
            try timer.setFireDate(fireDate)
        } catch {
            // Only an invalidated timer refuses, and only deinit invalidates it.
            preconditionFailure("the countdown center's timer refused a fire date: \(error)")
        }
    }

    /// The timer fired: deliver the ends and ticks that are due.
    func serve() {
        let now = now().base
        let endings = observationsEnded.load(ordering: .acquiring)
        var handlerChanges: UInt64 = 0
        var deliveries = state.withLock { state in
            handlerChanges = endHandlerChanges.load(ordering: .relaxed)
            var deliveries: [Delivery] = []
            swap(&deliveries, &state.spareDeliveries)
            state.collectDue(now: now, into: &deliveries)
            state.armed = nil
            rearm(&state)
            state.deliveringServes += 1
            return deliveries
        }
        for index in deliveries.indices {
            // An observation ended since the collection (by a handler, or
            // another thread) hears nothing more; checked under the lock only
            // when some observation has ended since.
            let key = deliveries[index].observation
            if key != 0, observationsEnded.load(ordering: .acquiring) != endings,
                state.withLock({ $0.endedWhileDelivering.contains(key) })
            {
                continue
            }
            if case .end(_, let event) = deliveries[index],
                endHandlerChanges.load(ordering: .acquiring) != handlerChanges
            {
                // onEnd set another handler since the collection: the end
                // goes to the one set now, if any.
                if let handler = state.withLock({ $0.endHandler }) { handler(event) }
                continue
            }
            deliveries[index].deliver()
        }
        // The handlers are released here, with no lock held; the buffer is
        // kept for the next serve (unless a nested serve kept one already).
        deliveries.removeAll(keepingCapacity: true)
        state.withLock { state in
            state.finishDelivering()
            if state.spareDeliveries.capacity < deliveries.capacity { swap(&deliveries, &state.spareDeliveries) }
        }
    }

    /// The trusted clock's samples changed: re-plan, and tell of a jump.
    func timeBaseChanged() {
        guard case .trusted(let clock) = timeBase else { return }
        // Read from the clock under the offset's lock: of two syncs on two
        // threads, the one told last reads the clock last, and its offset
        // stays.
        // A change that leaves the clock with no sample (a reset) keeps
        // where the base stands, carried on by the boot clock: the clock's
        // time is the wall clock's then, which the user may have set.
        let (old, offset) = trustedOffset.withLock { current in
            let old = current
            let now = Self.offset(of: clock)
            if now.isSynced { current = now.offset }
            return (old, current)
        }
        let baseNow = now().base
        state.withLock { state in
            state.replanTicks(now: baseNow)
            state.armed = nil
            rearm(&state)
        }
        // Judged when told, against the handler set then.
        let change = offset.subtractingSaturating(old).saturatingNanoseconds
        guard change != 0 else { return }
        let jump = TimeBaseJump(change: .nanoseconds(change))
        // On the center's loop, in its modes, like every other event; to
        // the handler set then.
        do {
            let timer = try LoopTimer(after: .zero) { [weak self] _, _ in self?.tell(jump) }
            try loop.add(timer, in: modes)
        } catch {
            tell(jump)  // a loop that refuses work: tell at once rather than never
        }
    }

    /// Calls the jump handler set now, if any and if the jump passes its
    /// threshold, with no lock held.
    private func tell(_ jump: TimeBaseJump) {
        let change = jump.change.saturatingNanoseconds.magnitude
        let handler = state.withLock { state in
            change > UInt64(state.jumpThreshold) ? state.jumpHandler : nil
        }
        handler?(jump)
    }
}

/// The weak way back to the center from its timer and its clock's sample
/// observer, which the center owns. Both may run on other threads as soon as
/// they exist, before the initializer can name the center and set it here,
/// so the reference is written and read under a lock.
private final class WeakCenter: Sendable {
    private struct Reference {
        weak var center: CountdownCenter?
    }

    private let reference = ThreadLocked(Reference())

    /// The center, once set and while it lives.
    var center: CountdownCenter? {
        reference.withLock { $0.center }
    }

    /// Set once, by the center's initializer.
    func set(_ center: CountdownCenter) {
        reference.withLock { $0.center = center }
    }
}

extension Int64 {
    /// `self + other`, saturating at the bounds.
    func addingSaturating(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// `self - other`, saturating at the bounds.
    func subtractingSaturating(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other < 0 ? .max : .min) : difference
    }
}
