import CTimerCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A timer that fires on a ``TimerLoop``: once, or repeatedly on a fixed grid.
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
/// A timer fires `delay` after it is added to a loop (or at its absolute fire
/// date), never before, and at most its tolerance later while the loop's thread
/// is free; the tolerance lets the loop serve nearby timers with one wake-up.
/// A repeating timer stays on its grid: if the loop falls behind by whole
/// intervals it fires once, and its action learns how many fires were skipped.
/// A repeating timer's tolerance is limited to half its interval.
///
/// While scheduled, a timer is kept alive by its loop (as `RunLoop` keeps a
/// `Timer`), and it keeps alive what its action captures. To avoid the
/// loop → timer → owner cycle, capture `[weak self]`, or give the timer a
/// target it holds weakly with
/// ``init(after:repeating:tolerance:clock:target:action:)``.
///
/// Thread safety: every method may be called from any thread. The action runs
/// on the thread running the loop.
public final class LoopTimer: @unchecked Sendable {
    /// What a timer runs when it fires: the timer itself, and how many fires
    /// of a repeating timer were skipped (0 when on time).
    public typealias Action = @Sendable (LoopTimer, UInt64) -> Void

    /// The clock the timer's fire date is read on.
    public let clock: CoreClock

    /// Whether the timer repeats.
    public let repeats: Bool

    let action: Action
    let state: ThreadLocked<State>

    struct State {
        /// The loop it is scheduled on, kept alive while it is.
        var loop: TimerLoop?
        var id: tk_timer_id = 0
        var isValid = true
        var modes: tk_mode_set = 0
        /// Before scheduling: the delay from being added, or the absolute fire date.
        var firstFire: Int64
        var firstFireIsAbsolute: Bool
        var interval: Int64
        var tolerance: Int64
    }

    /// Creates an unscheduled timer that fires `delay` after it is added to a
    /// loop, then every `interval` if one is given.
    ///
    /// - Parameters:
    ///   - delay: from being added to the first fire; a negative delay counts as 0.
    ///   - interval: the period of a repeating timer, or `nil` for one fire.
    ///   - tolerance: how late the timer may fire to share a wake-up (≥ 0).
    ///   - clock: the clock it is measured on: ``CoreClock/monotonic`` (stops
    ///     while the system is suspended), ``CoreClock/boot`` (counts suspend)
    ///     or ``CoreClock/wall``.
    ///   - action: runs on the loop's thread at each fire.
    /// - Throws: ``TimerError/invalidInterval(_:)``, ``TimerError/negativeTolerance(_:)``.
    public convenience init(
        after delay: Duration,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        clock: CoreClock = .monotonic,
        _ action: @escaping Action
    ) throws(TimerError) {
        try self.init(
            firstFire: max(0, delay.saturatingNanoseconds), absolute: false,
            interval: interval, tolerance: tolerance, clock: clock, action)
    }

    /// Creates an unscheduled timer that first fires when `clock` reads
    /// `fireDate` (for ``CoreClock/wall``: time since the Unix epoch).
    ///
    /// - Throws: ``TimerError/invalidInterval(_:)``, ``TimerError/negativeTolerance(_:)``.
    public convenience init(
        fireAt fireDate: Duration,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        clock: CoreClock = .monotonic,
        _ action: @escaping Action
    ) throws(TimerError) {
        try self.init(
            firstFire: fireDate.saturatingNanoseconds, absolute: true,
            interval: interval, tolerance: tolerance, clock: clock, action)
    }

    private init(
        firstFire: Int64, absolute: Bool, interval: Duration?, tolerance: Duration,
        clock: CoreClock, _ action: @escaping Action
    ) throws(TimerError) {
        let (intervalNs, toleranceNs) = try Self.validate(interval, tolerance)
        self.clock = clock
        self.repeats = interval != nil
        self.action = action
        self.state = ThreadLocked(State(
            firstFire: firstFire, firstFireIsAbsolute: absolute,
            interval: intervalNs, tolerance: toleranceNs))
    }

    /// Creates an unscheduled timer that calls `action` with `target`, which
    /// it holds weakly: the timer never keeps its target alive. Once the target
    /// is gone the timer invalidates itself, at the latest when it next fires,
    /// and everything it held is freed.
    ///
    /// ```swift
    /// final class Carousel {
    ///     var timer: LoopTimer?
    ///     init(loop: TimerLoop) throws {
    ///         timer = try LoopTimer(after: .seconds(3), repeating: .seconds(3),
    ///                               target: self) { carousel, _, _ in carousel.next() }
    ///         try loop.add(timer!, forMode: .common)
    ///     }
    ///     deinit { timer?.invalidate() }  // runs: the timer does not retain self
    /// }
    /// ```
    ///
    /// `action` runs on the loop's thread.
    public convenience init<Target: AnyObject>(
        after delay: Duration,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        clock: CoreClock = .monotonic,
        target: Target,
        action: @escaping @Sendable (Target, LoopTimer, UInt64) -> Void
    ) throws(TimerError) {
        let reference = WeakReference(target)
        try self.init(after: delay, repeating: interval, tolerance: tolerance, clock: clock) {
            timer, missed in
            guard let target = reference.object else { return timer.invalidate() }
            action(target, timer, missed)
        }
    }

