import CTimerCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A ``LoopTimer`` of any clock: what every timer can do whatever its clock
/// (invalidate, fire, change its interval or tolerance), for code that keeps
/// timers of several clocks together.
///
/// Every `AnyLoopTimer` is a `LoopTimer<Clock>`; cast to reach its typed
/// fire date.
///
/// Thread safety: every method may be called from any thread.
public class AnyLoopTimer: @unchecked Sendable {
    /// The C core's record of this timer while a loop holds it
    /// (`tk_loop_schedule_record`): the loop keeps the timer's state here,
    /// in the object that invalidating reads anyway, rather than in its own
    /// table, and the record names its loop and slot, so that invalidating
    /// finds the timer from the record (`tk_loop_cancel_record`) without
    /// reading the timer's slot in the table: at a million pending timers,
    /// a cache miss less.
    /// Only the C core reads or writes it, through ``recordPointer``, under
    /// the loop's lock. It is the first stored property, so it starts where
    /// the object's stored properties do, which is where ``recordPointer``
    /// finds it (`TimerRecordTests` checks that).
    final var record = tk_timer_record()

    /// Only touched under `lock`, which is what keeps accesses apart: the
    /// runtime's exclusivity bookkeeping would only add cost.
    @exclusivity(unchecked) private var guarded: State

    /// The C core's clock the timer is measured on.
    public let clockID: ClockID

    /// Whether the timer's fire dates are a ``ManualClock``'s instants, which
    /// only a manual loop's time can reach.
    let needsManualLoop: Bool

    /// Guards `guarded`, inside this object: a timer is one allocation.
    ///
    /// This and the two fields before it sit in the bytes that end the state
    /// short of a whole word, so that the object stays 136 bytes, a 144-byte
    /// malloc chunk; for the same reason the state keeps its flags in one
    /// byte, and whether a timer repeats is not stored (it does if it has an
    /// interval).
    private let lock = InlineLock()

    /// What the timer knows besides the C core: the loop and handle while
    /// scheduled, validity, and the settings to schedule it with (the C table
    /// holds the ones in force once it is scheduled).
    struct State {
        /// The loop it is scheduled on. Not a reference of the timer's own:
        /// the loop keeps itself alive while it holds any timer's record
        /// (its hold, `tk_loop_set_hold`), and while this is set, under the
        /// timer's lock, the loop holds this timer's record: every call
        /// that ends the timer in the loop clears this first, under the
        /// lock, and `invalidate()` makes its cancel under the lock (see
        /// there). That saves two atomic operations per schedule and
        /// invalidate on the loop's reference count.
        // The fields go widest first, so that the object stays small.
        var loopReference: Unmanaged<TimerLoop>?
        var id: tk_timer_id = 0
        /// Before scheduling: the delay from being added, or the absolute fire date.
        var firstFire: Int64
        /// The period of a repeating timer, at least 1 ns; 0 for a one-shot.
        var interval: Int64
        var tolerance: Int64
        var modes: tk_mode_set = 0
        /// ``isValid``, ``firstFireIsAbsolute`` and ``isPrecise``, a bit each.
        private var flags: UInt8

        /// The loop it is scheduled on (see ``loopReference``).
        var loop: TimerLoop? {
            get { loopReference?.takeUnretainedValue() }
            set { loopReference = newValue.map(Unmanaged.passUnretained) }
        }

        private static let valid: UInt8 = 1
        private static let absolute: UInt8 = 2
        private static let precise: UInt8 = 4

        init(firstFire: Int64, interval: Int64, tolerance: Int64, firstFireIsAbsolute: Bool) {
            self.firstFire = firstFire
            self.interval = interval
            self.tolerance = tolerance
            self.flags = Self.valid | (firstFireIsAbsolute ? Self.absolute : 0)
        }

        /// Whether the timer can still fire.
        var isValid: Bool {
            get { flags & Self.valid != 0 }
            set { set(Self.valid, newValue) }
        }

        /// Whether `firstFire` is an absolute fire date rather than a delay.
        var firstFireIsAbsolute: Bool {
            get { flags & Self.absolute != 0 }
            set { set(Self.absolute, newValue) }
        }

