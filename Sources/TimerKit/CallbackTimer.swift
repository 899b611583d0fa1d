import CTimerCore

/// A timer scheduled by ``TimerCallbacks``: a value, not an object, naming
/// the timer on its loop. Keep it to cancel the timer, or as a key to find
/// what the timer is for.
public struct CallbackTimer: Hashable, Sendable, CustomStringConvertible {
    /// The C core's handle of the timer (unique on its loop, never reused
    /// while the timer is scheduled).
    public let id: UInt64

    init(id: tk_timer_id) {
        self.id = id
    }

    /// "callback timer #id".
    public var description: String { "callback timer #\(id)" }
}
