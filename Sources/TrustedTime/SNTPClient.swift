import CTimerSNTP
import TimerKit

/// What an SNTP server said, and what it means for the local clocks.
public struct SNTPMeasurement: Sendable, Hashable {
    /// The exchange as a ``TimeSample`` for ``TrustedClock/sync(with:)``:
    /// the middle of the server's handling, the boot-clock instants around
    /// the request, the server's processing time and its own uncertainty.
    public var sample: TimeSample
    /// The server's time when the reply was received (``TimeSample/receivedAt``).
    public var serverTime: Duration
    /// The local wall clock when the reply was received.
    public var localWallTime: Duration
    /// `serverTime − localWallTime`: how far the wall clock is behind.
    public var offset: Duration
    /// The round trip minus the server's processing time.
    public var delay: Duration
    /// How far ``serverTime`` may be from true time (see `tk_sntp_result`).
    public var errorBound: Duration
    /// The server's stratum (1 primary, 2...15 secondary).
    public var stratum: Int
    /// The leap indicator (0 none, 1 or 2 a leap second announced).
    public var leapIndicator: Int
    /// The NTP version of the reply (3 or 4).
    public var version: Int
    /// The server's reference id.
    public var referenceID: UInt32
    /// The server's round trip to its primary reference (root delay).
    public var rootDelay: Duration
    /// How far the server may be from its primary reference (root dispersion).
    public var rootDispersion: Duration
    /// The server clock's precision.
    public var precision: Duration
    /// Requests sent.
    public var requestsSent: Int
    /// Valid replies received.
    public var repliesAccepted: Int
}

/// An SNTP client (RFC 4330) over UDP, built on CTimerSNTP's `tk_sntp_query`.
///
/// ```swift
/// let measurement = try SNTPClient.query(server: "time.example.org", samples: 4)
/// print(measurement.offset, measurement.errorBound)
/// ```
///
/// It blocks the calling thread: up to the timeout to resolve a host name,
/// then up to `samples × timeout` for each address tried.
///
/// An NTP timestamp names a time only within an era of 136 years: the
/// server's time is read as the one it can be from 2025 to 2161, whatever
/// the local wall clock reads, so a wall clock set decades off cannot move
/// it to another era.
public enum SNTPClient {
    /// Sends `samples` requests to `server` and returns the reply with the
    /// smallest delay.
    ///
    /// `server` is a host name (resolved with `getaddrinfo` within
    /// `timeout`; each address it resolves to is tried in turn until one
    /// answers) or an IPv4 or IPv6 address literal. Port 0 means 123.
    ///
    /// Use one sample with a public server: they rate-limit clients and may
    /// answer with a kiss-of-death.
    ///
    /// - Throws: a ``TrustedTimeError`` saying why no valid reply came:
    ///   ``TrustedTimeError/serverNotFound(_:)``,
    ///   ``TrustedTimeError/nameResolutionFailed(_:)``,
    ///   ``TrustedTimeError/invalidServerName(_:)``,
    ///   ``TrustedTimeError/timedOut``, ``TrustedTimeError/kissOfDeath(code:)``,
    ///   a rejected reply (``TrustedTimeError/spoofedReply`` and the others),
    ///   ``TrustedTimeError/connectionRefused``,
    ///   ``TrustedTimeError/invalidArgument(_:)``, or a failed system call.
    public static func query(
        server: String, port: UInt16 = 123, samples: Int = 1, timeout: Duration = .seconds(2)
    ) throws(TrustedTimeError) -> SNTPMeasurement {
        guard (1...Int(TK_SNTP_MAX_SAMPLES)).contains(samples) else {
            throw .invalidArgument("samples must be in 1...\(TK_SNTP_MAX_SAMPLES), not \(samples)")
        }
        // C would read the name only up to a NUL, and ask another server.
        guard !server.utf8.contains(0), tk_sntp_check_server(server) == 0 else {
            throw .invalidServerName(server)
        }
        // At least a nanosecond: the C core counts in whole nanoseconds.
        guard timeout.saturatingNanoseconds >= 1 else {
            throw .invalidArgument("the timeout must be at least 1 ns, not \(timeout)")
        }
        var result = tk_sntp_result()
        do {
            _ = try SystemError.check(
                tk_sntp_query(server, port, timeout.saturatingNanoseconds, UInt32(samples), &result),
                "tk_sntp_query")
        } catch {
            throw .sntp(error, server: server, kissCode: kissCode(of: result))
        }
        return measurement(of: result)
    }

    static func kissCode(of result: tk_sntp_result) -> String {
        withUnsafeBytes(of: result.kiss_code) { raw in
            String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
        }
    }

    static func measurement(of r: tk_sntp_result) -> SNTPMeasurement {
        let hold = r.server_transmit_ns - r.server_receive_ns
        let delay = Duration.nanoseconds(r.delay_ns)
        let sample = TimeSample(
            serverTime: .nanoseconds(r.server_receive_ns + hold / 2),
            sentAt: BootClock.Instant(offset: .nanoseconds(r.send_boot_ns)),
            receivedAt: BootClock.Instant(offset: .nanoseconds(r.receive_boot_ns)),
            serverResolution: .zero,
            serverProcessingTime: .nanoseconds(hold),
            // The sample adds half the delay (rounded up) itself.
            serverUncertainty: max(.zero, .nanoseconds(r.error_ns) - halfUp(delay)))
        return SNTPMeasurement(
            sample: sample,
            serverTime: .nanoseconds(r.server_time_ns),
            localWallTime: .nanoseconds(r.receive_wall_ns),
            // Exact, where the C result holds it at the end of int64_t (a
            // wall clock read before 1868).
            offset: .nanoseconds(r.server_time_ns) - .nanoseconds(r.receive_wall_ns),
            delay: delay,
            errorBound: .nanoseconds(r.error_ns),
            stratum: Int(r.stratum),
            leapIndicator: Int(r.leap),
            version: Int(r.version),
            referenceID: r.reference_id,
            rootDelay: .nanoseconds(r.root_delay_ns),
            rootDispersion: .nanoseconds(r.root_dispersion_ns),
            precision: .nanoseconds(r.precision_ns),
            requestsSent: Int(r.requests_sent),
            repliesAccepted: Int(r.replies_accepted))
    }
}

extension TrustedClock {
    /// Syncs from an SNTP server: ``SNTPClient/query(server:port:samples:timeout:)``
    /// then ``sync(with:)``. Blocks the calling thread as the query does:
    /// up to `timeout` to resolve a host name, then up to
    /// `samples × timeout` for each address tried.
    ///
    /// The query reads the machine's real boot and wall clocks, so this is
    /// meant for a clock on ``SystemClockReadings``.
    ///
    /// - Throws: what the query throws; the clock is unchanged then.
    @discardableResult
    public func sync(
        sntpServer server: String, port: UInt16 = 123, samples: Int = 1,
        timeout: Duration = .seconds(2)
    ) throws(TrustedTimeError) -> SNTPMeasurement {
        let measurement = try SNTPClient.query(
            server: server, port: port, samples: samples, timeout: timeout)
        try sync(with: measurement.sample)
        return measurement
    }
}
