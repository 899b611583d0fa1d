import CTimerSNTP
import Glibc
import Synchronization
import Testing

import TimerKit
@testable import TrustedTime

/// HTTP Date samples and the calendar arithmetic behind them.
@Suite("TimeSample and HTTP-date")
struct TimeSampleTests {
    let sent = BootClock.Instant(offset: .seconds(100))
    let received = BootClock.Instant(offset: .seconds(100) + .milliseconds(80))

    @Test("the three HTTP-date formats of RFC 7231 give the same instant")
    func threeFormats() throws {
        // RFC 7231's own example: 784111777 s since the epoch (its RFC 850
        // form is read in 2094: see twoDigitYears).
        for text in [
            "Sun, 06 Nov 1994 08:49:37 GMT",
            "Sun Nov  6 08:49:37 1994",
            "  Sun, 06 Nov 1994 08:49:37 GMT \t",
        ] {
            let sample = try TimeSample(httpDate: text, sentAt: sent, receivedAt: received)
            #expect(sample.serverTime == .seconds(784_111_777), "\(text)")
            #expect(sample.serverResolution == .seconds(1))
            #expect(sample.errorBound == .milliseconds(540))
            #expect(sample.serverTimeAtMidpoint == .seconds(784_111_777) + .milliseconds(500))
        }
        #expect(HTTPDate.parse("Wed Nov 16 08:49:37 1994") == Int64(784_111_777 + 10 * 86_400))
    }

    @Test("known dates: the epoch, leap days, 2036 and 2038, a leap second")
    func knownDates() {
        #expect(HTTPDate.parse("Thu, 01 Jan 1970 00:00:00 GMT") == Int64(0))
        #expect(HTTPDate.parse("Wed, 31 Dec 1969 23:59:59 GMT") == Int64(-1))
        #expect(HTTPDate.parse("Tue, 29 Feb 2000 12:00:00 GMT") == Int64(951_825_600))
        #expect(HTTPDate.parse("Thu, 07 Feb 2036 06:28:16 GMT") == Int64(2_085_978_496))
        #expect(HTTPDate.parse("Tue, 19 Jan 2038 03:14:08 GMT") == Int64(2_147_483_648))
        #expect(HTTPDate.parse("Thu, 01 Jan 2026 00:00:00 GMT") == Int64(1_767_225_600))
        // 23:59:60 is read as the next second.
        #expect(HTTPDate.parse("Sat, 31 Dec 2016 23:59:60 GMT") == Int64(1_483_228_800))
    }

