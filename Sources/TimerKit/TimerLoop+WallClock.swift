import CTimerCore

extension TimerLoop {
    /// Calls `handler` on the loop's thread whenever the wall clock is stepped
    /// (by a user, an NTP daemon, or on a manual loop
    /// ``setManualTime(to:)``). While a handler is set the loop sees a step at
    /// once, even with no wall-clock timer scheduled. A loop has one handler:
    /// setting one replaces the last, which is let go of (with no lock held,
    /// so it may hold the last reference to anything).
    ///
    /// Once this returns, no call of the old handler starts, save one for a
    /// step that the loop's thread was handling at that very moment when
    /// this is called from another thread.
    ///
    /// The corresponding C function is `tk_loop_set_clock_change_handler`.
    ///
    /// - Throws: ``TimerError/system(_:)`` if the wall clock's timerfd cannot
    ///   be created or armed; the handler in place before stays.
    public func onWallClockChange(_ handler: @escaping @Sendable () -> Void) throws(TimerError) {
        let old = try clockChangeHandler.setting.withLock { (_: inout Void) throws(TimerError) in
            // The C loop calls the one box the loop has, whose function is
            // swapped only once the C side has its timerfd.
            _ = try TimerError.check(
                tk_loop_set_clock_change_handler(
                    handle,
                    { _, context in
                        Unmanaged<ClockChangeHandler>.fromOpaque(context!).takeUnretainedValue().call()
                    },
                    Unmanaged.passUnretained(clockChangeHandler).toOpaque()),
                "tk_loop_set_clock_change_handler")
            return clockChangeHandler.replace(with: handler)
        }
        _ = old
    }

    /// Removes the wall-clock-change handler, if any, and lets go of it.
    /// (Wall-clock timers are still re-evaluated after a step.)
    ///
    /// The corresponding C function is `tk_loop_set_clock_change_handler`
    /// with a NULL function.
    public func removeWallClockChangeHandler() {
        let old = clockChangeHandler.setting.withLock { _ in
            SystemError.expectSuccess(
                tk_loop_set_clock_change_handler(handle, nil, nil), "tk_loop_set_clock_change_handler")
            return clockChangeHandler.replace(with: nil)
        }
        _ = old
    }
}

/// A loop's wall-clock-change handler, boxed for the C loop's context
/// pointer: one box for the loop's life, whose function a new handler
/// replaces, so that the C loop never calls a box that is gone and no box is
/// kept after its handler is replaced.
final class ClockChangeHandler: Sendable {
    /// Held while a handler is set or removed, C side and Swift side
    /// together, so that the two always agree.
    let setting = ThreadLocked(())
    private let handler = ThreadLocked<(@Sendable () -> Void)?>(nil)

    /// Calls the handler set now, if any, with no lock held.
    func call() {
        if let handler = handler.withLock({ $0 }) { handler() }
    }

    /// Sets the handler; returns the one before, to be let go of with no
    /// lock held.
    func replace(with new: (@Sendable () -> Void)?) -> (@Sendable () -> Void)? {
        handler.withLock { handler in
            defer { handler = new }
            return handler
        }
    }
}
