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

    /// The instant `duration` later.
    @inlinable
    public func advanced(by duration: Duration) -> Self {
        Self(offset: offset + duration)
    }

    /// The time from this instant to `other`.
    @inlinable
    public func duration(to other: Self) -> Duration {
        other.offset - offset
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

    /// The instant `rhs` before `lhs`.
    @inlinable
    public static func - (lhs: Self, rhs: Duration) -> Self {
        lhs.advanced(by: .zero - rhs)
    }

    /// The time from `rhs` to `lhs`.
    @inlinable
    public static func - (lhs: Self, rhs: Self) -> Duration {
        lhs.offset - rhs.offset
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
