import CTimerCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An event loop for timers: runs them on one thread at a time, in modes,
/// with real tolerance.
///
/// A loop is run by calling ``run(mode:until:)`` on some thread (or by
/// ``startThread(mode:)``, which gives it a thread of its own). Any thread may
/// schedule and invalidate timers on it, stop it or wake it up.
///
/// ```swift
/// let loop = try TimerLoop()
/// try loop.schedule(after: .milliseconds(500), tolerance: .milliseconds(50)) { _, _ in
///     print("half a second later")
///     loop.stop()
/// }
/// try loop.run()
/// ```
///
/// The loop sleeps on one timerfd per clock in use, armed for the earliest
/// (fire date + tolerance) among the timers of the mode it runs, so timers
/// with tolerance share wake-ups; nothing ever fires early. Timers are kept
/// in the C core's deadline heap: scheduling and invalidating are O(log n).
///
/// A loop made by ``manual(startingAt:)`` never waits for time: its clocks move
/// only through ``advance(by:mode:)``, which fires due timers synchronously, in
/// order, on the calling thread. That is how code built on timers is tested
/// deterministically.
///
/// Thread safety: every method may be called from any thread. Running is
/// exclusive: a second thread that tries to run the loop while one runs it
/// gets ``TimerError/busy``.
public final class TimerLoop: @unchecked Sendable {
    /// The C loop. Owned: destroyed in `deinit`.
    let handle: OpaquePointer

    /// Whether the loop runs on a manual clock (see ``manual(startingAt:)``).
    public let isManual: Bool

    /// Named modes and their bit in the C core's mode sets.
    private let modeTable = ThreadLocked(ModeTable())

    /// Pending perform requests, by target (see ``perform(after:in:target:_:)``).
    let performRegistry = ThreadLocked(PerformRegistry())

    /// Every clock-change handler ever set, kept alive for as long as the C
    /// loop may call it.
    private let clockChangeHandlers = ThreadLocked<[ClockChangeHandler]>([])

    private init(handle: OpaquePointer, isManual: Bool) {
        self.handle = handle
        self.isManual = isManual
        // Every context TimerKit gives the C loop is a retained Swift object
        // (a LoopTimer or a sleep); the loop says when it is done with one.
        _ = tk_loop_set_release_handler(handle) { _, context in
            Unmanaged<AnyObject>.fromOpaque(context!).release()
        }
    }

    /// Creates a loop on the real clocks.
    ///
    /// The corresponding C function is `tk_loop_create`.
    ///
    /// - Throws: ``TimerError/core(_:)`` if the kernel refuses an epoll
    ///   instance or an eventfd (for example `EMFILE`).
    public convenience init() throws(TimerError) {
        var handle: OpaquePointer?
        _ = try checkLoop(tk_loop_create(&handle), "tk_loop_create")
        self.init(handle: handle!, isManual: false)
    }

    /// Creates a loop on a manual clock whose three clocks (monotonic, boot and
    /// wall) all read `start` until moved by ``advance(by:mode:)`` or
    /// ``setManualTime(_:to:)``.
    ///
    /// The corresponding C function is `tk_loop_create_manual`.
    public static func manual(startingAt start: Duration = .zero) throws(TimerError) -> TimerLoop {
        var handle: OpaquePointer?
        _ = try checkLoop(
            tk_loop_create_manual(&handle, start.saturatingNanoseconds), "tk_loop_create_manual")
        return TimerLoop(handle: handle!, isManual: true)
    }

    deinit {
        // Scheduled timers keep their loop alive, so few are left here; the
        // release handler lets go of any that are.
        _ = tk_loop_destroy(handle)
    }

    // MARK: Running

    /// Why ``run(mode:until:)`` returned.
    public enum RunResult: Sendable, Hashable {
        /// ``stop()`` was called.
        case stopped
        /// The `until` deadline passed.
        case timedOut
        /// ``runOnce(mode:waiting:)`` made its pass.
        case passed
    }

