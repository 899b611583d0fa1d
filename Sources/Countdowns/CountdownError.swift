import TimerKit

/// Why a ``CountdownCenter`` or ``Cooldowns`` call was refused. A refused
/// call changes nothing.
public enum CountdownError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A server-time instant given to a center on the boot clock, which has
    /// no trusted clock to place it with.
    case needsTrustedClock
    /// The handle names no countdown of this center (ended, removed, or
    /// another center's).
    case noSuchCountdown(Countdown)
    /// The group was not made by this center.
    case noSuchGroup(CountdownGroup)
    /// A granularity must be at least one nanosecond.
    case invalidGranularity(Duration)
    /// A cooldown must last at least one nanosecond.
    case invalidDuration(Duration)
    /// The center's loop refused its timer.
    case timer(TimerError)

    /// A sentence saying what went wrong.
    public var description: String {
        switch self {
        case .needsTrustedClock: "a server-time instant needs a center on a trusted clock"
        case .noSuchCountdown(let countdown): "\(countdown) is not in this center"
        case .noSuchGroup(let group): "\(group) was not made by this center"
        case .invalidGranularity(let granularity):
            "a granularity must be at least 1 ns, not \(granularity)"
        case .invalidDuration(let duration): "a cooldown must last at least 1 ns, not \(duration)"
        case .timer(let error): error.description
        }
    }
}
