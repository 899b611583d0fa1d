import TimerKit

/// A reading of a ``TrustedClock``: the time since the Unix epoch, how far it
/// may be from true time, and where it comes from.
///
/// It is also the clock's `Instant`, so a deadline in server time is a
/// `TrustedTime` too:
///
/// ```swift
/// let saleStart = TrustedTime(sinceEpoch: .seconds(1_767_268_800))   // 2026-01-01 12:00 UTC
/// let left = clock.now.duration(to: saleStart)
/// try await clock.sleep(until: saleStart)
/// ```
///
/// Two readings are equal, and ordered, by ``sinceEpoch`` alone: the error
/// bound and the source describe a reading, not the instant it names.
public struct TrustedTime: InstantProtocol, Sendable, CustomStringConvertible {
    /// Where a reading comes from.
    public enum Source: Sendable, Hashable {
        /// Server time carried forward on the boot clock from a sample whose
        /// reply was received at this boot-clock instant.
        case synced(since: BootClock.Instant)
        /// The wall clock, because the clock has no sample from this boot:
        /// it may be wrong by any amount, and the user may have set it.
        case wallClockFallback
        /// An instant given by value (a deadline), not a reading.
        case exact
    }

    /// The time since the Unix epoch (1970-01-01 00:00:00 UTC).
    public var sinceEpoch: Duration

    /// How far ``sinceEpoch`` may be from the server's time, or `nil` when it
    /// cannot be known (``Source/wallClockFallback``).
    public var errorBound: Duration?

    /// Where the reading comes from.
    public var source: Source

    /// An exact instant, `sinceEpoch` after the Unix epoch.
    public init(sinceEpoch: Duration) {
        self.init(sinceEpoch: sinceEpoch, errorBound: .zero, source: .exact)
    }

    /// A reading.
    public init(sinceEpoch: Duration, errorBound: Duration?, source: Source) {
        self.sinceEpoch = sinceEpoch
        self.errorBound = errorBound
        self.source = source
    }

    /// Whether the reading comes from a server sample rather than the wall clock.
    public var isSynced: Bool {
        if case .synced = source { return true }
        return false
    }

    /// The earliest the true time can be, if the error bound is known.
    public var earliest: Duration? { errorBound.map { sinceEpoch.subtractingSaturating($0) } }

    /// The latest the true time can be, if the error bound is known.
    public var latest: Duration? { errorBound.map { sinceEpoch.addingSaturating($0) } }

    /// The same reading, `duration` later (same error bound and source).
    /// Like all arithmetic on readings, it saturates at the ends of
    /// `Duration`'s range instead of trapping.
    public func advanced(by duration: Duration) -> TrustedTime {
        TrustedTime(sinceEpoch: sinceEpoch.addingSaturating(duration), errorBound: errorBound, source: source)
    }

    /// The time from this instant to `other` (saturating).
    public func duration(to other: TrustedTime) -> Duration {
        other.sinceEpoch.subtractingSaturating(sinceEpoch)
    }

    /// Whether `lhs` comes before `rhs`.
    public static func < (lhs: TrustedTime, rhs: TrustedTime) -> Bool {
        lhs.sinceEpoch < rhs.sinceEpoch
    }

    /// Whether both name the same instant.
    public static func == (lhs: TrustedTime, rhs: TrustedTime) -> Bool {
        lhs.sinceEpoch == rhs.sinceEpoch
    }

    /// Hashes the instant (``sinceEpoch``).
    public func hash(into hasher: inout Hasher) {
        hasher.combine(sinceEpoch)
    }

    /// `2026-01-01T12:00:00.000000000Z ±0.000120s (synced)`.
    public var description: String {
        var text = CivilTime.iso8601(sinceEpoch)
        if let errorBound, source != .exact {
            text += " ±" + Self.seconds(errorBound)
        }
        switch source {
        case .synced: text += " (synced)"
        case .wallClockFallback: text += " (wall clock, not synced)"
        case .exact: break
        }
        return text
    }

    /// A duration as seconds with six decimals: `0.000120s`.
    static func seconds(_ duration: Duration) -> String {
        let micros = duration.saturatingNanoseconds / 1000
        let sign = micros < 0 ? "-" : ""
        let magnitude = micros.magnitude
        let fraction = String(magnitude % 1_000_000)
        return "\(sign)\(magnitude / 1_000_000)."
            + String(repeating: "0", count: 6 - fraction.count) + fraction + "s"
    }
}
