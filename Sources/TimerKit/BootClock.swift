import CTimerCore

/// A clock that counts time since boot, including time the system spent suspended (`CLOCK_BOOTTIME`).
///
/// The user cannot set it, so it is what a countdown that must survive a suspend, or trusted time, is measured on.
///
/// Sleeping is served by TimerKit's own loop, so the tolerance is honoured:
/// nearby sleeps share a wake-up, and none ends early. A cancelled sleep gives
/// its timer back at once.
///
/// ```swift
/// let clock = BootClock()
/// try await clock.sleep(for: .seconds(5), tolerance: .milliseconds(500))
/// // or: try await Task.sleep(for: .seconds(5), tolerance: .milliseconds(500), clock: clock)
/// ```
public struct BootClock: Clock, Sendable {
    /// A reading of the clock.
    public struct Instant: OffsetInstant, Sendable {
        /// Time since boot.
        public var offset: Duration

        /// The instant `offset` after boot.
        public init(offset: Duration) {
            self.offset = offset
        }

        /// The current reading of the clock.
        public static var now: Instant { BootClock().now }
    }

    /// The clock. All instances read the same clock.
    public init() {}

    /// The current reading.
    ///
    /// - Complexity: O(1); a vDSO read, no system call.
    public var now: Instant {
        var nanoseconds: Int64 = 0
        _ = tk_clock_now(TK_CLOCK_BOOTTIME, &nanoseconds)
        return Instant(offset: .nanoseconds(nanoseconds))
    }

    /// The clock's resolution as the kernel reports it.
    public var minimumResolution: Duration {
        var nanoseconds: Int64 = 1
        _ = tk_clock_resolution(TK_CLOCK_BOOTTIME, &nanoseconds)
        return .nanoseconds(nanoseconds)
    }

    /// Suspends until the clock reads `deadline`, at most `tolerance` later.
    ///
    /// - Throws: `CancellationError` if the task is cancelled first;
    ///   TimerError if TimerKit's loop cannot be started.
    public func sleep(until deadline: Instant, tolerance: Duration? = nil) async throws {
        let loop = try SleepService.loop.get()
        try await Sleeper.sleep(
            on: loop, clock: .init(TK_CLOCK_BOOTTIME), until: deadline.offset, tolerance: tolerance)
    }
}
