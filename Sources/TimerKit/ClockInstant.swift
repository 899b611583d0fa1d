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
    /// The instant in whole nanoseconds for the C core, saturated to the
    /// range of `Int64`.
    var nanoseconds: Int64 { offset.saturatingNanoseconds }

    /// The instant the C core names in nanoseconds.
    init(nanoseconds: Int64) {
        self.init(offset: .nanoseconds(nanoseconds))
    }
}