    @Test("not HTTP-dates")
    func invalid() {
        for text in [
            "",
            "Sun, 06 Nov 1994 08:49:37",  // no GMT
            "Sun, 06 Nov 1994 08:49:37 UTC",
            "Sun, 06 Nov 1994 08:49:37 gmt",
            "sun, 06 Nov 1994 08:49:37 GMT",
            "Mon, 06 Nov 1994 08:49:37 GMT",  // wrong day name
            "Sun, 6 Nov 1994 08:49:37 GMT",
            "Sun, 06 November 1994 08:49:37 GMT",
            "Sun, 06 Nov 94 08:49:37 GMT",
            "Sun, 06 Nov 1994 24:00:00 GMT",
            "Sun, 06 Nov 1994 08:60:00 GMT",
            "Sun, 06 Nov 1994 08:49:61 GMT",
            "Wed, 30 Feb 2000 00:00:00 GMT",
            "Fri, 29 Feb 2019 00:00:00 GMT",  // not a leap year
            "Sun, 00 Nov 1994 08:49:37 GMT",
            "Sun, 06 Nov 1994 08:49:37 GMT x",
            "Sun, 06 Nov 1994 8:49:37 GMT",
            "Sunday, 06-Nov-1994 08:49:37 GMT",
            "Sun Nov 6 08:49:37 1994",
            "Sun Nov  6 08:49:37 94",
            "1994-11-06T08:49:37Z",
            "Sun, 06 Nov 1994 08:49:37 GMT\u{0}",
            "Sun, ０6 Nov 1994 08:49:37 GMT",
        ] {
            #expect(HTTPDate.parse(text) == nil, "\(text)")
            #expect(throws: TrustedTimeError.invalidHTTPDate(text)) {
                try TimeSample(httpDate: text, sentAt: sent, receivedAt: received)
            }
        }
    }

    @Test("a two-digit year is the year from 2025 to 2124 with those digits, whatever the wall clock, and the day name must match")
    func twoDigitYears() {
        #expect(
            HTTPDate.parse("Monday, 01-Jan-25 00:00:00 GMT") == nil)  // 2025-01-01 was a Wednesday
        #expect(
            HTTPDate.parse("Wednesday, 01-Jan-25 00:00:00 GMT") == CivilTime.days(year: 2025, month: 1, day: 1) * 86_400)
        #expect(
            HTTPDate.parse("Sunday, 31-Dec-24 23:59:59 GMT") == CivilTime.days(year: 2125, month: 1, day: 1) * 86_400 - 1)
        #expect(
            HTTPDate.parse("Thursday, 26-Nov-26 12:00:00 GMT") == CivilTime.days(year: 2026, month: 11, day: 26) * 86_400 + 43_200)
        // RFC 7231's example, read in 2094, a Saturday, not in 1994, a Sunday.
        #expect(HTTPDate.parse("Sunday, 06-Nov-94 08:49:37 GMT") == nil)
        #expect(
            HTTPDate.parse("Saturday, 06-Nov-94 08:49:37 GMT")
                == CivilTime.days(year: 2094, month: 11, day: 6) * 86_400 + 31_777)
        // The example `TimeSample.init(httpDate:sentAt:receivedAt:)` gives.
        #expect(
            HTTPDate.parse("Sunday, 06-Nov-33 08:49:37 GMT")
                == CivilTime.days(year: 2033, month: 11, day: 6) * 86_400 + 31_777)
    }

    @Test("every formatted date parses back (random dates, three formats)")
    func formatAndParse() {
        var seed = trustedTestSeed()
        for _ in 0..<5_000 {
            seed = seed &* 6_364_136_223_846_793_005 &+ 1_442_695_040_888_963_407
            // 1900 ... 2200
            let seconds = Int64((seed >> 16) % 9_467_280_000) - 2_208_988_800
            let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
            let (year, month, day) = CivilTime.date(days: days)
            let secondOfDay = seconds - days * 86_400
            let weekday = CivilTime.weekday(days: days)
            func two(_ v: Int64) -> String { v < 10 ? "0\(v)" : "\(v)" }
            let time = "\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))"
            let imf = "\(CivilTime.weekdayNames[weekday]), \(two(Int64(day))) "
                + "\(CivilTime.monthNames[month - 1]) \(year) \(time) GMT"
            let asctime = "\(CivilTime.weekdayNames[weekday]) \(CivilTime.monthNames[month - 1]) "
                + (day < 10 ? " \(day)" : "\(day)") + " \(time) \(year)"
            #expect(CivilTime.days(year: year, month: month, day: day) == days, "\(imf) (seed \(seed))")
            #expect(HTTPDate.parse(imf) == seconds, "\(imf) (seed \(seed))")
            #expect(HTTPDate.parse(asctime) == seconds, "\(asctime) (seed \(seed))")
            if (2025...2124).contains(year) {
                let rfc850 = "\(CivilTime.longWeekdayNames[weekday]), \(two(Int64(day)))-"
                    + "\(CivilTime.monthNames[month - 1])-\(two(year % 100)) \(time) GMT"
                #expect(HTTPDate.parse(rfc850) == seconds, "\(rfc850) (seed \(seed))")
            }
        }
    }

    @Test("the calendar matches the C library's timegm over four centuries")
    func calendarMatchesLibc() {
        var days: Int64 = CivilTime.days(year: 1900, month: 1, day: 1)
        let end = CivilTime.days(year: 2300, month: 1, day: 1)
        var mismatches = 0
        while days < end && mismatches < 5 {
            let (year, month, day) = CivilTime.date(days: days)
            var parts = tm()
            parts.tm_year = Int32(year - 1900)
            parts.tm_mon = Int32(month - 1)
            parts.tm_mday = Int32(day)
            if Int64(timegm(&parts)) != days * 86_400 || Int(parts.tm_wday) != CivilTime.weekday(days: days) {
                Issue.record("day \(days): \(year)-\(month)-\(day)")
                mismatches += 1
            }
            days += 1
        }
    }
}