        /// Fires on the dot, with no tolerance (`TK_TIMER_PRECISE`).
        var isPrecise: Bool {
            get { flags & Self.precise != 0 }
            set { set(Self.precise, newValue) }
        }

        private mutating func set(_ flag: UInt8, _ on: Bool) {
            flags = on ? flags | flag : flags & ~flag
        }
    }

    init(
        clock: ClockID, needsManualLoop: Bool, firstFire: Int64, absolute: Bool,
        interval: Duration?, tolerance: Duration
    ) throws(TimerError) {
        self.clockID = clock
        self.needsManualLoop = needsManualLoop
        // Written out rather than with Optional.map: this is on the path of
        // every schedule.
        var intervalNanoseconds: Int64 = 0
        if let interval { intervalNanoseconds = try Self.intervalNanoseconds(interval) }
        self.guarded = State(
            firstFire: firstFire, interval: intervalNanoseconds,
            tolerance: try Self.toleranceNanoseconds(tolerance), firstFireIsAbsolute: absolute)
    }

    /// Whether the timer repeats: whether it was made with an interval.
    public var repeats: Bool {
        withState { $0.interval > 0 }
    }

    /// Runs `body` with the state, holding the timer's lock. `body` must not
    /// block or call back into the timer.
    @inline(__always)
    func withState<Result, Failure: Error>(
        _ body: (inout State) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&guarded)
    }

    /// A repeating interval in whole nanoseconds, rounded up, so that the
    /// grid never runs ahead of the one asked for: at least 1 ns, since the
    /// core reads 0 as "one-shot".
    static func intervalNanoseconds(_ interval: Duration) throws(TimerError) -> Int64 {
        guard interval >= .nanoseconds(1) else { throw .invalidInterval(interval) }
        return interval.nanosecondsRoundedUp
    }

    /// A tolerance in nanoseconds (a part of a nanosecond counts as none).
    static func toleranceNanoseconds(_ tolerance: Duration) throws(TimerError) -> Int64 {
        let attoseconds = tolerance.attoseconds
        if attoseconds == 0 { return 0 }  // the common case
        guard attoseconds > 0 else { throw .negativeTolerance(tolerance) }
        return tolerance.saturatingNanoseconds
    }

    // MARK: Reading

    /// Whether the timer can still fire: false once invalidated, and for a
    /// one-shot timer once it has fired.
    public var isValid: Bool {
        withState { $0.isValid }
    }

    /// The period of a repeating timer; `nil` for a one-shot timer.
    public var interval: Duration? {
        withState { $0.interval > 0 ? .nanoseconds($0.interval) : nil }
    }

    /// The tolerance asked for. (A repeating timer uses at most half its
    /// interval.)
    public var tolerance: Duration {
        withState { .nanoseconds($0.tolerance) }
    }

    /// Whether the timer is precise: its loop wakes a margin before each
    /// deadline and spins on the clock to it (see ``setPrecise(_:)``).
    public var isPrecise: Bool {
        withState { $0.isPrecise }
    }

    /// Whether the timer came due while its loop ran a mode outside the
    /// timer's modes, and waits to fire once the loop runs one of them: a
    /// pass of the loop found it due. (An advance of a manual loop makes
    /// passes at its own mode's wake-ups and where it starts: one that goes
    /// past the timer's fire date in another mode with no pass after it
    /// leaves this false until the next pass.)
    public var isWaitingForMode: Bool {
        withState { state in
            guard let loop = state.loop else { return false }
            return loop.timerInfo(state.id)?.waiting_for_mode ?? 0 != 0
        }
    }

    /// The next fire's deadline on the timer's clock, if it is scheduled.
    var nextDeadline: Int64? {
        withState { state in
            guard state.isValid, let loop = state.loop else { return nil }
            return loop.timerInfo(state.id)?.deadline_ns
        }
    }

    // MARK: Changing

    /// Changes a repeating timer's interval; the next fire stays where it is.
    /// (A one-shot timer inside its own action has no next fire: use
    /// `setFireDate(_:)` there.)
    ///
    /// - Throws: ``TimerError/invalidInterval(_:)`` for an interval below one
    ///   nanosecond, ``TimerError/notRepeating`` for a one-shot timer,
    ///   ``TimerError/invalidated``.
    public func setInterval(_ interval: Duration) throws(TimerError) {
        guard repeats else { throw .notRepeating }
        let nanoseconds = try Self.intervalNanoseconds(interval)
        try update(keepingFireDate: true) { $0.interval = nanoseconds }
    }

    /// Changes the tolerance; the next fire date stays where it is. Throws
    /// ``TimerError/invalidated`` for a one-shot timer inside its own action,
    /// which has no next fire date until `setFireDate(_:)` gives it one.
    ///
    /// - Throws: ``TimerError/negativeTolerance(_:)``, ``TimerError/invalidated``.
    public func setTolerance(_ tolerance: Duration) throws(TimerError) {
        let nanoseconds = try Self.toleranceNanoseconds(tolerance)
        try update(keepingFireDate: true) { $0.tolerance = nanoseconds }
    }

    /// Makes the timer precise, or ordinary again; the next fire date stays
    /// where it is.
    ///
    /// A precise timer fires as close to its deadline as the machine allows,
    /// never before it: its loop wakes ``LoopPrecision/margin`` early and spins
    /// on the clock until the deadline, so the wake-up's own latency is not
    /// added to the fire. The cost is CPU time, shown in
    /// ``LoopStatistics/spinTime``. A precise timer has no tolerance: the
    /// tolerance set is kept, and used again once the timer is no longer
    /// precise. On a manual loop, a precise timer fires exactly at its
    /// deadline, as every timer with no tolerance does.
    ///
    /// The corresponding C flag is `TK_TIMER_PRECISE`.
    ///
    /// - Throws: ``TimerError/invalidated`` (as ``setTolerance(_:)`` does).
    public func setPrecise(_ precise: Bool) throws(TimerError) {
        try update(keepingFireDate: true) { $0.isPrecise = precise }
    }

    /// Applies `change` and, if the timer is scheduled, reschedules it.
    /// Keeping the fire date, the C core keeps the deadline it has at that
    /// moment (`TK_TIMER_KEEP_DEADLINE`): one read here, before the loop's
    /// thread fires it, would put a repeating timer back on a deadline
    /// already fired for.
    func update(keepingFireDate: Bool = false, _ change: (inout State) -> Void)
        throws(TimerError)
    {
        try withState { (state) throws(TimerError) in
            guard state.isValid else { throw .invalidated }
            guard let loop = state.loop else { return change(&state) }
            var changed = state
            change(&changed)
            var spec =
                keepingFireDate
                ? changed.specKeepingDeadline(clock: clockID, modes: state.modes)
                : changed.spec(clock: clockID, modes: state.modes)
            // -ENOENT: it fired for good, was invalidated, or, keeping the
            // fire date, is a one-shot inside its action, with none to keep.
            let result = tk_loop_reschedule(loop.handle, state.id, &spec)
            if result == -ENOENT { throw .invalidated }
            _ = try TimerError.check(result, "tk_loop_reschedule")
            state = changed
        }
    }

    // MARK: Firing and invalidating

    /// Runs the action now, on the calling thread, with 0 skipped fires. A
    /// one-shot timer is then done; a repeating timer keeps its schedule. Does
    /// nothing if the timer is no longer valid.
    ///
    /// It is the caller's call, made even while the action runs elsewhere:
    /// called from another thread while the loop's thread runs the action,
    /// the two calls overlap (the action is `@Sendable` for that reason),
    /// and a repeating timer's action that fires its own timer recurses. The
    /// loop itself never starts the action while a call of it runs.
    ///
    /// A one-shot timer on no loop is done as the call begins: inside the
    /// action it is no longer valid, so an add to a loop, or a
    /// `setFireDate(_:)`, made meanwhile (from the action or another thread)
    /// is refused with ``TimerError/invalidated``, and of two calls at once
    /// one runs the action. (On a loop, the call goes through the loop, as
    /// the loop's own fires do, and the loop starts no other call of the
    /// action until it returns. A one-shot reads valid inside that action
    /// but has left the loop's pending timers: `setFireDate(_:)` there throws
    /// ``TimerError/invalidated``.) A repeating timer on no loop is the
    /// caller's alone: if it is added to a loop while a call by hand runs,
    /// the loop knows nothing of that call.
    ///
    /// The corresponding C function is `tk_loop_fire`.
    public func fire() {
        guard let (loop, id) = runByHandUnlessOnALoop() else { return }
        // -ENOENT: it fired or was invalidated meanwhile; nothing to run.
        // The loop is held across the call: a one-shot's fire may end the
        // loop's hold inside it (its release handler lets go of it there),
        // and a loop freed inside its own call could not be destroyed.
        let result = withExtendedLifetime(loop) { tk_loop_fire(loop.handle, id) }
        if result != -ENOENT { SystemError.expectSuccess(result, "tk_loop_fire") }
    }

    /// Stops the timer for good: no call of its action starts after this
    /// returns, the loop lets go of it, and it lets go of its action (and
    /// what the action captures). Idempotent, and safe from any thread,
    /// including from the timer's own action. (It does not wait: if the
    /// loop's thread is running the action at that moment, that call
    /// finishes, holding the action until it returns.)
    ///
    /// The corresponding C function is `tk_loop_cancel_record` (which is
    /// `tk_loop_cancel` handing the loop's reference back, with the timer
    /// named by its record rather than by its handle).
    ///
    /// - Complexity: O(log n) in the loop's pending timers.
    public func invalidate() {
        // The C loop holds a reference to this timer and lets go of it once
        // no callback can be given it any more. An action already past the
        // validity check in `runActionIfValid` may finish.
        //
        // The cancel is made under the timer's lock. The timer holds no
        // reference to its loop (see `State.loopReference`): the loop is alive while
        // it holds the timer's record, and a one-shot's fire, which ends
        // the record when its callback returns, takes the lock in that
        // callback first, so it cannot end the record, and with it maybe
        // the loop's hold, between the read of the loop here and the cancel.
        var context: UnsafeMutableRawPointer?
        let (result, ended, endedLoop) = withState {
            state -> (Int32, Bool, Unmanaged<TimerLoop>?) in
            let ended = state.isValid
            state.isValid = false
            guard let loop = state.loopReference else { return (-ENOENT, ended, nil) }
            state.loopReference = nil
            // Read without touching the loop's reference count.
            let handle = loop._withUnsafeGuaranteedRef { $0.handle }
            // The record names the timer: it is this timer's until the loop
            // is done with it, and nothing schedules it again once it is
            // invalid.
            let result = tk_loop_cancel_record(handle, recordPointer, &context)
            // 2: the loop's hold ends with this timer, and is released
            // below, once the lock is let go of: the loop may be freed.
            return (result, ended, result == 2 ? loop : nil)
        }
        if ended { letGoOfAction() }
        // 1 or 2: the loop let go of the timer and handed back its
        // reference (the context passed at schedule), which is released
        // here rather than by the loop's release handler. 0: a callback of
        // it runs, and the release handler gets the reference when it
        // returns. -ENOENT: a one-shot that fired meanwhile, or a timer on
        // no loop; nothing is left to cancel.
        if result == 1 || result == 2, let context {
            Unmanaged<AnyLoopTimer>.fromOpaque(context).release()
        } else if result != -ENOENT {
            SystemError.expectSuccess(result, "tk_loop_cancel_record")
        }
        endedLoop?.release()
    }

    // MARK: The C side

    /// Runs the action if the timer is valid, and returns whether the timer
    /// repeats, read with the validity before the action ran; `nil` if it
    /// was not valid, and nothing ran (overridden by ``LoopTimer``, which
    /// knows the action's type).
    func runActionIfValid(_ missed: UInt64) -> Bool? {
        preconditionFailure("every AnyLoopTimer is a LoopTimer")
    }

    /// For ``fire()``: the loop and the handle of a valid timer on a loop,
    /// for a call through the loop; for a valid timer on no loop, runs the
    /// action here (ending a one-shot timer first, under the lock that
    /// reads the action), and returns `nil`, as it does for a timer no
    /// longer valid (overridden by ``LoopTimer``, which knows the action's
    /// type).
    func runByHandUnlessOnALoop() -> (TimerLoop, tk_timer_id)? {
        preconditionFailure("every AnyLoopTimer is a LoopTimer")
    }

    /// Lets go of the action, so that a timer that can no longer fire keeps
    /// nothing its action captures (overridden by ``LoopTimer``, which
    /// holds the action). Called once, by the call that made the timer
    /// invalid, after it let go of the lock: the action is only read under
    /// the lock while the timer is valid, so no read can come after, and
    /// what the action captures may have a deinit that uses this timer.
    func letGoOfAction() {
        preconditionFailure("every AnyLoopTimer is a LoopTimer")
    }

    /// Throws if `loop` cannot take this timer at all.
    @inline(__always)
    private func checkLoop(_ loop: TimerLoop) throws(TimerError) {
        if needsManualLoop && !loop.isManual { throw .notManual }
        // A loop whose own thread's run failed would never fire the timer.
        if loop.hasFailed, let failure = loop.failure { throw failure }
    }

    /// Schedules the C timer on `loop` in the modes `modeSet` returns, or
    /// adds them to a scheduled timer's. `modeSet` is called (under the
    /// timer's lock) only once the timer and the loop pass their checks, so
    /// that an add they refuse, even one that an invalidate on another
    /// thread makes refused meanwhile, does not take one of the loop's mode
    /// bits for a new name. (A refusal of the C core's after that, for want
    /// of memory, leaves a new name its bit.)
    @inline(__always)
    func schedule(
        on loop: TimerLoop, modes modeSet: () throws(TimerError) -> tk_mode_set
    ) throws(TimerError) {
        try checkLoop(loop)
        try withState { (state) throws(TimerError) in
            try state.checkSchedulable(on: loop)
            let modes = try modeSet()
            guard state.loop != nil else { return try start(&state, on: loop, modes: modes) }
            let merged = state.modes | modes
            if merged == state.modes { return }
            // Its next fire stays where it is (see update).
            var spec = state.specKeepingDeadline(clock: clockID, modes: merged)
            let result = tk_loop_reschedule(loop.handle, state.id, &spec)
            if result == -ENOENT { throw .invalidated }
            _ = try TimerError.check(result, "tk_loop_reschedule")
            state.modes = merged
        }
    }

    /// Schedules a timer that its creator has not let any other code see
    /// yet (``TimerLoop/schedule(after:repeating:tolerance:clock:in:_:)``
    /// made it a moment ago): valid, on no loop, and with no other thread
    /// able to reach it, so its state needs no lock until the loop has it.
    /// Every write to the state comes before the loop's lock is let go in
    /// `tk_loop_schedule_record`, and the loop's thread takes that lock
    /// before it can fire the timer, which orders the writes before
    /// anything that thread does with the timer.
    @inline(__always)
    func scheduleUnshared(
        on loop: TimerLoop, modes modeSet: () throws(TimerError) -> tk_mode_set
    ) throws(TimerError) {
        try checkLoop(loop)
        try start(&guarded, on: loop, modes: try modeSet())
    }

    /// Hands the timer to the C core on `loop` in `modes`: `state` is its
    /// state, valid and on no loop, held under its lock or, unshared, by
    /// its only user. The state is written before the core takes the timer
    /// (its handle by the core, under the loop's lock, through a pointer),
    /// so that the loop's thread, which may fire it at once, finds it whole;
    /// a refusal puts it back.
    @inline(__always)
    private func start(_ state: inout State, on loop: TimerLoop, modes: tk_mode_set) throws(TimerError) {
        var spec = state.spec(clock: clockID, modes: modes)
        assert(
            withUnsafeMutablePointer(to: &record) { $0 } == recordPointer,
            "the record is not the first stored property")
        // The loop's reference, released by the loop's release handler,
        // or handed back to invalidate(). It keeps the record alive for
        // as long as the loop may use it.
        let context = Unmanaged.passRetained(self)
        state.loop = loop
        state.modes = modes
        let result = withUnsafeMutablePointer(to: &state.id) { id in
            // From the moment this succeeds the loop's thread may fire the
            // timer and write its state under the lock: an unshared
            // schedule holds no lock, so nothing here touches `state`
            // after a success.
            tk_loop_schedule_record(
                loop.handle, recordPointer, &spec,
                { _, id, missed, context in
                    // The loop holds its reference until this returns.
                    Unmanaged<AnyLoopTimer>.fromOpaque(context!).takeUnretainedValue()
                        .fired(id, missed)
                },
                context.toOpaque(), id)
        }
        if result < 0 {
            state.loop = nil
            state.modes = 0
            state.id = 0
            context.release()
            _ = try TimerError.check(result, "tk_loop_schedule_record")
        }
    }

    /// Where ``record`` is. The object never moves, and the loop is done
    /// with the record before it lets go of its reference to the object (the
    /// context it hands to the release handler, or back to ``invalidate()``),
    /// so the record outlives the loop's use of it.
    var recordPointer: UnsafeMutablePointer<tk_timer_record> {
        _getUnsafePointerToStoredProperties(self).assumingMemoryBound(to: tk_timer_record.self)
    }

    /// Runs the action for one fire of the C timer `id`, unless the timer was
    /// invalidated since the C core picked it (from another thread).
    private func fired(_ id: tk_timer_id, _ missed: UInt64) {
        guard let repeating = runActionIfValid(missed), !repeating else { return }
        // A one-shot timer is done unless its action scheduled it again; the
        // loop releases it when this call returns.
        let ended = withState { state in
            guard state.id == id, state.isValid, let loop = state.loop else { return false }
            if loop.timerInfo(id) != nil { return false }
            state.isValid = false
            state.loop = nil
            return true
        }
        if ended { letGoOfAction() }
    }
}

