import TimerKit

/// The clocks of a `TimerLoop` as ``ClockReadings``: the machine's clocks
/// for a real loop, its manual time for a manual one. A ``TrustedClock`` on a
/// manual loop's readings moves only when the test moves the loop, so code
/// that uses both (countdowns on server time) is tested exactly.
///
/// ```swift
/// let loop = try TimerLoop.manual(startingAt: .seconds(1_000))
/// let clock = TrustedClock(readings: LoopClockReadings(loop: loop, bootID: "boot-1"))
/// try loop.setManualTime(to: loop.now(.boot) + .seconds(60))   // clock.now moves with it
/// ```
public struct LoopClockReadings: ClockReadings {
    /// The loop whose clocks are read.
    public let loop: TimerLoop

    /// The boot id reported: the machine's (read once per process) unless
    /// given, as a test does to model a reboot.
    public let bootID: String?

    /// Readings of `loop`'s clocks, reporting `bootID` (by default the
    /// machine's boot id).
    public init(loop: TimerLoop, bootID: String? = SystemClockReadings().bootID) {
        self.loop = loop
        self.bootID = bootID
    }

    /// The loop's boot clock.
    public var boot: BootClock.Instant { loop.now(.boot) }

    /// The loop's monotonic clock.
    public var monotonic: MonotonicClock.Instant { loop.now(.monotonic) }

    /// The loop's wall clock, since the Unix epoch.
    public var wall: Duration { loop.now(.wall).offset }

    /// Sleeps on the loop's boot clock (see `TimerLoop`'s
    /// `sleep(until:tolerance:)`), on the caller's executor: from an actor or
    /// a task on the loop (real or manual), the sleep ends on the loop's thread
    /// with no hop.
    nonisolated(nonsending)
    public func sleep(until deadline: BootClock.Instant, tolerance: Duration?) async throws {
        try await loop.sleep(until: deadline, tolerance: tolerance)
    }
}
