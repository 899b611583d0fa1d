/// An observation of a ``CountdownCenter``: the center calls its handler
/// while it is alive. Cancelling it, or dropping the last reference to it,
/// ends it; when no observation of a center is left, its ticker stops: the
/// center counts its observers for you.
public final class CountdownObservation: Sendable {
    private let center: CountdownCenter
    private let key: UInt64

    init(center: CountdownCenter, key: UInt64) {
        self.center = center
        self.key = key
    }

    /// Ends the observation. Called on the loop's thread (from any handler),
    /// it takes effect at once, even for events of the same tick that the
    /// center has not delivered yet. Called from another thread, no call of
    /// the handler starts after it returns, except one the loop's thread was
    /// starting at that very moment. Idempotent.
    public func cancel() {
        center.cancel(key)
    }

    deinit {
        center.cancel(key)
    }
}
