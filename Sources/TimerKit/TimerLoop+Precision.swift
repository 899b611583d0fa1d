import CTimerCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

extension TimerLoop {
    /// The precision set by ``setPrecision(_:)``, or `nil` if none is: the
    /// loop then serves precise timers with ``LoopPrecision/defaultMargin``
    /// and leaves its thread's settings alone.
    ///
    /// The corresponding C function is `tk_loop_get_precision`.
    public var precision: LoopPrecision? {
        var settings = tk_precision()
        let set = tk_loop_get_precision(handle, &settings)
        SystemError.expectSuccess(set, "tk_loop_get_precision")
        return set == 1 ? LoopPrecision(settings) : nil
    }

    /// Sets how this loop serves precise timers, and turns on the settings of
    /// a precise loop's thread; `nil` goes back to the default margin and
    /// turns them off.
    ///
    /// While a thread runs the loop (from its outermost `run` until that
    /// returns), its timer slack is 1 ns and, with a
    /// ``LoopPrecision/realtimePriority``, its policy is `SCHED_FIFO` at that
    /// priority; both are put back when the run returns. (While the thread
    /// has `SCHED_FIFO`, a recent kernel reads its slack as 0: a real-time
    /// thread's sleeps get no slack.) The margin takes
    /// effect at once; the thread's settings when a run begins or, on a loop
    /// that is running (such as one from ``startThread(mode:)``), at its next
    /// pass, which this call brings about. A manual loop's runs leave their
    /// thread alone and never spin, though the call checks the settings, and
    /// the permission for a priority, all the same.
    ///
    /// If the priority is refused when the loop's thread applies it (the
    /// permission went away after this call checked it), that run fails with
    /// ``TimerError/realtimePriorityNotPermitted``.
    ///
    /// ```swift
    /// let loop = try TimerLoop()
    /// try loop.setPrecision(LoopPrecision(margin: .microseconds(300)))
    /// let tick = try loop.schedulePrecise(after: .milliseconds(1),
    ///                                     repeating: .milliseconds(1)) { _, missed in
    ///     sendPacket()
    /// }
    /// ```
    ///
    /// The corresponding C function is `tk_loop_set_precision`.
    ///
    /// - Throws: ``TimerError/invalidPrecision(_:)`` for a margin or priority
    ///   out of range, ``TimerError/realtimePriorityNotPermitted`` if the
    ///   process may not run a thread at that priority (checked here by
    ///   starting one), ``TimerError/system(_:)`` with
    ///   ``Errno/resourceTemporarilyUnavailable`` if that thread cannot be
    ///   started. The settings in force stay as they were.
    public func setPrecision(_ precision: LoopPrecision?) throws(TimerError) {
        guard let precision else {
            _ = try TimerError.check(tk_loop_set_precision(handle, nil), "tk_loop_set_precision")
            return
        }
        guard var settings = precision.settings else { throw .invalidPrecision(precision) }
        let result = tk_loop_set_precision(handle, &settings)
        if result == -EINVAL { throw .invalidPrecision(precision) }  // a value out of range
        _ = try TimerError.check(result, "tk_loop_set_precision")
    }

    /// Creates a precise timer on `clock` and schedules it on this loop in
    /// `mode`: it fires as close to its deadlines as the machine allows,
    /// never before them, at the cost of a spin of up to
    /// ``LoopPrecision/margin`` before each fire (see
    /// ``AnyLoopTimer/setPrecise(_:)``). Otherwise as
    /// ``schedule(after:repeating:tolerance:clock:in:_:)``.
    ///
    /// - Throws: ``TimerError/invalidInterval(_:)``, a mode error, or
    ///   ``TimerError/system(_:)`` if the core cannot take the timer.
    /// - Complexity: O(log n) in the loop's pending timers.
    @discardableResult
    public func schedulePrecise<Clock: TimerClock>(
        after delay: Duration,
        repeating interval: Duration? = nil,
        clock: Clock,
        in mode: LoopMode = .default,
        _ action: @escaping LoopTimer<Clock>.Action
    ) throws(TimerError) -> LoopTimer<Clock> {
        let timer = try LoopTimer(after: delay, repeating: interval, clock: clock, action)
        try timer.setPrecise(true)
        try add(timer, forMode: mode)
        return timer
    }

    /// Creates a precise timer on the monotonic clock and schedules it on
    /// this loop in `mode`; see ``schedulePrecise(after:repeating:clock:in:_:)``.
    ///
    /// - Complexity: O(log n) in the loop's pending timers.
    @discardableResult
    public func schedulePrecise(
        after delay: Duration,
        repeating interval: Duration? = nil,
        in mode: LoopMode = .default,
        _ action: @escaping LoopTimer<MonotonicClock>.Action
    ) throws(TimerError) -> LoopTimer<MonotonicClock> {
        try schedulePrecise(
            after: delay, repeating: interval, clock: MonotonicClock(), in: mode, action)
    }
}
