import Dispatch

/// A timer whose handler runs on a `DispatchQueue`: what `DispatchSourceTimer`
/// does, with leeway that really coalesces on Linux, typed deadlines, and a
/// typed error or a documented no-op for each misuse that crashes a Dispatch
/// source.
///
/// ```swift
/// import Dispatch
///
/// let queue = DispatchQueue(label: "refresh")
/// let timer = try QueueTimer(queue: queue)
/// timer.setEventHandler { fires in
///     print("refresh", fires > 1 ? "(\(fires) fires merged)" : "")
/// }
/// try timer.schedule(deadline: .now + .seconds(1), repeating: .seconds(1),
///                    leeway: .milliseconds(100))
/// try timer.activate()
/// // ...
/// timer.cancel()
/// ```
///
/// The timer lives on a ``TimerLoop`` (by default a shared loop on a thread of
/// its own); when it fires, the loop's thread puts the handler on the queue
/// with `async`. It fires in `[deadline, deadline + leeway]`, never early,
/// and timers whose windows overlap share one wake-up of the loop. A
/// repeating timer stays on its grid: `deadline + k * interval`.
///
/// The handler gets the number of fires merged since it last ran, as
/// Dispatch's `data`: 1 when on time, more when the queue was busy, the
/// timer suspended, or the loop late by whole intervals. It never runs
/// concurrently with itself, even on a concurrent queue.
///
/// ## Lifecycle
///
/// A new timer is inactive: set its handlers and schedule, then call
/// ``activate()``. Misuse that stops a program using Dispatch is handled:
///
/// - ``resume()`` without a matching ``suspend()`` throws
///   ``TimerError/unbalancedResume`` (on a timer never activated it
///   activates it, as in Dispatch);
/// - ``activate()`` a second time, ``cancel()`` a second time, and
///   ``suspend()`` or ``resume()`` after ``cancel()`` do nothing;
/// - ``schedule(deadline:repeating:leeway:)`` after ``cancel()`` throws
///   ``TimerError/cancelled``; a handler set after ``cancel()`` is let go at
///   once and never runs;
/// - letting go of the last reference to a timer, whether inactive, active
///   or suspended, cancels it (see ``cancel()``: its cancel handler runs
///   once, on the queue) and frees it.
///
/// If the run of the loop's thread fails (see ``TimerLoop/failure``; it
/// takes the kernel refusing the loop's wait, or a real-time priority it
/// may not have), an active timer stops firing, as every timer on that loop
/// does, and stays active: its next ``schedule(deadline:repeating:leeway:)``,
/// or ``resume()`` after a suspend, throws the failure.
/// Check ``loop``'s ``TimerLoop/failure`` to learn of it sooner.
///
/// Handlers are `@Sendable`: they run on the queue's threads. A handler
/// that captures the timer keeps it alive until ``cancel()``, which lets go
/// of both handlers (Dispatch has the same cycle); capture it `weak`.
///
/// Thread safety: every method may be called from any thread, including
/// from the handlers.
public final class QueueTimer: Sendable {
    let core: QueueTimerCore

    /// Creates an inactive timer whose handlers run on `queue`, kept on
    /// `loop`, or if `nil` on TimerKit's shared loop, which runs on a thread
    /// of its own (the loop of the clocks' sleeps). Tests pass a manual loop
    /// (``TimerLoop/manual(startingAt:)``) and move its time with
    /// ``TimerLoop/advance(by:mode:)``; the timer fires in every mode of the
    /// loop.
    ///
    /// - Throws: ``TimerError/system(_:)`` if the shared loop or its thread
    ///   could not be started (a later call tries again).
    public init(queue: DispatchQueue, loop: TimerLoop? = nil) throws(TimerError) {
        if let loop {
            core = QueueTimerCore(loop: loop, queue: queue)
        } else {
            core = QueueTimerCore(loop: try SleepService.shared.loop(), queue: queue)
        }
    }

    deinit {
        core.cancel()
    }

    /// The queue the handlers run on.
    public var queue: DispatchQueue { core.queue }

    /// The loop the timer is kept on. TimerKit's shared loop, for a timer
    /// made without one, serves the clocks' sleeps too: a ``TimerLoop/stop()``
    /// of it ends only the run it stops, and its thread runs the loop again.
    public var loop: TimerLoop { core.loop }

    // MARK: Scheduling

    /// Schedules the timer on the monotonic clock: first at `deadline`, then,
    /// if `interval` is given, every `interval` after it, each fire at most
    /// `leeway` late while the loop's thread is free.
    ///
    /// It replaces the schedule in force, and drops the fires counted for it
    /// that the handler has not had yet, as Dispatch does. On a timer that is
    /// active and not suspended it takes effect at once; otherwise when the
    /// timer is activated or resumed. A deadline that has passed fires at
    /// the loop's next pass (a repeating timer then counts the grid points
    /// it skipped).
    ///
    /// - Parameters:
    ///   - deadline: the first fire, a reading of the monotonic clock (on a
    ///     manual loop, of its manual time: ``TimerLoop/now(_:)``).
    ///   - interval: the period (at least 1 ns), or `nil` for one fire.
    ///   - leeway: how late a fire may come so that it shares a wake-up
    ///     (≥ 0; a repeating timer uses at most half its interval). A leeway
    ///     that takes the deadline + leeway to the end of the clock's range
    ///     (`Int64.max` nanoseconds) leaves the fire to wake-ups that
    ///     something else brings, as a ``LoopTimer``'s tolerance does.
    /// - Throws: ``TimerError/invalidInterval(_:)`` or
    ///   ``TimerError/negativeTolerance(_:)`` for a bad argument (checked
    ///   first, also after ``cancel()``), ``TimerError/cancelled``, or
    ///   ``TimerError/system(_:)`` if the loop cannot take the timer (the
    ///   schedule in force stays); on a loop whose thread's run failed, that
    ///   failure (see ``TimerLoop/failure``), such as
    ///   ``TimerError/realtimePriorityNotPermitted``.
    public func schedule(
        deadline: MonotonicClock.Instant, repeating interval: Duration? = nil,
        leeway: Duration = .zero
    ) throws(TimerError) {
        try schedule(deadline, interval, leeway)
    }