    @inline(__always)
    private static func validate(_ interval: Duration?, _ tolerance: Duration)
        throws(TimerError) -> (Int64, Int64)
    {
        var intervalNs: Int64 = 0
        if let interval {
            if interval <= .zero { throw .invalidInterval(interval) }
            intervalNs = interval.saturatingNanoseconds
        }
        if tolerance == .zero { return (intervalNs, 0) }
        if tolerance < .zero { throw .negativeTolerance(tolerance) }
        return (intervalNs, tolerance.saturatingNanoseconds)
    }

    // MARK: Reading

    /// Whether the timer can still fire: false once invalidated, and for a
    /// one-shot timer once it has fired.
    public var isValid: Bool {
        state.withLock { $0.isValid }
    }

    /// When the timer fires next, as a reading of ``clock``; `nil` if it is
    /// not scheduled (not yet added, or no longer valid).
    public var fireDate: Duration? {
        state.withLock { state in
            guard state.isValid, let loop = state.loop else { return nil }
            var info = tk_timer_info()
            guard tk_loop_timer_info(loop.handle, state.id, &info) == 0 else { return nil }
            return .nanoseconds(info.deadline_ns)
        }
    }

    /// The period of a repeating timer; `nil` for a one-shot timer.
    public var interval: Duration? {
        state.withLock { $0.interval > 0 ? .nanoseconds($0.interval) : nil }
    }

    /// The tolerance asked for. (A repeating timer uses at most half its
    /// interval.)
    public var tolerance: Duration {
        state.withLock { .nanoseconds($0.tolerance) }
    }

    /// Whether the timer came due while its loop ran a mode outside the
    /// timer's modes, and waits to fire once the loop runs one of them.
    public var isWaitingForMode: Bool {
        state.withLock { state in
            guard let loop = state.loop else { return false }
            var info = tk_timer_info()
            return tk_loop_timer_info(loop.handle, state.id, &info) == 0 && info.waiting_for_mode != 0
        }
    }

    // MARK: Changing

    /// Moves the next fire to `fireDate`, a reading of ``clock``. A repeating
    /// timer continues every interval from there. Calling this from a
    /// one-shot timer's own action, when its loop fired it, schedules it again
    /// (after ``fire()`` by hand, a one-shot timer is done first).
    ///
    /// - Throws: ``TimerError/invalidated`` if the timer can no longer fire.
    public func setFireDate(_ fireDate: Duration) throws(TimerError) {
        try update { state in
            state.firstFire = fireDate.saturatingNanoseconds
            state.firstFireIsAbsolute = true
        }
    }

    /// Changes a repeating timer's interval; the next fire stays where it is.
    /// (A one-shot timer inside its own action has no next fire: use
    /// ``setFireDate(_:)`` there.)
    ///
    /// - Throws: ``TimerError/invalidInterval(_:)`` for an interval that is not
    ///   positive, or for a one-shot timer; ``TimerError/invalidated``.
    public func setInterval(_ interval: Duration) throws(TimerError) {
        guard repeats, interval > .zero else { throw .invalidInterval(interval) }
        try update(keepingFireDate: true) { $0.interval = interval.saturatingNanoseconds }
    }

    /// Changes the tolerance; the next fire date stays where it is. Throws
    /// ``TimerError/invalidated`` for a one-shot timer inside its own action,
    /// which has no next fire date until ``setFireDate(_:)`` gives it one.
    ///
    /// - Throws: ``TimerError/negativeTolerance(_:)``, ``TimerError/invalidated``.
    public func setTolerance(_ tolerance: Duration) throws(TimerError) {
        guard tolerance >= .zero else { throw .negativeTolerance(tolerance) }
        try update(keepingFireDate: true) { $0.tolerance = tolerance.saturatingNanoseconds }
    }

    /// Applies `change` and, if the timer is scheduled, reschedules it.
    private func update(keepingFireDate: Bool = false, _ change: (inout State) -> Void)
        throws(TimerError)
    {
        try state.withLock { (state) throws(TimerError) in
            guard state.isValid else { throw .invalidated }
            guard let loop = state.loop else { return change(&state) }
            var info = tk_timer_info()
            guard tk_loop_timer_info(loop.handle, state.id, &info) == 0 || !keepingFireDate else {
                throw .invalidated
            }
            var changed = state
            change(&changed)
            if keepingFireDate {
                changed.firstFire = info.deadline_ns
                changed.firstFireIsAbsolute = true
            }
            var spec = changed.spec(clock: clock, modes: state.modes)
            let result = tk_loop_reschedule(loop.handle, state.id, &spec)
            if result == -ENOENT { throw .invalidated }
            _ = try checkLoop(result, "tk_loop_reschedule")
            state = changed
        }
    }

