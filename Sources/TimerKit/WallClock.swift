/// The machine's wall clock: time since the Unix epoch (`CLOCK_REALTIME`).
///
/// The user or an NTP daemon may step it, either way. A timer or a sleep on
/// it is measured against the clock as it is when the deadline comes: when
/// the clock is stepped, TimerKit's loop sees it at once (a timerfd armed
/// with `TFD_TIMER_CANCEL_ON_SET`) and re-evaluates its wall-clock timers.
/// Use it for "at 20:00 local wall time"; use ``BootClock`` or
/// ``MonotonicClock`` for intervals.
///
/// ```swift
/// let eightPM = WallClock.Instant(offset: .seconds(1_767_297_600))
/// try await WallClock().sleep(until: eightPM)
/// ```
public struct WallClock: KernelClock, Sendable {
    /// A reading of the wall clock: time since 1970-01-01 00:00:00 UTC.
    public typealias Instant = ClockInstant<WallClock>

    /// `CLOCK_REALTIME`.
    public static var clockID: ClockID { .wall }

    /// The clock. All instances read the same clock.
    public init() {}
}
