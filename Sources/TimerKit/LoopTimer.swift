import CTimerCore

/// A timer that fires on a ``TimerLoop``, once or repeatedly on a fixed
/// grid, measured on `Clock` (``MonotonicClock`` unless another is given).
///
/// ```swift
/// let timer = try LoopTimer(after: .seconds(1), repeating: .seconds(1),
///                           tolerance: .milliseconds(100)) { timer, missed in
///     print("tick", missed > 0 ? "(\(missed) skipped)" : "")
/// }
/// try loop.add(timer, forMode: .common)
/// // ...
/// timer.invalidate()
/// ```
///
/// A timer fires `delay` after it is added to a loop (or at its fire date),
/// never before, and at most its tolerance later while the loop's thread is
/// free; the tolerance lets the loop serve nearby timers with one wake-up.
/// A repeating timer stays on its grid: if the loop falls behind by whole
/// intervals it fires once, and its action learns how many fires were
/// skipped. A repeating timer's tolerance is limited to half its interval.
///
/// Fire dates are instants of the timer's clock (`Clock.Instant`), so a
/// boot-clock instant cannot reach a monotonic timer:
///
/// ```swift
/// let alarm = try LoopTimer(fireAt: BootClock.now + .seconds(30)) { _, _ in ring() }
/// try alarm.setFireDate(BootClock.now + .seconds(60))     // a BootClock.Instant
/// ```
///
/// While scheduled, a timer is kept alive by its loop (as `RunLoop` keeps a
/// `Timer`), and it keeps alive what its action captures. To avoid the loop →
/// timer → owner cycle, capture `[weak self]`, or give the timer a target it
/// holds weakly with ``init(after:repeating:tolerance:clock:target:action:)``.
/// Once invalidated, or a one-shot that has fired, a timer lets go of its
/// action, and so of what the action captures, as `Timer` lets go of its
/// target: an owner that keeps its invalidated timer is not kept alive by it.
///
/// Thread safety: every method may be called from any thread. The action runs
/// on the thread running the loop, which is why it must be `@Sendable`.
public final class LoopTimer<Clock: TimerClock>: AnyLoopTimer, @unchecked Sendable {
    /// What a timer runs when it fires: the timer itself, and how many fires
    /// of a repeating timer were skipped (0 when on time).
    public typealias Action = @Sendable (LoopTimer<Clock>, UInt64) -> Void

    /// The action, until the timer can no longer fire: an invalidated
    /// timer (and a one-shot once it has fired) lets go of it, and so of
    /// what it captures, as `Timer` lets go of its target. Read under the
    /// timer's lock and only while the timer is valid; set to `nil` once, by
    /// the call that made the timer invalid, after it let go of the lock,
    /// when no read can come any more (see `letGoOfAction()`). The runtime's
    /// exclusivity bookkeeping would only add cost.
    @exclusivity(unchecked) private var action: Action?

    /// Creates an unscheduled timer that fires `delay` after it is added to a
    /// loop, then every `interval` if one is given.
    ///
    /// - Parameters:
    ///   - delay: from being added to the first fire; a negative delay counts as 0.
    ///   - interval: the period of a repeating timer (at least 1 ns), or `nil`
    ///     for one fire.
    ///   - tolerance: how late the timer may fire to share a wake-up (≥ 0).
    ///     The loop wakes for it at its fire date + tolerance at the latest;
    ///     a tolerance that takes that to the end of the clock's range
    ///     (`Int64.max` nanoseconds, which never comes) leaves the timer to
    ///     wake-ups that something else brings.
    ///   - clock: the clock it is measured on: ``MonotonicClock`` (stops
    ///     while the system is suspended), ``BootClock`` (counts suspend),
    ///     ``WallClock``, or a ``ManualClock`` (add the timer to its loop:
    ///     a real loop refuses it with ``TimerError/notManual``).
    ///   - action: runs on the loop's thread at each fire.
    /// - Throws: ``TimerError/invalidInterval(_:)``, ``TimerError/negativeTolerance(_:)``.
    public init(
        after delay: Duration,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        clock: Clock,
        _ action: @escaping Action
    ) throws(TimerError) {
        self.action = action
        try super.init(
            clock: Clock.clockID, needsManualLoop: Clock.self == ManualClock.self,
            firstFire: max(0, delay.nanosecondsRoundedUp), absolute: false,
            interval: interval, tolerance: tolerance)
    }

    /// Creates an unscheduled timer that first fires when its clock reads
    /// `fireDate` (the clock is the instant's: `BootClock.now + .seconds(5)`
    /// makes a boot-clock timer).
    ///
    /// - Throws: ``TimerError/invalidInterval(_:)``, ``TimerError/negativeTolerance(_:)``.
    public init(
        fireAt fireDate: ClockInstant<Clock>,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        _ action: @escaping Action
    ) throws(TimerError) {
        self.action = action
        try super.init(
            clock: Clock.clockID, needsManualLoop: Clock.self == ManualClock.self,
            firstFire: fireDate.deadlineNanoseconds, absolute: true,
            interval: interval, tolerance: tolerance)
    }

