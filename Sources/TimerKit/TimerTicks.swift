import CTimerCore

/// One tick of a ``TimerTicks`` sequence.
public struct Tick: Sendable, Hashable {
    /// Ticks skipped before this one: fires the loop missed by whole intervals,
    /// plus ticks that came while the consumer was still busy with an earlier
    /// one (they are merged into the next tick rather than queued).
    public var missed: UInt64
}

/// An asynchronous sequence of ticks from a repeating timer.
///
/// ```swift
/// for await tick in try TimerTicks(every: .seconds(1), tolerance: .milliseconds(100)) {
///     render(remaining: deadline - .now, skipped: tick.missed)
/// }
/// ```
///
/// The timer runs on a ``TimerLoop`` (TimerKit's own background loop unless one
/// is given) and stays on its grid. Ticks never pile up: a slow consumer gets
/// the next tick with the skipped ones counted in ``Tick/missed``. The timer is
/// invalidated when the iterating task is cancelled, or when the sequence and
/// its iterators are gone.
public struct TimerTicks: AsyncSequence, Sendable {
    /// Each element is a ``Tick``.
    public typealias Element = Tick

    private let source: TickSource

    /// Starts a repeating timer that ticks every `interval`, first one
    /// `interval` from now.
    ///
    /// - Parameters:
    ///   - loop: the loop to run the timer on; by default TimerKit's background loop.
    ///   - modes: the modes of `loop` the timer ticks in.
    /// - Throws: ``TimerError/invalidInterval(_:)``, ``TimerError/negativeTolerance(_:)``,
    ///   or ``TimerError/core(_:)`` if the background loop cannot start.
    public init(
        every interval: Duration,
        tolerance: Duration = .zero,
        clock: CoreClock = .monotonic,
        on loop: TimerLoop? = nil,
        in modes: [LoopMode] = [.default]
    ) throws(TimerError) {
        let chosen: TimerLoop
        if let loop { chosen = loop } else { chosen = try SleepService.loop.get() }
        source = try TickSource(
            loop: chosen, interval: interval, tolerance: tolerance, clock: clock, modes: modes)
    }

    /// An iterator over the ticks. Iterate from one task at a time.
    public func makeAsyncIterator() -> Iterator {
        Iterator(source: source)
    }

    /// Waits for the next tick.
    public struct Iterator: AsyncIteratorProtocol {
        let source: TickSource

        /// The next tick, or `nil` once the iterating task is cancelled.
        public mutating func next() async -> Tick? {
            await source.next()
        }
    }
}

/// The timer behind a ``TimerTicks`` and the tick it holds for the consumer.
final class TickSource: Sendable {
    private struct State {
        var pending: Tick?
        var waiter: CheckedContinuation<Tick?, Never>?
        var finished = false
    }

    private let state = ThreadLocked(State())
    private let timer: LoopTimer

    init(
        loop: TimerLoop, interval: Duration, tolerance: Duration, clock: CoreClock,
        modes: [LoopMode]
    ) throws(TimerError) {
        let reference = WeakBox()
        timer = try LoopTimer(
            after: interval, repeating: interval, tolerance: tolerance, clock: clock
        ) { timer, missed in
            guard let source = reference.source else { return timer.invalidate() }
            source.deliver(missed: missed)
        }
        reference.source = self
        try loop.add(timer, in: modes)
    }

    deinit {
        timer.invalidate()
    }

    /// A fire of the timer: hand it to a waiting consumer, or merge it into
    /// the tick held for the next one.
    private func deliver(missed: UInt64) {
        let waiter: CheckedContinuation<Tick?, Never>? = state.withLock { state in
            guard !state.finished else { return nil }
            if let waiter = state.waiter {
                state.waiter = nil
                return waiter
            }
            if let held = state.pending {
                state.pending = Tick(missed: held.missed + 1 + missed)
            } else {
                state.pending = Tick(missed: missed)
            }
            return nil
        }
        waiter?.resume(returning: Tick(missed: missed))
    }

    func next() async -> Tick? {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Tick?, Never>) in
                let ready: Tick?? = state.withLock { state in
                    if let tick = state.pending {
                        state.pending = nil
                        return .some(tick)
                    }
                    if state.finished || Task.isCancelled { return .some(nil) }
                    state.waiter = continuation
                    return nil
                }
                if let ready { continuation.resume(returning: ready) }
            }
        } onCancel: {
            finish()
        }
    }

    /// Ends the sequence: no more ticks, and the timer is invalidated.
    private func finish() {
        let waiter = state.withLock { state in
            state.finished = true
            defer { state.waiter = nil }
            return state.waiter
        }
        timer.invalidate()
        waiter?.resume(returning: nil)
    }
}

/// The timer's weak way back to its source (the source owns the timer).
private final class WeakBox: @unchecked Sendable {
    // Written once before the timer is scheduled, read by its action after.
    weak var source: TickSource?
}