/// The SNTP client from Swift: error mapping, the sample it builds, and a sync
/// from a fake server on loopback served by a thread.
@Suite("SNTPClient")
struct SNTPClientTests {
    @Test("argument and address errors")
    func arguments() {
        // A NUL would end the name early for C: "localhost\0x" asked localhost.
        for name in ["", "no spaces allowed", "host:123", "[::1]", "a..b", "localhost\0x", "127.0.0.1\0"] {
            #expect(throws: TrustedTimeError.invalidServerName(name)) {
                try SNTPClient.query(server: name, port: 123)
            }
        }
        // The texts quote, escape and cut what they carry: a long name
        // with newlines makes a short line.
        let long = String(repeating: "a\n", count: 500_000)
        for error in [
            TrustedTimeError.invalidServerName(long), .serverNotFound(long), .nameResolutionFailed(long),
            .invalidHTTPDate(long),
        ] {
            #expect(error.description.utf8.count < 200 && !error.description.contains("\n"), "\(error.description.prefix(80))")
            #expect(error.description.contains(#""a\na\n"#) && error.description.contains("…"))
        }
        #expect(throws: TrustedTimeError.self) { try SNTPClient.query(server: "127.0.0.1", samples: 0) }
        #expect(throws: TrustedTimeError.self) { try SNTPClient.query(server: "127.0.0.1", samples: 65) }
        // Below a nanosecond the C core would see no time at all.
        for timeout in [Duration.zero, .nanoseconds(-1), .nanoseconds(1) / 2] {
            #expect(throws: TrustedTimeError.invalidArgument(
                "the timeout must be at least 1 ns, not \(timeout)")) {
                try SNTPClient.query(server: "127.0.0.1", timeout: timeout)
            }
        }
    }

    @Test("each errno of the query means what it says, and only where it says it")
    func errorMapping() {
        func map(_ errno: Errno, kiss: String = "") -> TrustedTimeError {
            .sntp(SystemError(errno: errno, function: "tk_sntp_query"), server: "s", kissCode: kiss)
        }
        #expect(map(.permissionDenied, kiss: "RATE") == .kissOfDeath(code: "RATE"))
        // EACCES without a kiss code came from the network (connect), not the server.
        #expect(map(.permissionDenied) == .system(SystemError(errno: .permissionDenied, function: "tk_sntp_query")))
        // The name was checked before the query: its EINVAL is the network's.
        #expect(map(.invalidArgument) == .system(SystemError(errno: .invalidArgument, function: "tk_sntp_query")))
        #expect(map(.noSuchAddressOrDevice) == .serverNotFound("s"))
        #expect(map(.resourceTemporarilyUnavailable) == .nameResolutionFailed("s"))
        #expect(map(.remoteIOError) == .nameResolutionFailed("s"))
        #expect(map(.timedOut) == .timedOut)
        // ERANGE is the stratum's alone; a server time past Int64 is impossible.
        #expect(map(.outOfRange) == .stratumOutOfRange)
        #expect(map(.overflow) == .invalidTimestamps)
        #expect(map(.badMessage) == .invalidTimestamps)
        #expect(map(.noMemory) == .system(SystemError(errno: .noMemory, function: "tk_sntp_query")))
    }

    @Test("a link-local literal without a scope is refused by connect, not taken for a bad name")
    func connectRefusesAddress() {
        do {
            _ = try SNTPClient.query(server: "fe80::1", port: 123, timeout: .milliseconds(200))
            Issue.record("a query of fe80::1 without a scope succeeded")
        } catch {
            // EINVAL from connect here; EAFNOSUPPORT on a machine without IPv6.
            guard case .system(let failure) = error else {
                Issue.record("fe80::1: \(error), not a system error")
                return
            }
            #expect(failure.function == "tk_sntp_query")
            #expect([Errno.invalidArgument, .addressFamilyNotSupported].contains(failure.errno))
        }
    }

    @Test("nothing listening: connection refused, and the clock is unchanged")
    func refused() throws {
        let port = try FakeSNTPServer.unusedPort()
        let clock = TrustedClock()
        #expect(throws: TrustedTimeError.connectionRefused) {
            try clock.sync(sntpServer: "127.0.0.1", port: port, timeout: .seconds(2))
        }
        #expect(!clock.isSynced)
    }

    @Test("the sample carries the NTP result: same server time and error bound")
    func sampleFromResult() throws {
        var packet = tk_sntp_packet()
        packet.version = 4
        packet.mode = 4
        packet.stratum = 3
        packet.precision = -18
        packet.root_delay = 0x0000_0800
        packet.root_dispersion = 0x0000_0400
        let wall: Int64 = 1_767_225_600_000_000_000
        let offset: Int64 = 2_500_000_123
        var t2: UInt64 = 0, t3: UInt64 = 0
        tk_ntp_from_unix_ns(wall + 7_000_000 + offset, &t2)
        tk_ntp_from_unix_ns(wall + 7_000_000 + offset + 300_000, &t3)
        packet.receive_time = t2
        packet.transmit_time = t3
        var result = tk_sntp_result()
        let boot: Int64 = 50_000_000_000
        #expect(tk_sntp_compute(&packet, boot, wall, boot + 10_300_000, wall + 10_300_000, &result) == 0)
        let measurement = SNTPClient.measurement(of: result)
        let sample = measurement.sample
        #expect(measurement.delay == .milliseconds(10))
        #expect(measurement.offset == .nanoseconds(offset + 2_000_000))  // 7 ms out, 3 ms back
        #expect(sample.roundTrip == .milliseconds(10))
        #expect(sample.errorBound == measurement.errorBound)
        // The sample's estimate at the reply equals the C core's server time.
        let atReceipt = sample.serverTimeAtMidpoint + (sample.receivedAt - sample.midpoint)
        #expect(magnitude(atReceipt - measurement.serverTime) <= .nanoseconds(1))
        #expect(measurement.stratum == 3)

        // A wall clock read at the start of Int64's range (1677): the C
        // result holds the offset at Int64.max; the measurement's is exact,
        // and the server's time is read as it is.
        #expect(tk_sntp_compute(&packet, boot, .min, boot + 10_300_000, .min, &result) == 0)
        #expect(result.offset_ns == .max)
        let early = SNTPClient.measurement(of: result)
        #expect(early.serverTime == .nanoseconds(wall + offset + 12_300_000))
        #expect(early.offset == early.serverTime - .nanoseconds(Int64.min))
        #expect(early.serverTime == measurement.serverTime)
    }

    @Test("sync from a fake SNTP server on 127.0.0.1, an hour ahead of this machine")
    func syncFromFakeServer() throws {
        let server = try FakeSNTPServer(offset: .seconds(3600))
        defer { server.stop() }
        let clock = TrustedClock()
        let recorder = TrustedClockTamperTests.Recorder()
        recorder.attach(to: clock)
        let measurement = try clock.sync(
            sntpServer: "127.0.0.1", port: server.port, samples: 3, timeout: .seconds(2))
        #expect(measurement.requestsSent == 3)
        #expect(measurement.repliesAccepted == 3)
        #expect(measurement.stratum == 2)
        #expect(magnitude(measurement.offset - .seconds(3600)) <= measurement.errorBound)
        let wallBefore = SystemClockReadings().wall
        let now = clock.now
        let wallAfter = SystemClockReadings().wall
        #expect(now.isSynced)
        #expect(now.sinceEpoch >= wallBefore + .seconds(3600) - now.errorBound!)
        #expect(now.sinceEpoch <= wallAfter + .seconds(3600) + now.errorBound!)
        // The wall clock is an hour behind this "server": reported at the sync.
        let changes = recorder.all
        try #require(changes.count == 1)
        #expect(changes[0].cause == .sync)
        #expect(magnitude(changes[0].change + .seconds(3600)) <= .milliseconds(100))
    }
}

