import CTimerCore

/// One `sleep(until:tolerance:)` of a clock, served by a one-shot timer of the
/// C core on some loop, resumed from the loop's thread.
///
/// Exactly one of two things ends a sleep, and the C core decides which: the
/// timer fires (its callback resumes the task), or `tk_loop_cancel` succeeds
/// (the cancellation handler resumes it with `CancellationError`). A cancelled
/// sleep leaves the deadline heap at once.
final class Sleeper: Sendable {
    private struct State {
        var continuation: CheckedContinuation<Void, any Error>?
        var id: tk_timer_id = 0
        var cancelled = false
    }

    private let state = ThreadLocked(State())
    private let loop: TimerLoop
    private let settled: (@Sendable () -> Void)?

    private init(loop: TimerLoop, settled: (@Sendable () -> Void)?) {
        self.loop = loop
        self.settled = settled
    }

    /// Suspends until `clock` on `loop` reads `deadline` (nanoseconds), at most
    /// `tolerance` later. `registered` runs once the timer is scheduled,
    /// `settled` once it fired or was cancelled.
    static func sleep(
        on loop: TimerLoop, clock: CoreClock, until deadline: Duration, tolerance: Duration?,
        registered: (@Sendable () -> Void)? = nil, settled: (@Sendable () -> Void)? = nil
    ) async throws {
        let sleeper = Sleeper(loop: loop, settled: settled)
        let leeway = max(0, tolerance?.saturatingNanoseconds ?? 0)
        var spec = tk_timer_spec(
            clock: clock.rawClock, deadline_ns: deadline.saturatingNanoseconds, interval_ns: 0,
            leeway_ns: leeway, modes: ~0, flags: UInt32(TK_TIMER_ABSOLUTE))
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                sleeper.start(continuation, &spec, registered: registered)
            }
        } onCancel: {
            sleeper.cancel()
        }
    }

    private func start(
        _ continuation: CheckedContinuation<Void, any Error>, _ spec: inout tk_timer_spec,
        registered: (@Sendable () -> Void)?
    ) {
        let failure: (any Error)? = state.withLock { state in
            if state.cancelled { return CancellationError() }
            // The loop's reference, released by the loop's release handler.
            let context = Unmanaged.passRetained(self)
            var id: tk_timer_id = 0
            let result = tk_loop_schedule(
                loop.handle, &spec,
                { _, _, _, context in
                    Unmanaged<Sleeper>.fromOpaque(context!).takeUnretainedValue().wake()
                },
                context.toOpaque(), &id)
            guard result == 0 else {
                context.release()
                return TimerError.core(CoreError(code: -result, function: "tk_loop_schedule"))
            }
            state.id = id
            state.continuation = continuation
            // Under the lock, so that it comes before the wake-up's `settled`.
            registered?()
            return nil
        }
        if let failure { continuation.resume(throwing: failure) }
    }

    /// The timer fired.
    private func wake() {
        let continuation = state.withLock { state in
            defer { state.continuation = nil }
            return state.continuation
        }
        settled?()
        continuation?.resume()
    }

    /// The sleeping task was cancelled.
    private func cancel() {
        let id = state.withLock { state in
            state.cancelled = true
            return state.id
        }
        // 0: the timer will never fire, so resuming is up to this call.
        guard id != 0, tk_loop_cancel(loop.handle, id) == 0 else { return }
        let continuation = state.withLock { state in
            defer { state.continuation = nil }
            return state.continuation
        }
        settled?()
        continuation?.resume(throwing: CancellationError())
    }
}

/// The loop that serves the sleeps of ``MonotonicClock`` and ``BootClock``, on
/// a thread of its own, started the first time a sleep needs it.
enum SleepService {
    static let loop: Result<TimerLoop, TimerError> = {
        do throws(TimerError) {
            return .success(try TimerLoop.startThread())
        } catch {
            return .failure(error)
        }
    }()
}