    /// Creates an unscheduled timer that calls `action` with `target`, which
    /// it holds weakly: the timer never keeps its target alive. Once the target
    /// is gone the timer invalidates itself, at the latest when it next fires,
    /// and everything it held is freed.
    ///
    /// ```swift
    /// import Synchronization
    ///
    /// final class Carousel: Sendable {
    ///     let page = Mutex(0)
    ///     init(loop: TimerLoop) throws {
    ///         let timer = try LoopTimer(after: .seconds(3), repeating: .seconds(3),
    ///                                   clock: .monotonic, target: self) { carousel, _, _ in
    ///             carousel.page.withLock { $0 += 1 }
    ///         }
    ///         try loop.add(timer, forMode: .common)
    ///     }
    /// }
    /// ```
    ///
    /// `action` runs on the loop's thread with the target, so the target must
    /// be `Sendable` (safe to use from that thread): a class whose state is
    /// protected, an actor, or one the caller vouches for with
    /// `@unchecked Sendable`.
    public convenience init<Target: AnyObject & Sendable>(
        after delay: Duration,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        clock: Clock,
        target: Target,
        action: @escaping @Sendable (Target, LoopTimer<Clock>, UInt64) -> Void
    ) throws(TimerError) {
        let reference = WeakReference(target)
        try self.init(after: delay, repeating: interval, tolerance: tolerance, clock: clock) {
            timer, missed in
            guard let target = reference.object else { return timer.invalidate() }
            action(target, timer, missed)
        }
    }

    // MARK: Fire dates

    /// When the timer fires next; `nil` if it is not scheduled (not yet
    /// added, or no longer valid).
    public var fireDate: Clock.Instant? {
        nextDeadline.map(Clock.Instant.init(nanoseconds:))
    }

    /// Moves the next fire to `fireDate`. A repeating timer continues every
    /// interval from there. Calling this from a one-shot timer's own action,
    /// when its loop fired it, schedules it again (after ``AnyLoopTimer/fire()`` by hand,
    /// a one-shot timer is done first).
    ///
    /// - Throws: ``TimerError/invalidated`` if the timer can no longer fire.
    public func setFireDate(_ fireDate: Clock.Instant) throws(TimerError) {
        try update { state in
            state.firstFire = fireDate.deadlineNanoseconds
            state.firstFireIsAbsolute = true
        }
    }

    override func runActionIfValid(_ missed: UInt64) -> Bool? {
        // Read under the lock, and held here while it runs: an invalidate
        // from another thread, or from the action itself, lets go of the
        // timer's copy only.
        let (action, repeats) = withState { state in
            state.isValid ? (self.action, state.interval > 0) : (nil, false)
        }
        guard let action else { return nil }
        action(self, missed)
        return repeats
    }

    override func runByHandUnlessOnALoop() -> (TimerLoop, tk_timer_id)? {
        // (The loop and handle of a timer on a loop; else the action to run
        // by hand, if valid, and whether this call ends a one-shot.)
        let (onLoop, action, endsOneShot) = withState {
            state -> ((TimerLoop, tk_timer_id)?, Action?, Bool) in
            guard state.isValid else { return (nil, nil, false) }
            if let loop = state.loop { return ((loop, state.id), nil, false) }
            // A one-shot is done as the call begins: nothing can schedule
            // it while its action runs, and no other call runs it.
            let endsOneShot = state.interval == 0
            if endsOneShot { state.isValid = false }
            return (nil, self.action, endsOneShot)
        }
        if let onLoop { return onLoop }
        action?(self, 0)
        // This call made it invalid: the action is let go of after it
        // returns, as after a fire of the loop's.
        if endsOneShot { letGoOfAction() }
        return nil
    }

    override func letGoOfAction() {
        action = nil
    }
}

extension LoopTimer where Clock == MonotonicClock {
    /// Creates an unscheduled monotonic-clock timer that fires `delay` after
    /// it is added to a loop, then every `interval` if one is given; see
    /// ``init(after:repeating:tolerance:clock:_:)``.
    ///
    /// - Throws: ``TimerError/invalidInterval(_:)``, ``TimerError/negativeTolerance(_:)``.
    public convenience init(
        after delay: Duration,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        _ action: @escaping Action
    ) throws(TimerError) {
        try self.init(
            after: delay, repeating: interval, tolerance: tolerance, clock: MonotonicClock(), action)
    }

    /// Creates an unscheduled monotonic-clock timer with a weakly held
    /// target; see ``init(after:repeating:tolerance:clock:target:action:)``.
    public convenience init<Target: AnyObject & Sendable>(
        after delay: Duration,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        target: Target,
        action: @escaping @Sendable (Target, LoopTimer<MonotonicClock>, UInt64) -> Void
    ) throws(TimerError) {
        try self.init(
            after: delay, repeating: interval, tolerance: tolerance, clock: MonotonicClock(),
            target: target, action: action)
    }
}

/// A weak reference that can cross threads: reading a weak reference is
/// thread-safe in the Swift runtime, and the object is `Sendable`.
final class WeakReference<Object: AnyObject & Sendable>: Sendable {
    nonisolated(unsafe) weak var object: Object?
    init(_ object: Object) { self.object = object }
}