extension AnyLoopTimer.State {
    /// Throws if the timer cannot be scheduled on `loop`: it was invalidated
    /// (or, one-shot, fired), or it is scheduled on another loop.
    @inline(__always)
    func checkSchedulable(on loop: TimerLoop) throws(TimerError) {
        guard isValid else { throw .invalidated }
        if let current = self.loop, current !== loop { throw .scheduledOnAnotherLoop }
    }

    /// The C spec for this state's next fire.
    func spec(clock: ClockID, modes: tk_mode_set) -> tk_timer_spec {
        let (cModes, common) = TimerLoop.cModes(modes)
        return tk_timer_spec(
            clock: clock.rawClock,
            delay_ns: firstFireIsAbsolute ? 0 : firstFire,
            deadline_ns: firstFireIsAbsolute ? firstFire : 0,
            interval_ns: interval,
            leeway_ns: isPrecise ? 0 : tolerance,
            modes: cModes,
            flags: (firstFireIsAbsolute ? UInt32(TK_TIMER_ABSOLUTE) : 0)
                | (isPrecise ? UInt32(TK_TIMER_PRECISE) : 0)
                | (common ? UInt32(TK_TIMER_COMMON) : 0))
    }

    /// The C spec that changes a scheduled timer's settings to this state's
    /// and keeps the next deadline it has in the loop.
    func specKeepingDeadline(clock: ClockID, modes: tk_mode_set) -> tk_timer_spec {
        let (cModes, common) = TimerLoop.cModes(modes)
        return tk_timer_spec(
            clock: clock.rawClock, delay_ns: 0, deadline_ns: 0, interval_ns: interval,
            leeway_ns: isPrecise ? 0 : tolerance, modes: cModes,
            flags: UInt32(TK_TIMER_KEEP_DEADLINE) | (isPrecise ? UInt32(TK_TIMER_PRECISE) : 0)
                | (common ? UInt32(TK_TIMER_COMMON) : 0))
    }
}