/// A tiny SNTP server on 127.0.0.1 for tests: answers every request with the
/// local wall clock plus `offset`, from a thread of its own.
final class FakeSNTPServer: Sendable {
    let port: UInt16
    private let fd: Int32
    private let stopped = Mutex(false)
    private let finished = Mutex(false)

    init(offset: Duration) throws {
        fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        precondition(fd >= 0)
        var timeout = timeval(tv_sec: 0, tv_usec: 50_000)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &timeout, socklen_t(MemoryLayout<timeval>.size))
        port = try FakeSNTPServer.bindLoopback(fd)
        let fd = fd
        let offsetNs = offset.trustedNanoseconds
        try startThread { [self] in
            var buffer = [UInt8](repeating: 0, count: 512)
            while !stopped.withLock({ $0 }) {
                var peer = sockaddr_in()
                var length = socklen_t(MemoryLayout<sockaddr_in>.size)
                let got = buffer.withUnsafeMutableBytes { raw in
                    withUnsafeMutablePointer(to: &peer) { peerPointer in
                        peerPointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            recvfrom(fd, raw.baseAddress, raw.count, 0, $0, &length)
                        }
                    }
                }
                var now = WallClock.now.offset.trustedNanoseconds
                guard got >= 48 else { continue }
                var request = tk_sntp_packet()
                guard tk_sntp_decode(buffer, got, &request) == 0 else { continue }
                var reply = tk_sntp_packet()
                reply.version = 4
                reply.mode = 4
                reply.stratum = 2
                reply.precision = -20
                reply.reference_id = 0x7F00_0001
                reply.origin_time = request.transmit_time
                tk_ntp_from_unix_ns(now + offsetNs, &reply.receive_time)
                now = WallClock.now.offset.trustedNanoseconds
                tk_ntp_from_unix_ns(now + offsetNs, &reply.transmit_time)
                var out = [UInt8](repeating: 0, count: 48)
                tk_sntp_encode(&reply, &out, 48)
                _ = out.withUnsafeBytes { raw in
                    withUnsafePointer(to: &peer) { peerPointer in
                        peerPointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                            sendto(fd, raw.baseAddress, 48, 0, $0, length)
                        }
                    }
                }
            }
            finished.withLock { $0 = true }
        }
    }

    func stop() {
        stopped.withLock { $0 = true }
        while !finished.withLock({ $0 }) { usleep(1_000) }
        close(fd)
    }

    /// Binds `fd` to 127.0.0.1 on an ephemeral port and returns the port.
    static func bindLoopback(_ fd: Int32) throws -> UInt16 {
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_addr.s_addr = inet_addr("127.0.0.1")
        address.sin_port = 0
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) { socketAddress in
                bind(fd, socketAddress, length) == 0 && getsockname(fd, socketAddress, &length) == 0
            }
        }
        guard bound else { throw TrustedTimeError.system(SystemError(errno: Errno(rawValue: errno), function: "bind")) }
        return UInt16(bigEndian: address.sin_port)
    }

    /// A loopback UDP port nothing listens on (it was free a moment ago).
    static func unusedPort() throws -> UInt16 {
        let fd = socket(AF_INET, Int32(SOCK_DGRAM.rawValue), 0)
        defer { close(fd) }
        return try bindLoopback(fd)
    }
}
