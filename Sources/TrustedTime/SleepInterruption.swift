import TimerKit

/// Ends one boot-clock sleep of ``TrustedClock/sleep(until:tolerance:)`` early
/// when the clock's samples change, so that the sleep is planned again from
/// the new server time. The boot-clock sleep runs in a task of its own, which
/// a change cancels without cancelling the caller's.
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

    /// Runs `body` (a boot-clock sleep) until it ends or the samples change.
    ///
    /// - Throws: what `body` throws, except the `CancellationError` of a
    ///   sleep that a change ended; `CancellationError` if the calling task
    ///   is cancelled.
    func sleep(_ body: @escaping @Sendable () async throws -> Void) async throws {
        let sleeper = Task { try await body() }
        let changed = state.withLock { state in
            if !state.changed { state.sleeper = sleeper }
            return state.changed
        }
        if changed { sleeper.cancel() }
        defer { state.withLock { $0.sleeper = nil } }
        try await withTaskCancellationHandler {
            do {
                try await sleeper.value
            } catch is CancellationError where !Task.isCancelled {
                // A change of the samples ended it: the caller reads the clock again.
            }
        } onCancel: {
            sleeper.cancel()
        }
    }
}