    // MARK: Firing and invalidating

    /// Runs the action now, on the calling thread, with 0 skipped fires. A
    /// one-shot timer is then done; a repeating timer keeps its schedule. Does
    /// nothing if the timer is no longer valid.
    ///
    /// The corresponding C function is `tk_loop_fire`.
    public func fire() {
        let (loop, id, valid) = state.withLock { ($0.loop, $0.id, $0.isValid) }
        guard valid else { return }
        if let loop, tk_loop_fire(loop.handle, id) == 0 { return }
        if loop == nil {
            action(self, 0)
            if !repeats { invalidate() }
        }
    }

    /// Stops the timer for good: no call of its action starts after this
    /// returns, and the loop lets go of it. Idempotent, and safe from any
    /// thread, including from the timer's own action. (It does not wait: if
    /// the loop's thread is running the action at that moment, that call
    /// finishes.)
    ///
    /// The corresponding C function is `tk_loop_cancel`.
    ///
    /// - Complexity: O(log n) in the loop's pending timers.
    public func invalidate() {
        // The C loop holds a reference to this timer and lets go of it (its
        // release handler) once no callback can be given it any more. An
        // action already past the validity check in `fired` may finish.
        let (loop, id) = state.withLock { state in
            let taken = (state.loop, state.id)
            state.isValid = false
            state.loop = nil
            return taken
        }
        guard let loop else { return }
        _ = tk_loop_cancel(loop.handle, id)
    }

    // MARK: The C side

    /// Schedules the C timer on `loop` in `modes`, or adds `modes` to a
    /// scheduled timer's.
    func schedule(on loop: TimerLoop, modes: tk_mode_set) throws(TimerError) {
        try state.withLock { (state) throws(TimerError) in
            guard state.isValid else { throw .invalidated }
            if let current = state.loop {
                guard current === loop else { throw .scheduledOnAnotherLoop }
                let merged = state.modes | modes
                if merged == state.modes { return }
                var info = tk_timer_info()
                guard tk_loop_timer_info(loop.handle, state.id, &info) == 0 else {
                    throw .invalidated
                }
                var changed = state
                changed.firstFire = info.deadline_ns
                changed.firstFireIsAbsolute = true
                var spec = changed.spec(clock: clock, modes: merged)
                _ = try checkLoop(tk_loop_reschedule(loop.handle, state.id, &spec), "tk_loop_reschedule")
                state.modes = merged
                return
            }
            var spec = state.spec(clock: clock, modes: modes)
            var id: tk_timer_id = 0
            // The loop's reference, released by the loop's release handler.
            let context = Unmanaged.passRetained(self)
            let result = tk_loop_schedule(
                loop.handle, &spec,
                { _, id, missed, context in
                    // The loop holds its reference until this returns.
                    Unmanaged<LoopTimer>.fromOpaque(context!).takeUnretainedValue()
                        .fired(id, missed)
                },
                context.toOpaque(), &id)
            if result < 0 {
                context.release()
                _ = try checkLoop(result, "tk_loop_schedule")
            }
            state.loop = loop
            state.id = id
            state.modes = modes
        }
    }

    /// Runs the action for one fire of the C timer `id`, unless the timer was
    /// invalidated since the C core picked it (from another thread).
    private func fired(_ id: tk_timer_id, _ missed: UInt64) {
        guard state.withLock({ $0.isValid }) else { return }
        action(self, missed)
        guard !repeats else { return }
        // A one-shot timer is done unless its action scheduled it again; the
        // loop releases it when this call returns.
        state.withLock { state in
            guard state.id == id, let loop = state.loop else { return }
            var info = tk_timer_info()
            if tk_loop_timer_info(loop.handle, id, &info) == 0 { return }
            state.isValid = false
            state.loop = nil
        }
    }
}

extension LoopTimer.State {
    /// The C spec for this state's next fire.
    func spec(clock: CoreClock, modes: tk_mode_set) -> tk_timer_spec {
        tk_timer_spec(
            clock: clock.rawClock,
            deadline_ns: firstFire,
            interval_ns: interval,
            leeway_ns: tolerance,
            modes: modes,
            flags: firstFireIsAbsolute ? UInt32(TK_TIMER_ABSOLUTE) : 0)
    }
}

/// A weak reference that can cross threads; reading a weak reference is
/// thread-safe in the Swift runtime.
final class WeakReference<Object: AnyObject>: @unchecked Sendable {
    weak var object: Object?
    init(_ object: Object) { self.object = object }
}