    /// Runs the loop on the calling thread in `mode` until ``stop()`` is
    /// called or, if given, the monotonic clock reaches `deadline`.
    ///
    /// A loop with nothing to do keeps waiting, since another thread may add a
    /// timer. Calling `run` from one of the loop's own callbacks runs it nested
    /// (say, in ``LoopMode/tracking`` while a drag lasts); ``stop()`` ends the
    /// innermost run.
    ///
    /// The corresponding C function is `tk_loop_run`.
    ///
    /// - Throws: ``TimerError/busy`` if another thread is running the loop,
    ///   ``TimerError/notARunMode(_:)`` for ``LoopMode/common``,
    ///   ``TimerError/tooManyModes(_:)``.
    @discardableResult
    public func run(mode: LoopMode = .default, until deadline: MonotonicClock.Instant? = nil)
        throws(TimerError) -> RunResult
    {
        let index = try modeIndex(mode)
        let until = deadline?.offset.saturatingNanoseconds ?? Int64.max
        return try runResult(tk_loop_run(handle, index, until, 0))
    }

    /// Makes one pass: fires what is due in `mode` and handles what is ready;
    /// with `waiting`, first waits until something happens.
    ///
    /// The corresponding C function is `tk_loop_run` with `TK_RUN_ONCE` or
    /// `TK_RUN_NOWAIT`.
    @discardableResult
    public func runOnce(mode: LoopMode = .default, waiting: Bool = true) throws(TimerError)
        -> RunResult
    {
        let index = try modeIndex(mode)
        let flags = waiting ? UInt32(TK_RUN_ONCE) : UInt32(TK_RUN_NOWAIT)
        return try runResult(tk_loop_run(handle, index, Int64.max, flags))
    }

    private func runResult(_ code: Int32) throws(TimerError) -> RunResult {
        switch try checkLoop(code, "tk_loop_run") {
        case Int32(TK_RUN_STOPPED.rawValue): .stopped
        case Int32(TK_RUN_TIMED_OUT.rawValue): .timedOut
        default: .passed
        }
    }

    /// Ends the innermost ``run(mode:until:)`` after the callback it is in. If
    /// the loop is not running, its next run returns at once. Safe from any
    /// thread and from callbacks.
    ///
    /// The corresponding C function is `tk_loop_stop`.
    public func stop() {
        _ = tk_loop_stop(handle)
    }

    /// Wakes a waiting run for one pass, from any thread.
    ///
    /// The corresponding C function is `tk_loop_wakeup`.
    public func wakeUp() {
        _ = tk_loop_wakeup(handle)
    }

    /// Creates a loop and runs it in `mode` on a new thread of its own, until
    /// ``stop()`` is called.
    ///
    /// - Throws: ``TimerError/core(_:)`` if the loop or the thread cannot be
    ///   created.
    public static func startThread(mode: LoopMode = .default) throws(TimerError) -> TimerLoop {
        let loop = try TimerLoop()
        let index = try loop.modeIndex(mode)
        try LoopThread.start {
            TimerLoop.setCurrent(loop)
            _ = tk_loop_run(loop.handle, index, Int64.max, 0)
        }
        return loop
    }

    // MARK: The current thread's loop

    /// The calling thread's loop, created the first time it is asked for, like
    /// `RunLoop.current`. It lives as long as the thread.
    ///
    /// - Throws: ``TimerError/core(_:)`` if a new loop cannot be created.
    public static func current() throws(TimerError) -> TimerLoop {
        if let loop = currentIfAny() { return loop }
        let loop = try TimerLoop()
        setCurrent(loop)
        return loop
    }

    private static func currentIfAny() -> TimerLoop? {
        guard let pointer = pthread_getspecific(currentLoopKey) else { return nil }
        return Unmanaged<TimerLoop>.fromOpaque(pointer).takeUnretainedValue()
    }

    fileprivate static func setCurrent(_ loop: TimerLoop) {
        if let old = pthread_getspecific(currentLoopKey) {
            Unmanaged<TimerLoop>.fromOpaque(old).release()
        }
        pthread_setspecific(currentLoopKey, Unmanaged.passRetained(loop).toOpaque())
    }

    // MARK: Modes

    /// Adds `mode` to the loop's common modes: timers added to
    /// ``LoopMode/common`` from now on also fire in it. (Timers already added
    /// to ``LoopMode/common`` keep the modes they had.)
    public func addCommonMode(_ mode: LoopMode) throws(TimerError) {
        try modeTable.withLock { (table) throws(TimerError) in
            let index = try table.index(of: mode)
            table.common |= 1 << index
        }
    }

