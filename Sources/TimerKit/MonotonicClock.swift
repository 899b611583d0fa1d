/// The machine's clock that counts time since boot and stops while the
/// system is suspended (`CLOCK_MONOTONIC`): the standard library's
/// `SuspendingClock` on Linux.
///
/// Use it for intervals that should not include time asleep, such as an
/// animation or a retry delay. Timers use it unless told otherwise.
///
/// ```swift
/// let clock = MonotonicClock()
/// try await clock.sleep(for: .seconds(5), tolerance: .milliseconds(500))
/// // or: try await Task.sleep(for: .seconds(5), tolerance: .milliseconds(500), clock: clock)
/// ```
public struct MonotonicClock: KernelClock, Sendable {
    /// A reading of the monotonic clock.
    public typealias Instant = ClockInstant<MonotonicClock>

    /// `CLOCK_MONOTONIC`.
    public static var clockID: ClockID { .monotonic }

    /// The clock. All instances read the same clock.
    public init() {}
}

extension ClockInstant where Clock == MonotonicClock {
    /// The same instant of the same kernel clock, as the standard library's
    /// `SuspendingClock` names it (exact: both read `CLOCK_MONOTONIC`).
    public init(_ instant: SuspendingClock.Instant) {
        self.init(offset: SuspendingClock().systemEpoch.duration(to: instant))
    }

    /// This instant as a `SuspendingClock.Instant` (exact).
    public var suspendingInstant: SuspendingClock.Instant {
        SuspendingClock().systemEpoch.advanced(by: offset)
    }
}
