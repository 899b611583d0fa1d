import CTimerCore

/// The counters a loop keeps about itself (``TimerLoop/statistics``).
public struct LoopStatistics: Sendable, Hashable {
    /// Timers scheduled and not yet fired or invalidated.
    public var pending: UInt64
    /// Times the loop woke from waiting (a `runOnce(waiting: false)` poll,
    /// which does not wait, among them; on a manual loop: moved to a wake-up
    /// or a run's deadline).
    public var wakeups: UInt64
    /// Timer callbacks run.
    public var fired: UInt64
    /// Times a timerfd was armed.
    public var arms: UInt64
    /// Wall-clock steps seen.
    public var clockChanges: UInt64
    /// Spins made to meet precise timers' deadlines (see
    /// ``AnyLoopTimer/setPrecise(_:)``).
    public var spins: UInt64
    /// The time spent in those spins, on the monotonic clock: what precise
    /// timers cost in CPU time, since a spinning thread holds its CPU
    /// throughout (unless the kernel preempts it).
    public var spinTime: Duration

    init(_ stats: tk_loop_stats) {
        pending = stats.pending
        wakeups = stats.wakeups
        fired = stats.fired
        arms = stats.arms
        clockChanges = stats.clock_changes
        spins = stats.spins
        spinTime = .nanoseconds(Int64(clamping: stats.spin_ns))
    }
}