    /// The bit of a mode the loop can run in.
    func modeIndex(_ mode: LoopMode) throws(TimerError) -> UInt32 {
        if mode == .default { return 0 }
        return try modeTable.withLock { (table) throws(TimerError) in try table.index(of: mode) }
    }

    /// The C mode set for `modes` (``LoopMode/common`` standing for the common modes).
    func modeSet(_ modes: [LoopMode]) throws(TimerError) -> tk_mode_set {
        if modes.count == 1 && modes[0] == .default { return 1 }
        return try modeTable.withLock { (table) throws(TimerError) in
            var set: tk_mode_set = 0
            for mode in modes {
                if mode == .common {
                    set |= table.common
                } else {
                    set |= 1 << (try table.index(of: mode))
                }
            }
            return set
        }
    }

    // MARK: Timers

    /// Creates a timer and schedules it on this loop in `modes`.
    ///
    /// The timer fires `delay` from now (never earlier; at most `tolerance`
    /// later when the thread is free), then, if `interval` is given, every
    /// `interval` on the original grid. `action` runs on the loop's thread and
    /// receives the timer and how many fires were skipped because the loop was
    /// late by whole intervals.
    ///
    /// The loop keeps the timer alive until it is invalidated (a one-shot
    /// timer: until it has fired), and the timer keeps whatever `action`
    /// captures: capture `[weak self]` to avoid a retain cycle, or use
    /// ``LoopTimer/init(after:repeating:tolerance:clock:target:action:)``.
    ///
    /// ```swift
    /// try loop.schedule(after: .seconds(1), repeating: .seconds(1)) { [weak self] timer, _ in
    ///     guard let self else { return timer.invalidate() }
    ///     self.tick()
    /// }
    /// ```
    ///
    /// - Complexity: O(log n) in the loop's pending timers.
    @discardableResult
    public func schedule(
        after delay: Duration,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        clock: CoreClock = .monotonic,
        in modes: [LoopMode],
        _ action: @escaping LoopTimer.Action
    ) throws(TimerError) -> LoopTimer {
        let timer = try LoopTimer(
            after: delay, repeating: interval, tolerance: tolerance, clock: clock, action)
        try add(timer, in: modes)
        return timer
    }

    /// Creates a timer and schedules it on this loop in ``LoopMode/default``;
    /// see ``schedule(after:repeating:tolerance:clock:in:_:)``.
    ///
    /// - Complexity: O(log n) in the loop's pending timers.
    @discardableResult
    public func schedule(
        after delay: Duration,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        clock: CoreClock = .monotonic,
        _ action: @escaping LoopTimer.Action
    ) throws(TimerError) -> LoopTimer {
        let timer = try LoopTimer(
            after: delay, repeating: interval, tolerance: tolerance, clock: clock, action)
        try timer.schedule(on: self, modes: 1)
        return timer
    }

    /// Schedules `timer` on this loop in `mode`. Adding a scheduled timer in
    /// another mode adds the mode to its set.
    ///
    /// - Throws: ``TimerError/invalidated``, ``TimerError/scheduledOnAnotherLoop``.
    public func add(_ timer: LoopTimer, forMode mode: LoopMode = .default) throws(TimerError) {
        let modes: tk_mode_set = mode == .default ? 1 : try modeSet([mode])
        try timer.schedule(on: self, modes: modes)
    }

    /// Schedules `timer` on this loop in every mode of `modes`.
    public func add(_ timer: LoopTimer, in modes: [LoopMode]) throws(TimerError) {
        try timer.schedule(on: self, modes: modeSet(modes))
    }

    // MARK: Clocks

    /// Reads `clock` as this loop sees it: the real clock, or on a manual loop
    /// its manual time.
    public func now(_ clock: CoreClock = .monotonic) -> Duration {
        var nanoseconds: Int64 = 0
        _ = tk_loop_now(handle, clock.rawClock, &nanoseconds)
        return .nanoseconds(nanoseconds)
    }

