/// An instant kept as the time since its clock's origin: what the instants of
/// ``MonotonicClock``, ``BootClock`` and ``ManualClock`` are.
///
/// A conforming type declares `offset` and `init(offset:)`; this protocol
/// supplies the rest of `InstantProtocol` and the arithmetic operators.
///
/// ```swift
/// let start = BootClock.now
/// // ...
/// let elapsed: Duration = BootClock.now - start
/// ```
public protocol OffsetInstant: InstantProtocol, Hashable where Duration == Swift.Duration {
    /// Time since the clock's origin.
    var offset: Swift.Duration { get }

    /// The instant `offset` after the clock's origin.
    init(offset: Swift.Duration)
}

extension OffsetInstant {
    /// The instant `duration` later.
    public func advanced(by duration: Swift.Duration) -> Self {
        Self(offset: offset + duration)
    }

    /// The time from this instant to `other`.
    public func duration(to other: Self) -> Swift.Duration {
        other.offset - offset
    }

    /// Whether `lhs` comes before `rhs`.
    public static func < (lhs: Self, rhs: Self) -> Bool {
        lhs.offset < rhs.offset
    }

    /// The instant `rhs` after `lhs`.
    public static func + (lhs: Self, rhs: Swift.Duration) -> Self {
        lhs.advanced(by: rhs)
    }

    /// The instant `rhs` before `lhs`.
    public static func - (lhs: Self, rhs: Swift.Duration) -> Self {
        lhs.advanced(by: .zero - rhs)
    }

    /// The time from `rhs` to `lhs`.
    public static func - (lhs: Self, rhs: Self) -> Swift.Duration {
        lhs.offset - rhs.offset
    }
}
