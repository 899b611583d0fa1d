import CTimerCore

extension TimerLoop {
    /// Creates a timer on `clock` and schedules it on this loop in `mode`.
    ///
    /// The timer fires `delay` from now (never earlier; at most `tolerance`
    /// later when the thread is free), then, if `interval` is given, every
    /// `interval` on the original grid. `action` runs on the loop's thread and
    /// receives the timer and how many fires were skipped because the loop was
    /// late by whole intervals.
    ///
    /// The loop keeps the timer alive until it is invalidated (a one-shot
    /// timer: until it has fired), and until then the timer keeps whatever
    /// `action` captures: capture `[weak self]` to avoid a retain cycle, or
    /// use ``LoopTimer/init(after:repeating:tolerance:clock:target:action:)``.
    ///
    /// ```swift
    /// try loop.schedule(after: .seconds(1), repeating: .seconds(1), clock: .boot,
    ///                   in: .common) { [weak self] timer, _ in
    ///     guard let self else { return timer.invalidate() }
    ///     self.tick()
    /// }
    /// ```
    ///
    /// - Throws: ``TimerError/invalidInterval(_:)``,
    ///   ``TimerError/negativeTolerance(_:)``, a mode error, or
    ///   ``TimerError/system(_:)`` if the core cannot take the timer (for
    ///   example out of memory).
    /// - Complexity: O(log n) in the loop's pending timers.
    @discardableResult
    public func schedule<Clock: TimerClock>(
        after delay: Duration,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        clock: Clock,
        in mode: LoopMode = .default,
        _ action: @escaping LoopTimer<Clock>.Action
    ) throws(TimerError) -> LoopTimer<Clock> {
        let timer = try LoopTimer(
            after: delay, repeating: interval, tolerance: tolerance, clock: clock, action)
        // The mode is named only once the loop takes the timer. No other
        // code has the timer yet.
        try timer.scheduleUnshared(on: self) { () throws(TimerError) in try modeSet(mode) }
        return timer
    }

    /// Creates a timer on the monotonic clock and schedules it on this loop in
    /// `mode`; see ``schedule(after:repeating:tolerance:clock:in:_:)``.
    ///
    /// - Complexity: O(log n) in the loop's pending timers.
    @discardableResult
    public func schedule(
        after delay: Duration,
        repeating interval: Duration? = nil,
        tolerance: Duration = .zero,
        in mode: LoopMode = .default,
        _ action: @escaping LoopTimer<MonotonicClock>.Action
    ) throws(TimerError) -> LoopTimer<MonotonicClock> {
        try schedule(
            after: delay, repeating: interval, tolerance: tolerance, clock: MonotonicClock(),
            in: mode, action)
    }

    /// Schedules `timer` on this loop in `mode`. Adding a scheduled timer in
    /// another mode adds the mode to its set.
    ///
    /// - Throws: ``TimerError/invalidated``, ``TimerError/scheduledOnAnotherLoop``,
    ///   a mode error, ``TimerError/system(_:)``.
    public func add(_ timer: AnyLoopTimer, forMode mode: LoopMode = .default) throws(TimerError) {
        // The mode is named only once the loop takes the timer.
        try timer.schedule(on: self) { () throws(TimerError) in try modeSet(mode) }
    }

    /// Schedules `timer` on this loop in every mode of `modes`.
    ///
    /// - Throws: ``TimerError/noModes`` for an empty list, and what
    ///   ``add(_:forMode:)`` throws.
    public func add(_ timer: AnyLoopTimer, in modes: [LoopMode]) throws(TimerError) {
        try timer.schedule(on: self) { () throws(TimerError) in try modeSet(modes) }
    }
}

extension TimerLoop {
    /// Suspends until `clock` reads `deadline` on this loop, at most
    /// `tolerance` later; the loop's thread resumes the task. On a manual
    /// loop, the sleep ends when its time is moved there, or, if it is there
    /// already, at once, on the calling thread (a deadline at or past the
    /// end of the clock's range, `Int64.max` nanoseconds, never comes, as a
    /// timer's there never fires). The sleep is served in every
    /// mode. A negative tolerance counts as none, as the standard library's
    /// clocks take it; one that takes the deadline + tolerance to the end of
    /// the clock's range (`Int64.max` nanoseconds) leaves the sleep to
    /// wake-ups that something else brings, as a ``LoopTimer``'s does.
    ///
    /// It runs on the caller's executor: from an actor or a task on this
    /// loop (real or manual), the sleep ends on the loop's thread with no hop; elsewhere the
    /// task goes back to its own executor when the loop's thread resumes it.
    ///
    /// ```swift
    /// try await loop.sleep(until: loop.now(.boot) + .seconds(5))
    /// ```
    ///
    /// - Throws: `CancellationError` if the task is cancelled first (the
    ///   sleep's timer leaves the loop at once); ``TimerError`` if the loop
    ///   cannot take the timer, or its thread's run failed (see ``failure``).
    nonisolated(nonsending)
    public func sleep<Clock: TimerClock>(until deadline: ClockInstant<Clock>, tolerance: Duration? = nil)
        async throws
    {
        if Clock.self == ManualClock.self && !isManual { throw TimerError.notManual }
        if TimerLoop.executing === self {
            return try await Sleeper.sleepOnItsLoop(
                self, clock: Clock.clockID, until: deadline.deadlineNanoseconds, tolerance: tolerance)
        }
        try await Sleeper.sleep(
            on: self, clock: Clock.clockID, until: deadline.deadlineNanoseconds, tolerance: tolerance)
    }
}