    /// Calls `handler` on the loop's thread whenever the wall clock is stepped
    /// (by a user, an NTP daemon, or on a manual loop
    /// ``setManualTime(_:to:)``); `nil` removes it. While a handler is set the
    /// loop sees a step at once, even with no wall-clock timer scheduled.
    ///
    /// The corresponding C function is `tk_loop_set_clock_change_handler`.
    public func onWallClockChange(_ handler: (@Sendable () -> Void)?) throws(TimerError) {
        guard let handler else {
            _ = try checkLoop(
                tk_loop_set_clock_change_handler(handle, nil, nil),
                "tk_loop_set_clock_change_handler")
            return
        }
        let box = ClockChangeHandler(handler)
        clockChangeHandlers.withLock { $0.append(box) }
        _ = try checkLoop(
            tk_loop_set_clock_change_handler(
                handle,
                { _, context in
                    Unmanaged<ClockChangeHandler>.fromOpaque(context!).takeUnretainedValue()
                        .handler()
                },
                Unmanaged.passUnretained(box).toOpaque()),
            "tk_loop_set_clock_change_handler")
    }

    /// The loop's counters.
    public var statistics: LoopStatistics {
        var stats = tk_loop_stats()
        _ = tk_loop_get_stats(handle, &stats)
        return LoopStatistics(stats)
    }

    // MARK: Manual time

    /// Moves a manual loop's clocks forward by `duration`, firing on the
    /// calling thread, in `mode`, every timer that comes due, exactly as a real
    /// loop would: in deadline order, each at the time it would have woken the
    /// loop (its fire date plus tolerance, shared with nearby timers), with
    /// ``now(_:)`` reading that time inside the callback. Timers scheduled by
    /// callbacks within the span fire too. Returns the number of callbacks run.
    ///
    /// The corresponding C function is `tk_loop_advance`.
    ///
    /// - Throws: ``TimerError/notManual``, ``TimerError/busy`` (another
    ///   thread runs the loop, or called from one of its callbacks),
    ///   ``TimerError/core(_:)`` with `EINVAL` for a negative duration.
    @discardableResult
    public func advance(by duration: Duration, mode: LoopMode = .default) throws(TimerError) -> Int {
        let index = try modeIndex(mode)
        let fired = try checkLoop(
            tk_loop_advance(handle, index, duration.saturatingNanoseconds), "tk_loop_advance")
        return Int(fired)
    }

    /// Sets one of a manual loop's clocks. The monotonic and boot clocks only
    /// move forward (moving only the boot clock models a system suspend); the
    /// wall clock may jump either way, which the next advance reports as a
    /// clock step.
    ///
    /// The corresponding C function is `tk_loop_set_manual_time`.
    public func setManualTime(_ clock: CoreClock, to value: Duration) throws(TimerError) {
        _ = try checkLoop(
            tk_loop_set_manual_time(handle, clock.rawClock, value.saturatingNanoseconds),
            "tk_loop_set_manual_time")
    }
}

/// The counters a loop keeps about itself.
public struct LoopStatistics: Sendable, Hashable {
    /// Timers scheduled and not yet fired or invalidated.
    public var pending: UInt64
    /// Times the loop woke from waiting (on a manual loop: moved to a wake-up).
    public var wakeups: UInt64
    /// Timer callbacks run.
    public var fired: UInt64
    /// Times a timerfd was armed.
    public var arms: UInt64
    /// Wall-clock steps seen.
    public var clockChanges: UInt64

    init(_ stats: tk_loop_stats) {
        pending = stats.pending
        wakeups = stats.wakeups
        fired = stats.fired
        arms = stats.arms
        clockChanges = stats.clock_changes
    }
}

/// Named modes and their bits.
struct ModeTable {
    var indexes: [LoopMode: UInt32] = [.default: 0, .tracking: 1]
    var common: tk_mode_set = 0b11

    mutating func index(of mode: LoopMode) throws(TimerError) -> UInt32 {
        if mode == .common { throw .notARunMode(mode) }
        if let index = indexes[mode] { return index }
        guard indexes.count < Int(TK_MODE_COUNT) else { throw .tooManyModes(mode) }
        let index = UInt32(indexes.count)
        indexes[mode] = index
        return index
    }
}

/// A clock-change handler, boxed for the C loop's context pointer.
final class ClockChangeHandler: Sendable {
    let handler: @Sendable () -> Void
    init(_ handler: @escaping @Sendable () -> Void) { self.handler = handler }
}

/// The key of each thread's current loop; a thread's loop is released when
/// the thread exits.
private let currentLoopKey: pthread_key_t = {
    var key = pthread_key_t()
    pthread_key_create(&key) { pointer in
        if let pointer { Unmanaged<TimerLoop>.fromOpaque(pointer).release() }
    }
    return key
}()
