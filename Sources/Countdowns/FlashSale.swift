import TimerKit
import TrustedTime

/// A flash sale's countdown: until the sale starts or ends, on a
/// ``CountdownCenter``, immune to the device's wall clock.
///
/// Two ways in:
///
/// ```swift
/// // The server's payload says how long is left ("remaining": 79836).
/// let received = BootClock.now
/// let sale = FlashSale(center: center, remaining: .seconds(79_836), receivedAt: received)
///
/// // Or the server's start instant, on a center on a synced TrustedClock.
/// let start = try FlashSale(center: trustedCenter, at: TrustedTime(sinceEpoch: .seconds(1_767_297_600)))
/// ```
///
/// The first, on a center on the boot clock, needs no clock at all: the end
/// is the reply's boot-clock instant plus the remaining time, and the boot
/// clock cannot be set. (A trusted center keeps it in server time, where a
/// re-sync moves it.) The second follows the trusted clock's server time: a
/// re-sync that moves it re-plans the end, and
/// ``onServerTimeJump(threshold:_:)`` hears large moves, the moment to
/// reload the page. It ends when the clock's reading of server time reaches
/// the instant, and that reading is known to within its error bound
/// (`TrustedTime.errorBound`: half the round trip and the server's own
/// uncertainty after an SNTP sync, and half a second more after one from an
/// HTTP `Date`, which counts whole seconds), so the end may come that much
/// early or late against the server's own clock: let the server decide
/// whether an order made at the start is in time. Reaching zero ends the
/// countdown exactly once: the ``CountdownEvent/ended(_:)`` an observer gets.
public struct FlashSale: Sendable {
    /// The center the sale's countdown is in.
    public let center: CountdownCenter
    /// The sale's countdown.
    public let countdown: Countdown

    /// A sale whose countdown ends `remaining` after `receivedAt`, the
    /// boot-clock instant the server's reply (which said `remaining`)
    /// arrived. A `receivedAt` after the boot clock's reading now counts as
    /// now (see ``CountdownCenter/add(remaining:measuredAt:in:)``).
    public init(center: CountdownCenter, remaining: Duration, receivedAt: BootClock.Instant) {
        self.center = center
        countdown = center.add(remaining: remaining, measuredAt: receivedAt)
    }

    /// A sale whose countdown ends at `instant`, server time.
    ///
    /// - Throws: ``CountdownError/needsTrustedClock`` on a center on the
    ///   boot clock.
    public init(center: CountdownCenter, at instant: TrustedTime) throws(CountdownError) {
        self.center = center
        countdown = try center.add(endingAt: instant)
    }

    /// The time left, from the clock now; `nil` once the countdown has ended.
    public var remaining: Duration? {
        center.remaining(countdown)
    }

    /// Whether the countdown has ended (or was removed): true from the
    /// loop's pass that delivers its end, so ``remaining`` can read 0 a
    /// moment before (a sale made already over reads 0, not ended, until
    /// the loop's next pass).
    public var hasEnded: Bool {
        !center.contains(countdown)
    }

    /// Observes the countdown: a tick whenever the displayed value (the
    /// remaining time rounded up to `granularity`) changes, then
    /// ``CountdownEvent/ended(_:)`` exactly once.
    ///
    /// - Throws: ``CountdownError/noSuchCountdown(_:)`` once it has ended,
    ///   ``CountdownError/invalidGranularity(_:)``.
    public func observe(
        every granularity: Duration = .seconds(1), _ handler: @escaping @Sendable (CountdownEvent) -> Void
    ) throws(CountdownError) -> CountdownObservation {
        try center.observe(countdown, every: granularity, handler)
    }

    /// Calls `handler` when a sync (a re-sync, or the clock's first) moves
    /// server time by more than
    /// `threshold` (the center's ``CountdownCenter/onTimeBaseJump(threshold:_:)``,
    /// which this sets: a center has one such handler, and it replaces the
    /// one set before, by this sale or another).
    public func onServerTimeJump(
        threshold: Duration = .seconds(1), _ handler: @escaping @Sendable (TimeBaseJump) -> Void
    ) {
        center.onTimeBaseJump(threshold: threshold, handler)
    }
}
