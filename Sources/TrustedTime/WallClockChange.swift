/// The wall clock moved against trusted time (or, before any sync, against
/// the boot clock): someone set it, or NTP stepped it.
public struct WallClockChange: Sendable, Hashable {
    /// What noticed it.
    public enum Cause: Sendable, Hashable {
        /// A sync: the wall clock disagrees with the new sample (at the first
        /// sync: with the server at all).
        case sync
        /// ``TrustedClock/checkWallClock()`` or a monitor's periodic check.
        case check
        /// The kernel reported a step of the wall clock (a monitor's loop).
        case clockStep
    }

    /// What noticed it.
    public var cause: Cause
    /// How far the wall clock moved: positive forward, negative back.
    public var change: Duration
    /// `wall − trusted` after the change; `nil` before any sync.
    public var offset: Duration?
    /// When it was noticed, in trusted time (the wall clock before any sync).
    public var detectedAt: TrustedTime

    /// A change.
    public init(cause: Cause, change: Duration, offset: Duration?, detectedAt: TrustedTime) {
        self.cause = cause
        self.change = change
        self.offset = offset
        self.detectedAt = detectedAt
    }

    /// Equal when every field is, including the reading's error bound and
    /// source.
    public static func == (lhs: WallClockChange, rhs: WallClockChange) -> Bool {
        lhs.cause == rhs.cause && lhs.change == rhs.change && lhs.offset == rhs.offset
            && lhs.detectedAt.sinceEpoch == rhs.detectedAt.sinceEpoch
            && lhs.detectedAt.errorBound == rhs.detectedAt.errorBound
            && lhs.detectedAt.source == rhs.detectedAt.source
    }

    /// Hashes the cause, the change and the offset.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(cause)
        hasher.combine(change)
        hasher.combine(offset)
    }
}
