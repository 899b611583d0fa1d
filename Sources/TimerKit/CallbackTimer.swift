import CTimerCore

/// A timer scheduled by ``TimerCallbacks``: a value, not an object, naming
/// the timer on its loop. Keep it to cancel the timer, or as a key to find
/// what the timer is for.
public struct CallbackTimer: Hashable, Sendable, CustomStringConvertible {
    /// The C core's handle of the timer (never reused while the timer is
    /// scheduled).
    public let id: UInt64
    /// The number of the loop it is on: a handle is refused by every other
    /// loop, whatever its id.
    let loop: UInt64

    init(id: tk_timer_id, loop: UInt64) {
        self.id = id
        self.loop = loop
    }

    /// "callback timer #id".
    public var description: String { "callback timer #\(id)" }
}
