import CTimerCore

/// The clocks of the C core, read directly (no loop needed).
///
/// ```swift
/// let start = try CoreClock.monotonic.now()
/// // ... work ...
/// let elapsed = try CoreClock.monotonic.now() - start
/// ```
public enum CoreClock: Sendable, Hashable, CaseIterable {
    /// Time since boot, not counting time spent suspended (`CLOCK_MONOTONIC`).
    case monotonic
    /// Time since boot, including time spent suspended (`CLOCK_BOOTTIME`).
    case boot
    /// Time since the Unix epoch (`CLOCK_REALTIME`); the user or NTP may step it.
    case wall

    /// The C core's name for this clock.
    var rawClock: tk_clock {
        switch self {
        case .monotonic: TK_CLOCK_MONOTONIC
        case .boot: TK_CLOCK_BOOTTIME
        case .wall: TK_CLOCK_REALTIME
        }
    }

    /// Reads the clock: the time since its origin (boot, or the Unix epoch for
    /// ``wall``), with nanosecond precision.
    ///
    /// The corresponding C function is `tk_clock_now`.
    ///
    /// - Complexity: O(1); a vDSO call, no system call and no allocation.
    public func now() throws(CoreError) -> Duration {
        try CoreClock.now(rawClock)
    }

    /// The clock's resolution as the kernel reports it.
    ///
    /// The corresponding C function is `tk_clock_resolution`.
    public func resolution() throws(CoreError) -> Duration {
        try CoreClock.resolution(rawClock)
    }

    /// Reads any C clock value, including ones the core rejects.
    static func now(_ clock: tk_clock) throws(CoreError) -> Duration {
        var nanoseconds: Int64 = 0
        _ = try checkCore(tk_clock_now(clock, &nanoseconds), "tk_clock_now")
        return .nanoseconds(nanoseconds)
    }

    /// The resolution of any C clock value, including ones the core rejects.
    static func resolution(_ clock: tk_clock) throws(CoreError) -> Duration {
        var nanoseconds: Int64 = 0
        _ = try checkCore(tk_clock_resolution(clock, &nanoseconds), "tk_clock_resolution")
        return .nanoseconds(nanoseconds)
    }
}

extension CoreClock {
    /// The clock for a C clock id the core accepted.
    init(_ clock: tk_clock) {
        switch clock {
        case TK_CLOCK_BOOTTIME: self = .boot
        case TK_CLOCK_REALTIME: self = .wall
        default: self = .monotonic
        }
    }
}