    /// Schedules the timer on the wall clock: first when the wall clock reads
    /// `wallDeadline`, then every `interval` of real time if one is given.
    /// When the wall clock is stepped, the loop sees it at once and measures
    /// the deadline against the clock as it is then. See
    /// ``schedule(deadline:repeating:leeway:)``.
    ///
    /// - Throws: what ``schedule(deadline:repeating:leeway:)`` throws.
    public func schedule(
        wallDeadline: WallClock.Instant, repeating interval: Duration? = nil,
        leeway: Duration = .zero
    ) throws(TimerError) {
        try schedule(wallDeadline, interval, leeway)
    }

    private func schedule<Clock: TimerClock>(
        _ deadline: ClockInstant<Clock>, _ interval: Duration?, _ leeway: Duration
    ) throws(TimerError) {
        var nanoseconds: Int64 = 0
        if let interval { nanoseconds = try AnyLoopTimer.intervalNanoseconds(interval) }
        let grid = QueueTimerCore.Grid(
            clock: Clock.clockID, start: deadline.deadlineNanoseconds, interval: nanoseconds,
            leeway: try AnyLoopTimer.toleranceNanoseconds(leeway))
        try core.schedule(grid)
    }

    /// The next fire's deadline on the monotonic clock, or `nil` if the timer
    /// is not waiting for one on that clock (inactive, suspended, cancelled,
    /// done, or scheduled on the wall clock).
    public var nextDeadline: MonotonicClock.Instant? {
        guard let nanoseconds = core.nextDeadline(on: .monotonic) else { return nil }
        return MonotonicClock.Instant(nanoseconds: nanoseconds)
    }

    /// The next fire's deadline on the wall clock, or `nil` if the timer is
    /// not waiting for one on that clock.
    public var nextWallDeadline: WallClock.Instant? {
        guard let nanoseconds = core.nextDeadline(on: .wall) else { return nil }
        return WallClock.Instant(nanoseconds: nanoseconds)
    }

    // MARK: Handlers

    /// Sets the handler run on the queue when the timer fires, replacing the
    /// one before (`nil` removes it). It receives the number of fires merged
    /// since it last ran (at least 1). Fires that come while no handler is
    /// set wait for the next one. After ``cancel()`` this does nothing.
    ///
    /// Once this returns, no run of the old handler starts, save one that
    /// the queue was starting at that very moment when this is called from
    /// another thread (as for ``cancel()``). The old handler is let go of
    /// with no lock held, so it may hold the last reference to an object
    /// whose deinit cancels this timer.
    public func setEventHandler(_ handler: (@Sendable (_ fires: UInt64) -> Void)?) {
        core.setEventHandler(handler)
    }

    /// Sets the handler run once on the queue after the timer is cancelled
    /// (by ``cancel()`` or by letting go of the timer), after any run of
    /// the event handler under way has finished. After ``cancel()`` this does
    /// nothing.
    public func setCancelHandler(_ handler: (@Sendable () -> Void)?) {
        core.setCancelHandler(handler)
    }

    // MARK: Lifecycle

    /// Starts an inactive timer: from now on it fires as scheduled (unless
    /// suspended). Calling it again, or after ``cancel()``, does nothing.
    ///
    /// - Throws: ``TimerError/system(_:)`` if the loop cannot take the timer,
    ///   or its thread's run failed (then that failure, see
    ///   ``TimerLoop/failure``); the timer then stays inactive.
    public func activate() throws(TimerError) {
        try core.activate()
    }

    /// Suspends the timer: no handler starts until a matching ``resume()``
    /// (a run under way finishes, and so may one that the queue was starting
    /// as this was called from another thread; see ``cancel()``).
    /// Suspensions count: each needs its own resume. Fires are still counted
    /// on the timer's grid, and the first handler after resuming gets them
    /// all. The loop does not wake for a suspended timer. After ``cancel()``
    /// this does nothing.
    public func suspend() {
        core.suspend()
    }

    /// Undoes one ``suspend()``; the last one lets the timer fire again, and
    /// fires counted meanwhile reach the handler at the loop's next pass.
    /// On a timer never activated and not suspended it activates it, as in
    /// Dispatch. After ``cancel()`` this does nothing.
    ///
    /// - Throws: ``TimerError/unbalancedResume`` if the timer is active and
    ///   not suspended (Dispatch stops the program there);
    ///   ``TimerError/system(_:)`` if the loop cannot take the timer again,
    ///   or its thread's run failed (then that failure, see
    ///   ``TimerLoop/failure``), in which case it stays suspended.
    public func resume() throws(TimerError) {
        try core.resume()
    }

    /// Cancels the timer for good. Once this returns no run of the event
    /// handler starts, save one that the queue was starting at that very
    /// moment when this is called from another thread (it had taken the
    /// fires, and not yet entered the handler); one already running on the
    /// queue finishes. Then the cancel handler, if set, runs once on the
    /// queue, after any such run, and both handlers are let go. Cancelling
    /// again does nothing. Called on the timer's queue, if it is serial
    /// (from the event handler, or a block on it), it takes effect at once.
    ///
    /// Letting go of the last reference to the timer does the same,
    /// cancel handler included.
    public func cancel() {
        core.cancel()
    }

    /// Whether ``cancel()`` has been called.
    public var isCancelled: Bool { core.isCancelled }
}
