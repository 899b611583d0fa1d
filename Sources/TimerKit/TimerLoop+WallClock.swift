import CTimerCore

extension TimerLoop {
    /// Calls `handler` on the loop's thread whenever the wall clock is stepped
    /// (by a user, an NTP daemon, or on a manual loop
    /// ``setManualTime(to:)``). While a handler is set the loop sees a step at
    /// once, even with no wall-clock timer scheduled. A loop has one handler:
    /// setting one replaces the last.
    ///
    /// The corresponding C function is `tk_loop_set_clock_change_handler`.
    ///
    /// - Throws: ``TimerError/system(_:)`` if the wall clock's timerfd cannot
    ///   be created or armed; the handler in place before stays.
    public func onWallClockChange(_ handler: @escaping @Sendable () -> Void) throws(TimerError) {
        let box = ClockChangeHandler(handler)
        clockChangeHandlers.withLock { $0.append(box) }
        _ = try TimerError.check(
            tk_loop_set_clock_change_handler(
                handle,
                { _, context in
                    Unmanaged<ClockChangeHandler>.fromOpaque(context!).takeUnretainedValue()
                        .handler()
                },
                Unmanaged.passUnretained(box).toOpaque()),
            "tk_loop_set_clock_change_handler")
    }

    /// Removes the wall-clock-change handler, if any. (Wall-clock timers are
    /// still re-evaluated after a step.)
    ///
    /// The corresponding C function is `tk_loop_set_clock_change_handler`
    /// with a NULL function.
    public func removeWallClockChangeHandler() {
        SystemError.expectSuccess(
            tk_loop_set_clock_change_handler(handle, nil, nil), "tk_loop_set_clock_change_handler")
    }
}

/// A clock-change handler, boxed for the C loop's context pointer.
final class ClockChangeHandler: Sendable {
    let handler: @Sendable () -> Void
    init(_ handler: @escaping @Sendable () -> Void) { self.handler = handler }
}
