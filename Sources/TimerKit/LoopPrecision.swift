import CTimerCore

/// How a ``TimerLoop`` serves its precise timers, and what it asks of the
/// thread that runs it; see ``TimerLoop/setPrecision(_:)``.
///
/// Precision is chosen per timer (``AnyLoopTimer/setPrecise(_:)``): only
/// precise timers cost a spin. The margin and the thread's settings are the
/// loop's, because one thread serves all of its timers.
///
/// The corresponding C type is `tk_precision`.
public struct LoopPrecision: Sendable, Hashable, CustomStringConvertible {
    /// The margin a loop uses until one is set: 200 µs.
    public static var defaultMargin: Duration { .nanoseconds(TK_PRECISION_DEFAULT_MARGIN_NS) }
    /// The largest margin a loop accepts: 100 ms.
    public static var maximumMargin: Duration { .nanoseconds(TK_PRECISION_MAX_MARGIN_NS) }

    /// How long before a precise timer's deadline the loop wakes and starts
    /// spinning. A wake-up later than the margin is not made up for, so a
    /// larger margin absorbs worse wake-ups, at the price of a longer spin
    /// on every fire.
    public var margin: Duration

    /// `nil`: the thread's scheduling policy is left alone. 1 to 99: the
    /// thread running the loop takes `SCHED_FIFO` at this priority while it
    /// runs the loop, and the loop's actions run at it too: an action that
    /// never blocks can then starve other work on its CPU. A thread running
    /// under `SCHED_DEADLINE` keeps that policy, which runs ahead of every
    /// `SCHED_FIFO` thread already.
    public var realtimePriority: Int?

    /// A precision with the given margin and, if any, real-time priority.
    public init(margin: Duration = LoopPrecision.defaultMargin, realtimePriority: Int? = nil) {
        self.margin = margin
        self.realtimePriority = realtimePriority
    }

    /// The margin and the priority, for example `margin 200 µs, no real-time
    /// priority` or `margin 1500 ns, SCHED_FIFO priority 10` (a margin that
    /// is not whole microseconds in nanoseconds, and one that is not whole
    /// nanoseconds as `Duration` writes it).
    public var description: String {
        let priority = realtimePriority.map { "SCHED_FIFO priority \($0)" } ?? "no real-time priority"
        return "margin \(Self.text(margin)), \(priority)"
    }

    private static func text(_ margin: Duration) -> String {
        let (nanoseconds, rest) = margin.attoseconds.quotientAndRemainder(dividingBy: 1_000_000_000)
        guard rest == 0 else { return "\(margin)" }
        return nanoseconds % 1000 == 0 ? "\(nanoseconds / 1000) µs" : "\(nanoseconds) ns"
    }

    /// The C settings, or `nil` for what C would read otherwise: a margin
    /// under 1 ns (0 is C's "the default") and a priority of 0 (C's "none",
    /// which is `nil` here). The core checks the ranges. A part of a
    /// nanosecond counts as a whole one, so that a margin is never less
    /// than asked for.
    var settings: tk_precision? {
        guard margin.attoseconds >= 1_000_000_000, realtimePriority != 0 else { return nil }
        return tk_precision(
            margin_ns: margin.nanosecondsRoundedUp,
            realtime_priority: CInt(clamping: realtimePriority ?? 0), flags: 0)
    }

    init(_ settings: tk_precision) {
        margin = .nanoseconds(settings.margin_ns)
        realtimePriority = settings.realtime_priority > 0 ? Int(settings.realtime_priority) : nil
    }
}
