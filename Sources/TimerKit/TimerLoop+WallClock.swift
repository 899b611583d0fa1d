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
        _ = try setWallClockChangeHandler(handler)
    }

    /// ``onWallClockChange(_:)``, returning what names this setting of the
    /// handler for ``removeWallClockChangeHandler(ifStill:)``: a monitor
    /// that set the handler removes it only if no other code has set one
    /// since.
    package func setWallClockChangeHandler(_ handler: @escaping @Sendable () -> Void)
        throws(TimerError) -> WallClockChangeHandlerSetting
    {
        let (old, setting) = try clockChangeHandler.setting.withLock { (_: inout Void) throws(TimerError) in
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
        return setting
    }

    /// Removes the wall-clock-change handler, if any, and lets go of it.
    /// (Wall-clock timers are still re-evaluated after a step.)
    ///
    /// The corresponding C function is `tk_loop_set_clock_change_handler`
    /// with a NULL function.
    public func removeWallClockChangeHandler() {
        removeWallClockChangeHandler(if: { _ in true })
    }

    /// Removes the wall-clock-change handler if it is still the one
    /// `setting` set; does nothing if another has been set or the handler
    /// removed since.
    package func removeWallClockChangeHandler(ifStill setting: WallClockChangeHandlerSetting) {
        removeWallClockChangeHandler(if: { $0 == setting })
    }

    /// Removes the handler if `isRemoved` says so of the setting in place.
    private func removeWallClockChangeHandler(if isRemoved: (WallClockChangeHandlerSetting) -> Bool) {
        let old = clockChangeHandler.setting.withLock { _ -> (@Sendable () -> Void)? in
            guard isRemoved(clockChangeHandler.current) else { return nil }
            SystemError.expectSuccess(
                tk_loop_set_clock_change_handler(handle, nil, nil), "tk_loop_set_clock_change_handler")
            return clockChangeHandler.replace(with: nil).old
        }
        _ = old
    }
}

/// Names one setting of a loop's wall-clock-change handler (see
/// `TimerLoop.setWallClockChangeHandler(_:)`).
package struct WallClockChangeHandlerSetting: Equatable, Sendable {
    fileprivate let number: UInt64
}

/// A loop's wall-clock-change handler, boxed for the C loop's context
/// pointer: one box for the loop's life, whose function a new handler
/// replaces, so that the C loop never calls a box that is gone and no box is
/// kept after its handler is replaced.
final class ClockChangeHandler: Sendable {
    /// Held while a handler is set or removed, C side and Swift side
    /// together, so that the two always agree.
    let setting = ThreadLocked(())
    private let handler = ThreadLocked<Handler>(Handler())

    private struct Handler {
        var function: (@Sendable () -> Void)?
        /// Counts the settings and removals; names the one in place.
        var number: UInt64 = 0
    }

    /// Calls the handler set now, if any, with no lock held.
    func call() {
        if let function = handler.withLock({ $0.function }) { function() }
    }

    /// What names the setting in place (or the removal).
    var current: WallClockChangeHandlerSetting {
        WallClockChangeHandlerSetting(number: handler.withLock { $0.number })
    }

    /// Sets the handler; returns the one before, to be let go of with no
    /// lock held, and what names the new setting.
    func replace(with new: (@Sendable () -> Void)?)
        -> (old: (@Sendable () -> Void)?, setting: WallClockChangeHandlerSetting)
    {
        handler.withLock { handler in
            let old = handler.function
            handler.function = new
            handler.number += 1
            return (old, WallClockChangeHandlerSetting(number: handler.number))
        }
    }
}
