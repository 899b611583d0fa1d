import CTimerCore

/// Which of the kernel's clocks a timer or a reading is on: the C core's
/// `tk_clock`.
///
/// Code rarely names one: the clock types (``MonotonicClock``, ``BootClock``,
/// ``WallClock``, ``ManualClock``) carry it as ``TimerClock/clockID``, and a
/// timer's fire dates are instants of its clock type.
public enum ClockID: Sendable, Hashable, CaseIterable, CustomStringConvertible {
    /// Time since boot, not counting time spent suspended (`CLOCK_MONOTONIC`).
    case monotonic
    /// Time since boot, including time spent suspended (`CLOCK_BOOTTIME`).
    case boot
    /// Time since the Unix epoch (`CLOCK_REALTIME`); the user or NTP may step it.
    case wall

    /// `monotonic`, `boot` or `wall`.
    public var description: String {
        switch self {
        case .monotonic: "monotonic"
        case .boot: "boot"
        case .wall: "wall"
        }
    }

    /// The C core's name for this clock.
    var rawClock: tk_clock {
        switch self {
        case .monotonic: TK_CLOCK_MONOTONIC
        case .boot: TK_CLOCK_BOOTTIME
        case .wall: TK_CLOCK_REALTIME
        }
    }

    /// The machine's current reading of the clock, in nanoseconds since its
    /// origin.
    ///
    /// - Complexity: O(1); a vDSO read, no system call and no allocation.
    @inline(__always)
    func read() -> Int64 {
        var nanoseconds: Int64 = 0
        SystemError.expectSuccess(tk_clock_now(rawClock, &nanoseconds), "tk_clock_now")
        return nanoseconds
    }

    /// The clock's resolution as the kernel reports it.
    func resolution() -> Duration {
        var nanoseconds: Int64 = 0
        SystemError.expectSuccess(tk_clock_resolution(rawClock, &nanoseconds), "tk_clock_resolution")
        return .nanoseconds(nanoseconds)
    }
}
