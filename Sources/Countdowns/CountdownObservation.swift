/// An observation of a ``CountdownCenter``: the center calls its handler
/// while it is alive. Cancelling it, or dropping the last reference to it,
/// ends it; when no observation of a center is left, its ticker stops (the
/// seeds' "open" and "close", counted for you).
public final class CountdownObservation: Sendable {
    private let center: CountdownCenter
    private let key: UInt64

    init(center: CountdownCenter, key: UInt64) {
        self.center = center
        self.key = key
    }

    /// Ends the observation: no call of its handler starts after this
    /// returns, except one the loop's thread has begun. Idempotent.
    public func cancel() {
        center.cancel(key)
    }

    deinit {
        center.cancel(key)
    }
}
