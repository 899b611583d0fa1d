import TimerKit

/// Watches the wall clock for a ``TrustedClock`` from a `TimerLoop` (see
/// ``TrustedClock/monitorWallClock(on:checkingEvery:)``).
public final class WallClockMonitor: Sendable {
    private let loop: TimerLoop
    private let timer: AnyLoopTimer?
    private let handler: WallClockChangeHandlerSetting

    init(loop: TimerLoop, timer: AnyLoopTimer?, handler: WallClockChangeHandlerSetting) {
        self.loop = loop
        self.timer = timer
        self.handler = handler
    }

    /// Stops watching: removes the loop's wall-clock-change handler, unless
    /// other code has set one of its own since (which stays), and ends the
    /// periodic check. Calling it again does nothing.
    public func stop() {
        loop.removeWallClockChangeHandler(ifStill: handler)
        timer?.invalidate()
    }
}
