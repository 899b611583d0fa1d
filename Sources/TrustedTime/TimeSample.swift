import TimerKit

/// One reading of a server's clock: the server's time, and the boot-clock
/// instants when the request was sent and when the reply came back.
///
/// This is how a program that gets the time from its own API server feeds a
/// ``TrustedClock`` (the flash-sale countdown case): read `BootClock` before
/// sending the request and after the reply arrives, and pass the server's time
/// from the reply.
///
/// ```swift
/// let sent = BootClock.now
/// let reply = try await fetchServerTime()             // your request
/// let received = BootClock.now
/// try clock.sync(with: TimeSample(serverTime: .milliseconds(reply.milliseconds),
///                                 sentAt: sent, receivedAt: received,
///                                 serverResolution: .milliseconds(1)))
/// // or, from the reply's HTTP Date header (1 s resolution):
/// try clock.sync(with: TimeSample(httpDate: reply.dateHeader, sentAt: sent, receivedAt: received))
/// ```
///
/// The server's time is taken to belong to the middle of the round trip
/// (Cristian's algorithm); the error bound is half the round trip (the most an
/// asymmetric path can shift the middle) plus half the server's resolution
/// plus the server's own uncertainty.
public struct TimeSample: Sendable, Hashable {
    /// The server's time, since the Unix epoch. With a ``serverResolution``,
    /// the server's time truncated to a multiple of it (as an HTTP `Date` is
    /// truncated to the second). With a ``serverProcessingTime``, the middle
    /// of the time the server held the request.
    public var serverTime: Duration
    /// When the request was sent, on the boot clock.
    public var sentAt: BootClock.Instant
    /// When the reply was received, on the boot clock.
    public var receivedAt: BootClock.Instant
    /// The resolution of ``serverTime``: `.zero` if exact, one second for an
    /// HTTP `Date` header.
    public var serverResolution: Duration
    /// How long the server held the request, if it says (NTP does); it is
    /// taken off the round trip.
    public var serverProcessingTime: Duration
    /// How far the server's own clock may be from true time (for NTP: root
    /// delay / 2 + root dispersion + precision).
    public var serverUncertainty: Duration

    /// A sample. ``TrustedClock/sync(with:)`` checks it (for example that
    /// `receivedAt` is not before `sentAt`).
    public init(
        serverTime: Duration,
        sentAt: BootClock.Instant,
        receivedAt: BootClock.Instant,
        serverResolution: Duration = .zero,
        serverProcessingTime: Duration = .zero,
        serverUncertainty: Duration = .zero
    ) {
        self.serverTime = serverTime
        self.sentAt = sentAt
        self.receivedAt = receivedAt
        self.serverResolution = serverResolution
        self.serverProcessingTime = serverProcessingTime
        self.serverUncertainty = serverUncertainty
    }

    /// The round trip minus the server's processing time.
    public var roundTrip: Duration {
        (receivedAt - sentAt).subtractingSaturating(serverProcessingTime)
    }

    /// The boot-clock instant the server's time is taken to belong to: the
    /// middle of the round trip.
    public var midpoint: BootClock.Instant {
        sentAt + (receivedAt - sentAt) / 2
    }

    /// The best estimate of the server's time at ``midpoint``.
    public var serverTimeAtMidpoint: Duration {
        serverTime.addingSaturating(serverResolution / 2)
    }

    /// How far ``serverTimeAtMidpoint`` may be from true time: half the round
    /// trip, half the resolution (rounded up) and the server's uncertainty.
    public var errorBound: Duration {
        halfUp(roundTrip).addingSaturating(halfUp(serverResolution)).addingSaturating(serverUncertainty)
    }

    /// Why the sample cannot be used, or `nil`.
    var problem: String? {
        if !Self.readable(serverTime) {
            return "a server time outside the years 1677 to 2262, which clock readings hold"
        }
        if receivedAt < sentAt { return "received before it was sent" }
        if sentAt.offset < .zero { return "sent at a negative boot-clock reading" }
        if serverResolution < .zero { return "negative server resolution" }
        if serverUncertainty < .zero { return "negative server uncertainty" }
        if serverProcessingTime < .zero { return "negative server processing time" }
        if serverProcessingTime > receivedAt - sentAt {
            return "the server held the request longer than the round trip"
        }
        // The figures the clock keeps, checked once the ones above are: a
        // resolution or uncertainty of centuries would otherwise saturate.
        if !Self.readable(serverTimeAtMidpoint) {
            return "a server time outside the years 1677 to 2262 once half its resolution is added"
        }
        if !Self.readable(errorBound) { return "an error bound longer than clock readings hold (292 years)" }
        return nil
    }

    /// Whether a clock reading (signed 64-bit nanoseconds) holds `duration`.
    private static func readable(_ duration: Duration) -> Bool {
        duration >= .nanoseconds(Int64.min) && duration <= .nanoseconds(Int64.max)
    }
}

/// `duration / 2`, rounded up to the nanosecond (for non-negative durations).
func halfUp(_ duration: Duration) -> Duration {
    let nanoseconds = duration.saturatingNanoseconds
    return .nanoseconds(nanoseconds / 2 + nanoseconds % 2)
}
