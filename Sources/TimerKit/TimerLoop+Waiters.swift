/// Something that waits for a loop's thread to call it back: a sleep, or a
/// tick iterator. If the thread's run fails, nothing will call it back, so
/// the loop tells it the error instead.
protocol LoopWaiter: AnyObject, Sendable {
    /// The loop's run failed with `error`: end the wait with it. Called once,
    /// on the thread whose run failed, with no lock of the loop held.
    func loopFailed(_ error: TimerError)
}

/// A loop's waiters, and how the run of its own thread ended if it failed.
///
/// Held weakly: a waiter lives as long as what waits (a sleep's timer, a
/// tick iterator), and unregisters when it ends or goes away.
struct LoopWaiters {
    struct Entry {
        weak var waiter: (any LoopWaiter)?
    }

    var failure: TimerError?
    var waiting: [ObjectIdentifier: Entry] = [:]
}

extension TimerLoop {
    /// The error that ended the run of this loop's own thread (see
    /// ``startThread(mode:)``), or `nil` while it runs (and for loops run by
    /// their callers, who see a run's error as it is thrown).
    ///
    /// Once set, every sleep and tick that was waiting on the loop has failed
    /// with it, and every later one fails with it at once, as does adding a
    /// timer to the loop. (A loop whose thread was only stopped has no
    /// failure: it serves timers, sleeps and ticks again once run again.)
    public var failure: TimerError? {
        waiters.withLock { $0.failure }
    }

    /// Whether the run of the loop's own thread failed (see ``failure``).
    var hasFailed: Bool {
        failed.load(ordering: .acquiring)
    }

    /// Registers `waiter` to hear of a failed run.
    ///
    /// - Throws: the failure, if the loop's run failed already.
    func register(_ waiter: any LoopWaiter) throws(TimerError) {
        try waiters.withLock { (state) throws(TimerError) in
            if let failure = state.failure { throw failure }
            state.waiting[ObjectIdentifier(waiter)] = LoopWaiters.Entry(waiter: waiter)
        }
    }

    /// Forgets `waiter` (its wait ended some other way).
    func unregister(_ waiter: any LoopWaiter) {
        _ = waiters.withLock { $0.waiting.removeValue(forKey: ObjectIdentifier(waiter)) }
    }

    /// Records that the run of the loop's thread failed with `error`, and
    /// ends every wait with it.
    func fail(_ error: TimerError) {
        // Set first: whoever sees `failure` also sees `failed` (a stop()
        // that follows posts to the thread serving the jobs).
        failed.store(true, ordering: .sequentiallyConsistent)
        let waiting = waiters.withLock { state in
            state.failure = error
            defer { state.waiting = [:] }
            return state.waiting.values.compactMap(\.waiter)
        }
        for waiter in waiting { waiter.loopFailed(error) }
    }
}
