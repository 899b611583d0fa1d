/// A reading of a TimerKit clock: the time since the clock's origin.
///
/// Each clock has its own instant type (`MonotonicClock.Instant` is
/// `ClockInstant<MonotonicClock>`, `BootClock.Instant` is
/// `ClockInstant<BootClock>`, ...), so an instant of one clock cannot be
/// passed where another clock's is expected: a boot-clock deadline never
/// reaches a monotonic timer by mistake.
///
/// ```swift
/// let start = BootClock.now
/// // ...
/// let elapsed: Duration = BootClock.now - start
/// let deadline = MonotonicClock.now + .seconds(5)
/// ```
///
/// Instants of ``MonotonicClock`` and ``BootClock`` convert exactly to and
/// from the standard library's `SuspendingClock.Instant` and
/// `ContinuousClock.Instant`, which read the same kernel clocks on Linux.
///
/// The kernel's clocks count whole nanoseconds, and so does TimerKit: a
/// deadline or a delay with a part of a nanosecond is served at the next
/// whole nanosecond, never before.
///
/// Arithmetic on instants saturates at the ends of `Duration`'s range
/// (about ±5.4 × 10^12 years) instead of trapping: an instant that far out
/// is, for every clock, never.
///
/// `Clock` only names the clock: it is not stored.
public struct ClockInstant<Clock>: InstantProtocol, Hashable, Sendable, CustomStringConvertible {
    /// Time since the clock's origin: boot for the monotonic and boot clocks,
    /// the Unix epoch for the wall clock, the manual clock's zero.
    public var offset: Duration

    /// The instant `offset` after the clock's origin.
    @inlinable
    public init(offset: Duration) {
        self.offset = offset
    }

    /// The instant `duration` later (saturating).
    @inlinable
    public func advanced(by duration: Duration) -> Self {
        let (sum, overflow) = offset.attoseconds.addingReportingOverflow(duration.attoseconds)
        guard overflow else { return Self(offset: Duration(attoseconds: sum)) }
        return Self(offset: Duration(attoseconds: duration.attoseconds > 0 ? .max : .min))
    }

    /// The time from this instant to `other` (saturating).
    @inlinable
    public func duration(to other: Self) -> Duration {
        let (difference, overflow) = other.offset.attoseconds.subtractingReportingOverflow(offset.attoseconds)
        guard overflow else { return Duration(attoseconds: difference) }
        return Duration(attoseconds: other.offset > offset ? .max : .min)
    }

    /// Whether `lhs` comes before `rhs`.
    @inlinable
    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.offset < rhs.offset
    }

    /// The instant `rhs` after `lhs`.
    @inlinable
    public static func + (lhs: Self, rhs: Duration) -> Self {
        lhs.advanced(by: rhs)
    }

    /// The instant `rhs` before `lhs` (saturating).
    @inlinable
    public static func - (lhs: Self, rhs: Duration) -> Self {
        let (difference, overflow) = lhs.offset.attoseconds.subtractingReportingOverflow(rhs.attoseconds)
        guard overflow else { return Self(offset: Duration(attoseconds: difference)) }
        return Self(offset: Duration(attoseconds: rhs.attoseconds < 0 ? .max : .min))
    }

    /// The time from `rhs` to `lhs` (saturating).
    @inlinable
    public static func - (lhs: Self, rhs: Self) -> Duration {
        rhs.duration(to: lhs)
    }

    /// `"<clock> + <offset>"`, for example `"BootClock + 12.5 seconds"`.
    public var description: String {
        "\(Clock.self) + \(offset)"
    }
}

extension ClockInstant where Clock: KernelClock {
    /// The clock's current reading.
    public static var now: Self { Clock().now }
}

extension ClockInstant {
    /// The instant in whole nanoseconds, rounded toward the clock's origin
    /// and saturated to the range of `Int64`: a reading, which is whole
    /// nanoseconds already. (A manual clock moved to an instant goes to
    /// `offset.nanosecondsRoundedDown`, never past it.)
    var nanoseconds: Int64 { offset.saturatingNanoseconds }

    /// The instant as a deadline for the C core: in whole nanoseconds,
    /// rounded up, so that a deadline with a part of a nanosecond is due at
    /// the next whole one, never before it.
    var deadlineNanoseconds: Int64 { offset.nanosecondsRoundedUp }

    /// The instant the C core names in nanoseconds.
    init(nanoseconds: Int64) {
        self.init(offset: .nanoseconds(nanoseconds))
    }
}
