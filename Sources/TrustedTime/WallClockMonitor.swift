import TimerKit

/// Watches the wall clock for a ``TrustedClock`` from a `TimerLoop` (see
/// ``TrustedClock/monitorWallClock(on:checkingEvery:)``).
public final class WallClockMonitor: Sendable {
    private let loop: TimerLoop
    private let timer: AnyLoopTimer?

    init(loop: TimerLoop, timer: AnyLoopTimer?) {
        self.loop = loop
        self.timer = timer
    }

    /// Stops watching: clears the loop's wall-clock-change handler and the
    /// periodic check.
    public func stop() {
        loop.removeWallClockChangeHandler()
        timer?.invalidate()
    }
}
