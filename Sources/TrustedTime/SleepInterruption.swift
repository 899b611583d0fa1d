import TimerKit

/// Ends one boot-clock sleep of ``TrustedClock/sleep(until:tolerance:)`` early
/// when the clock's samples change, so that the sleep is planned again from
/// the new server time.
///
/// A sleep ends early only by the cancellation of the task it runs in, and a
/// change must not cancel the caller's task (a cancellation cannot be undone,
/// and the caller goes on sleeping, to the new deadline): so each boot-clock
/// sleep runs in a task of its own, which a change cancels, and the caller
/// waits for it. That task starts at once on the caller's executor, isolated
/// as the caller is (`Task.immediate`); on a `TimerLoop`'s job, it and
/// the caller's wait for it prefer that loop. So a sleep that resumes on the
/// loop (readings of that loop, or the machine's, whose sleeps go on the
/// loop of the job that calls) ends on the loop's thread, and the caller
/// with it, with no hop: a task resumed without that preference goes through
/// the global executor first.
final class SleepInterruption: Sendable {
    private struct State {
        /// The samples changed since the last ``rearm()``.
        var changed = false
        /// The boot-clock sleep under way.
        var sleeper: Task<Void, any Error>?
    }

    private let state = ThreadLocked(State())

    /// Forgets earlier changes: called before the clock is read.
    func rearm() {
        state.withLock { $0.changed = false }
    }

    /// The samples changed: ends the sleep under way, or the next one at once.
    func interrupt() {
        let sleeper = state.withLock { state in
            state.changed = true
            return state.sleeper
        }
        sleeper?.cancel()
    }

    /// Runs `body` (a boot-clock sleep) until it ends or the samples change,
    /// on the caller's executor (`isolation`).
    ///
    /// - Throws: what `body` throws, except the `CancellationError` of a
    ///   sleep that a change ended; `CancellationError` if the calling task
    ///   is cancelled.
    func sleep(
        isolation: isolated (any Actor)? = #isolation,
        _ body: nonisolated(nonsending) @escaping @Sendable () async throws -> Void
    ) async throws {
        // On a loop's job, the task and the wait for it prefer the loop,
        // so that their resumptions from its thread stay on it.
        let loop = TimerLoop.executing
        // Runs until the sleep suspends before this returns.
        let sleeper = Task.immediate(executorPreference: loop) {
            _ = isolation  // captured: the task runs isolated to it
            try await body()
        }
        let changed = state.withLock { state in
            if !state.changed { state.sleeper = sleeper }
            return state.changed
        }
        if changed { sleeper.cancel() }
        defer { state.withLock { $0.sleeper = nil } }
        try await withTaskExecutorPreference(loop, isolation: isolation) {
            try await withTaskCancellationHandler(
                operation: {
                    do {
                        try await sleeper.value
                    } catch is CancellationError where !Task.isCancelled {
                        // A change of the samples ended it: the caller reads the clock again.
                    }
                },
                onCancel: { sleeper.cancel() },
                isolation: isolation)
        }
    }
}
