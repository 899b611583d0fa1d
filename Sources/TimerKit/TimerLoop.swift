import CTimerCore
import Synchronization

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
/// only through ``advance(by:mode:)``, or through a run given a deadline,
/// which fire due timers synchronously, in order, on the calling thread. That
/// is how code built on timers is tested deterministically.
///
/// Lifetime: what is scheduled on a loop keeps the loop alive, as the loop
/// keeps it (a ``LoopTimer``, a ``PerformRequest``, a ``FrameTicker``, a
/// sleep). A loop let go of with such work pending stays, with its
/// descriptors, until the work ends: it fires (run the loop), or is
/// invalidated or cancelled. A loop with nothing pending is freed when its
/// last reference goes.
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
    let modeTable = ThreadLocked(ModeTable())

    /// Pending perform requests, by target (see ``perform(after:in:target:_:)``).
    let performRegistry = ThreadLocked(PerformRegistry())

    /// The wall-clock-change handler: the C loop's context for it, for the
    /// loop's life (see TimerLoop+WallClock.swift).
    let clockChangeHandler = ClockChangeHandler()

    /// What waits on the loop's thread, and how the thread's run ended (see
    /// TimerLoop+Waiters.swift).
    let waiters = ThreadLocked(LoopWaiters())

    /// Whether ``failure`` is set: a check that costs one load on the path
    /// of every schedule.
    let failed = Atomic<Bool>(false)

    /// Takes turns between threads advancing a manual loop (see
    /// TimerLoop+ManualTime.swift).
    let advancing = AdvanceTurn()

    /// Jobs queued for the loop's thread (see TimerLoop+Executor.swift).
    let jobs = ThreadLocked(JobQueue())

    /// Wakes the thread that runs the jobs once the loop's run failed.
    let jobSignal = JobSignal()

    /// This loop's number, unique in the process (never reused, unlike an
    /// address): what tells a ``CallbackTimer`` of this loop from another's.
    let serial = TimerLoop.serials.add(1, ordering: .relaxed).newValue

    /// The last loop's number.
    private static let serials = Atomic<UInt64>(0)

    private init(handle: OpaquePointer, isManual: Bool) {
        self.handle = handle
        self.isManual = isManual
        // Every context TimerKit gives the C loop is a retained Swift object
        // (a timer or a sleep); the loop says when it is done with one.
        // It fails only for a NULL loop. (Thrown from here, a failure would
        // run deinit, which destroys the handle: it must not be destroyed here too.)
        SystemError.expectSuccess(
            tk_loop_set_release_handler(handle) { _, context in
                Unmanaged<AnyObject>.fromOpaque(context!).release()
            },
            "tk_loop_set_release_handler")
        // While the C loop holds LoopTimers' records, it holds a reference
        // to this loop: one for all of them, where one per timer would cost
        // two atomic operations per schedule and invalidate. The release
        // handler, or a LoopTimer's invalidate, lets go of it.
        SystemError.expectSuccess(
            tk_loop_set_hold(
                handle, { _, loop in _ = Unmanaged<TimerLoop>.fromOpaque(loop!).retain() },
                Unmanaged.passUnretained(self).toOpaque()),
            "tk_loop_set_hold")
        // The C loop's common modes start as the default mode: tracking is
        // common too.
        SystemError.expectSuccess(
            tk_loop_add_common_modes(handle, 1 << 1), "tk_loop_add_common_modes")
        installJobRunner()
    }

    /// Creates a loop on the real clocks.
    ///
    /// The corresponding C function is `tk_loop_create`.
    ///
    /// - Throws: ``TimerError/fakedClock(_:)`` if this process reads the
    ///   monotonic or boot clock off the kernel's own reading (a preloaded
    ///   time faker), on which the loop's timers would fire at the wrong
    ///   times; ``TimerError/system(_:)`` if the kernel refuses an epoll
    ///   instance or an eventfd (for example ``Errno/tooManyOpenFiles``).
    public convenience init() throws(TimerError) {
        // The wall clock may be faked: its timers are armed through the
        // process's own timerfd_settime, which a faker rewrites to match.
        for clock in [ClockID.monotonic, .boot] where clock.isFaked {
            throw .fakedClock(clock)
        }
        var handle: OpaquePointer?
        _ = try TimerError.check(tk_loop_create(&handle), "tk_loop_create")
        self.init(handle: handle!, isManual: false)
    }

    /// Creates a loop on a manual clock whose three clocks (monotonic, boot and
    /// wall) all read `start` (time since each clock's origin) until moved by
    /// ``advance(by:mode:)``, a run with a deadline, or
    /// ``setManualTime(to:)``.
    ///
    /// `start` is rounded down to whole nanoseconds and saturates at the C
    /// core's range, `Int64.max` nanoseconds (about 292 years) either way.
    /// On a loop at the top of that range, time cannot move on: a timer
    /// scheduled there with a delay has its deadline at the top too, which
    /// never comes, and only fire dates before it are ever reached.
    ///
    /// The corresponding C function is `tk_loop_create_manual`.
    ///
    /// - Throws: ``TimerError/system(_:)`` if the kernel refuses an epoll
    ///   instance or an eventfd.
    public static func manual(startingAt start: Duration = .zero) throws(TimerError) -> TimerLoop {
        var handle: OpaquePointer?
        _ = try TimerError.check(
            tk_loop_create_manual(&handle, start.nanosecondsRoundedDown), "tk_loop_create_manual")
        return TimerLoop(handle: handle!, isManual: true)
    }

    deinit {
        // Nothing runs the loop now (a run holds a reference), and scheduled
        // timers keep their loop alive (LoopTimers through the C loop's
        // hold), so few are left here; the release handler lets go of any
        // that are.
        SystemError.expectSuccess(tk_loop_destroy(handle), "tk_loop_destroy")
    }

    // MARK: Running

    /// Why a run returned.
    public enum RunResult: Sendable, Hashable {
        /// ``stop()`` was called.
        case stopped
        /// The deadline passed.
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
    /// innermost run. (A callback that ``advance(by:mode:)`` called cannot:
    /// an advance allows no nested run.)
    ///
    /// On a manual loop a run with a deadline moves the manual clocks to it
    /// (to the nanosecond before it, for one between two nanoseconds, as
    /// ``ManualClock/advance(to:)`` does),
    /// as ``advance(by:mode:)`` does, firing what comes due in `mode` on the
    /// way, and then, as a real run woken by its deadline, makes a last pass
    /// there: a timer due by then fires even if its tolerance reaches
    /// further, and a due timer of another mode waits for its mode. Unlike
    /// an advance, it runs the loop's jobs on the way: those queued at one
    /// time, and the jobs they queue, before it moves time on (up to 64
    /// more passes at one time, counting those for timers made due at once
    /// again, and none at the deadline: see <doc:LoopsAsExecutors>).
    /// Without a deadline, time does not move
    /// during the run.
    ///
    /// A deadline at the last instant of the clock's range (`Int64.max`
    /// nanoseconds, where later instants saturate) never comes, as no
    /// timer's there does: the run goes to the nanosecond before it.
    ///
    /// The corresponding C function is `tk_loop_run`.
    ///
    /// - Throws: ``TimerError/busy`` if another thread is running the loop
    ///   (or, on a manual loop, advancing it), or if called from a callback
    ///   of an advance,
    ///   ``TimerError/notARunMode(_:)`` for ``LoopMode/common``,
    ///   ``TimerError/tooManyModes(_:)``, ``TimerError/system(_:)`` if
    ///   waiting fails in the kernel, or with ``Errno/noMemory`` if a pass
    ///   could not make room to set aside the due timers of other modes
    ///   (no timer is lost: each that has not fired fires at a later pass;
    ///   actions of earlier passes have run).
    @discardableResult
    public func run(mode: LoopMode = .default, until deadline: MonotonicClock.Instant? = nil)
        throws(TimerError) -> RunResult
    {
        let modes = try runModeSet(mode)
        // A real run returns once its deadline has passed; a manual run moves
        // time to it, and, as an advance, never past it. Int64.max is the C
        // core's "no deadline" (TK_FOREVER), and an instant there never comes:
        // a deadline at it runs to the instant before.
        let until =
            deadline.map { min(isManual ? $0.offset.nanosecondsRoundedDown : $0.deadlineNanoseconds, .max - 1) }
            ?? .max
        return try runResult(tk_loop_run(handle, modes, until, 0))
    }

    /// Runs the loop in `mode` for `duration` of its monotonic clock (on a
    /// manual loop: of manual time), unless ``stop()`` ends it first. See
    /// ``run(mode:until:)``.
    ///
    /// ```swift
    /// try loop.run(mode: .tracking, for: .seconds(1))   // a one-second drag
    /// ```
    @discardableResult
    public func run(mode: LoopMode = .default, for duration: Duration) throws(TimerError)
        -> RunResult
    {
        try run(mode: mode, until: now(.monotonic) + duration)
    }

    /// Makes one pass: fires what is due in `mode` and handles what is ready;
    /// with `waiting`, first waits until something happens (a timer of the
    /// mode comes due, a job or a wake-up arrives, or ``stop()`` is called).
    ///
    /// On a manual loop it does not move time: with nothing due, a waiting
    /// call returns only once another thread queues a job on the loop,
    /// wakes it, or stops it. Move time with ``advance(by:mode:)`` or a run
    /// with a deadline.
    ///
    /// The corresponding C function is `tk_loop_run` with `TK_RUN_ONCE` or
    /// `TK_RUN_NOWAIT`.
    ///
    /// - Throws: what ``run(mode:until:)`` throws.
    @discardableResult
    public func runOnce(mode: LoopMode = .default, waiting: Bool = true) throws(TimerError)
        -> RunResult
    {
        let modes = try runModeSet(mode)
        let flags = waiting ? UInt32(TK_RUN_ONCE) : UInt32(TK_RUN_NOWAIT)
        return try runResult(tk_loop_run(handle, modes, Int64.max, flags))
    }

    private func runResult(_ code: Int32) throws(TimerError) -> RunResult {
        switch try TimerError.check(code, "tk_loop_run") {
        case Int32(TK_RUN_STOPPED.rawValue): .stopped
        case Int32(TK_RUN_TIMED_OUT.rawValue): .timedOut
        default: .passed
        }
    }

    /// Ends the innermost run after the callback it is in. If the loop is not
    /// running, its next run returns at once. Safe from any thread and from
    /// callbacks.
    ///
    /// The stop is the run's that is innermost as it is asked for, as with
    /// `CFRunLoopStop`: an action that stops the loop and then pumps it
    /// (``runOnce(mode:waiting:)``, a nested ``run(mode:until:)``) does not
    /// end those nested runs, and the run it stopped returns once the action
    /// does. If the run asked throws before taking it, the stop is the run's
    /// around it (or the next run's): no stop is lost.
    ///
    /// The corresponding C function is `tk_loop_stop`.
    public func stop() {
        SystemError.expectSuccess(tk_loop_stop(handle), "tk_loop_stop")
        // After the stop: a thread serving the jobs of a failed loop takes
        // it, whether it read `failed` before this or this reads it after.
        if hasFailed { jobSignal.post() }
    }

    /// Wakes a waiting run for one pass, from any thread.
    ///
    /// The corresponding C function is `tk_loop_wakeup`.
    public func wakeUp() {
        SystemError.expectSuccess(tk_loop_wakeup(handle), "tk_loop_wakeup")
    }

    /// Creates a loop and runs it in `mode` on a new thread of its own, until
    /// ``stop()`` is called.
    ///
    /// ``stop()`` ends that thread for good. What is left on the loop then
    /// waits for a run that another thread makes (``run(mode:until:)`` and
    /// the like): timers, sleeps and ticks, and the jobs of actors and tasks
    /// on the loop. A task of an actor on the loop, or one preferring the
    /// loop, waits there even once cancelled, since it resumes on the loop.
    /// So stop such a loop only once nothing runs on it, or run it again.
    ///
    /// If that run fails (``failure`` says how), every sleep and tick waiting
    /// on the loop fails with the error, and so does every later one. The
    /// thread then goes on running the loop's jobs, so that actors and tasks
    /// on the loop still run (and hear of the failure), until ``stop()``.
    ///
    /// - Throws: ``TimerError/notARunMode(_:)`` for ``LoopMode/common``, a
    ///   mode error, ``TimerError/fakedClock(_:)`` (see ``init()``), or
    ///   ``TimerError/system(_:)`` if the loop or the thread cannot be
    ///   created.
    public static func startThread(mode: LoopMode = .default) throws(TimerError) -> TimerLoop {
        let loop = try TimerLoop()
        let modes = try loop.runModeSet(mode)
        try LoopThread.start(loop) { loop in
            tk_loop_run(loop.handle, modes, Int64.max, 0)
        }
        return loop
    }

    // MARK: The current thread's loop

    /// The calling thread's loop, created the first time it is asked for, like
    /// `RunLoop.current`. It lives as long as the thread.
    ///
    /// - Throws: ``TimerError/fakedClock(_:)`` (see ``init()``), or
    ///   ``TimerError/system(_:)`` if a new loop cannot be created.
    public static func current() throws(TimerError) -> TimerLoop {
        if let pointer = pthread_getspecific(currentLoopKey) {
            return Unmanaged<TimerLoop>.fromOpaque(pointer).takeUnretainedValue()
        }
        let loop = try TimerLoop()
        setCurrent(loop)
        return loop
    }

    /// Makes `loop` the calling thread's loop.
    static func setCurrent(_ loop: TimerLoop) {
        if let old = pthread_getspecific(currentLoopKey) {
            Unmanaged<TimerLoop>.fromOpaque(old).release()
        }
        let result = pthread_setspecific(currentLoopKey, Unmanaged.passRetained(loop).toOpaque())
        SystemError.expectSuccess(-result, "pthread_setspecific")
    }

    // MARK: Clocks

    /// Reads `clock` as this loop sees it: the real clock, or on a manual loop
    /// its manual time.
    ///
    /// ```swift
    /// let deadline = loop.now(.boot) + .seconds(30)    // a BootClock.Instant
    /// ```
    ///
    /// The corresponding C function is `tk_loop_now`.
    public func now<Clock: TimerClock>(_ clock: Clock) -> Clock.Instant {
        var nanoseconds: Int64 = 0
        SystemError.expectSuccess(tk_loop_now(handle, Clock.clockID.rawClock, &nanoseconds), "tk_loop_now")
        return Clock.Instant(nanoseconds: nanoseconds)
    }

    /// The loop's counters.
    ///
    /// The corresponding C function is `tk_loop_get_stats`.
    public var statistics: LoopStatistics {
        var stats = tk_loop_stats()
        SystemError.expectSuccess(tk_loop_get_stats(handle, &stats), "tk_loop_get_stats")
        return LoopStatistics(stats)
    }

    /// What the C core says of a timer, or `nil` if `id` names none now.
    func timerInfo(_ id: tk_timer_id) -> tk_timer_info? {
        var info = tk_timer_info()
        let result = tk_loop_timer_info(handle, id, &info)
        if result == -ENOENT { return nil }
        SystemError.expectSuccess(result, "tk_loop_timer_info")
        return info
    }
}

/// The key of each thread's current loop; a thread's loop is released when
/// the thread exits.
private let currentLoopKey: pthread_key_t = {
    var key = pthread_key_t()
    let result = pthread_key_create(&key) { pointer in
        if let pointer { Unmanaged<TimerLoop>.fromOpaque(pointer).release() }
    }
    SystemError.expectSuccess(-result, "pthread_key_create")
    return key
}()
