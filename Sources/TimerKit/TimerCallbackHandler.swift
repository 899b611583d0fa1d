/// What ``TimerCallbacks`` calls when one of its timers fires: an object
/// that stands for many timers, such as a connection table that keeps an
/// idle timeout per connection.
public protocol TimerCallbackHandler: AnyObject, Sendable {
    /// Called on the loop's thread when `timer` fires, with the number of
    /// fires skipped because the loop was late by whole intervals (0 for a
    /// one-shot, and for a repeating timer on time).
    func timerFired(_ timer: CallbackTimer, missed: UInt64)
}
