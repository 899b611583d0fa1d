import Synchronization
import Testing

import TimerKit
@testable import TrustedTime

/// TrustedClock on scripted readings: the boot, monotonic and wall clocks move
/// independently, and the server's time (the true time) is known exactly.
@Suite("TrustedClock")
struct TrustedClockTests {
    @Test("before any sync it falls back to the wall clock and says so")
    func fallsBackToWallClock() {
        let readings = ScriptedReadings(wallError: .seconds(-3600))
        let clock = TrustedClock(readings: readings)
        let now = clock.now
        #expect(now.sinceEpoch == readings.wall)
        #expect(now.source == .wallClockFallback)
        #expect(now.errorBound == nil)
        #expect(!now.isSynced)
        #expect(!clock.isSynced)
        #expect(clock.needsSync)
        #expect(clock.refreshReason == .neverSynced)
        #expect(clock.wallClockOffset == nil)
        #expect(clock.lastSync == nil)
    }

    @Test("of two samples with the same error bound, the one received first is used")
    func tieGoesToTheFirstReceived() {
        let clock = TrustedClock(readings: ScriptedReadings())
        // A: a 20 ms round trip, midpoint 10.01 s. B: 20.1 ms, midpoint
        // 11.01 s. At B's midpoint A's bound has grown by 50 ppm of 1 s:
        // 10 ms + 50 µs, B's own.
        let a = TimeSample(
            serverTime: .seconds(1_000_000), sentAt: BootClock.Instant(offset: .seconds(10)),
            receivedAt: BootClock.Instant(offset: .seconds(10) + .milliseconds(20)))
        let sentB = BootClock.Instant(offset: .seconds(10) + .microseconds(999_950))
        let b = TimeSample(
            serverTime: .seconds(1_000_001), sentAt: sentB, receivedAt: sentB + .microseconds(20_100))
        #expect(clock.time(at: b.midpoint, from: a).errorBound == b.errorBound)
        #expect(clock.bestSample(of: [b, a]) == a)
        #expect(clock.bestSample(of: [a, b]) == a)
    }

    @Test("the drift allowance is rounded up from a midpoint on half a nanosecond")
    func driftAllowanceOfHalfANanosecond() {
        let clock = TrustedClock(readings: ScriptedReadings())
        let half = Duration(attoseconds: 500_000_000)
        // 50 ppm of 20,000 ns is 1 ns exactly; of 20,000.5 ns, a little more.
        #expect(clock.driftAllowance(.nanoseconds(20_000)) == .nanoseconds(1))
        #expect(clock.driftAllowance(.nanoseconds(20_000) + half) == .nanoseconds(2))
        #expect(clock.driftAllowance(.zero - .nanoseconds(20_000) - half) == .nanoseconds(2))
    }

    @Test("a drift rate up to Int64.max ppm gives an exact or saturated allowance, and a clock that reads")
    func driftAllowanceAtHugeRates() throws {
        func allowance(_ ppm: Int64, _ elapsed: Duration) -> Duration {
            TrustedClock(configuration: .init(driftPartsPerMillion: ppm), readings: ScriptedReadings())
                .driftAllowance(elapsed)
        }
        // 10^14 ppm of 999,999 ns: 99,999,900,000,000 ns, exactly.
        #expect(allowance(100_000_000_000_000, .nanoseconds(999_999)) == .nanoseconds(99_999_900_000_000))
        // Int64.max ppm of 1 ns is Int64.max / 10^6 ns, rounded up.
        #expect(allowance(.max, .nanoseconds(1)) == .nanoseconds(Int64.max / 1_000_000 + 1))
        // Of 999,999 ns: Int64.max × 999,999 / 10^6, rounded up, just fits.
        #expect(allowance(.max, .nanoseconds(999_999)) == .nanoseconds(9_223_362_813_482_738_953))
        #expect(allowance(.max, .nanoseconds(1_000_000)) == .nanoseconds(Int64.max))
        #expect(allowance(.max, .nanoseconds(1_000_001)) == .nanoseconds(Int64.max))
        #expect(allowance(.max, .seconds(1)) == .nanoseconds(Int64.max))
        #expect(allowance(.max, .zero) == .zero)

        // A synced clock at such a rate reads, with a saturated bound.
        let readings = ScriptedReadings()
        let clock = TrustedClock(
            configuration: .init(driftPartsPerMillion: .max), readings: readings)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(1), inbound: .milliseconds(1)))
        readings.advance(by: .nanoseconds(999_999))
        let now = clock.now
        #expect(now.sinceEpoch == readings.truth)
        #expect(try #require(now.errorBound) >= .nanoseconds(Int64.max))
    }

    @Test("a symmetric exchange gives the server's time exactly, carried on the boot clock")
    func cristianMidpoint() throws {
        let readings = ScriptedReadings(wallError: .seconds(-3600))
        let clock = TrustedClock(readings: readings)
        let sample = readings.exchange(outbound: .milliseconds(40), inbound: .milliseconds(40))
        #expect(sample.roundTrip == .milliseconds(80))
        #expect(sample.errorBound == .milliseconds(40))
        let atSync = try clock.sync(with: sample)
        #expect(atSync.sinceEpoch == readings.truth)
        #expect(atSync.source == .synced(since: sample.receivedAt))
        #expect(clock.isSynced)
        #expect(clock.lastSync == sample.receivedAt)

        readings.advance(by: .seconds(10))
        let now = clock.now
        #expect(now.sinceEpoch == readings.truth)
        // 40 ms from the round trip + 50 ppm of the 10.04 s since the midpoint.
        #expect(now.errorBound == .milliseconds(40) + .nanoseconds(502_000))
        #expect(now.isSynced)
        #expect(clock.timeSinceSync == .seconds(10))
        // The wall clock is an hour behind the server.
        #expect(clock.wallClockOffset == .seconds(-3600))
    }

    @Test("an asymmetric path is off by half the asymmetry, within the error bound")
    func asymmetricPath() throws {
        let readings = ScriptedReadings()
        let clock = TrustedClock(readings: readings)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(90), inbound: .milliseconds(10)))
        let now = clock.now
        let error = now.sinceEpoch - readings.truth
        #expect(error == .milliseconds(40))
        #expect(magnitude(error) <= now.errorBound!)
        #expect(now.earliest! <= readings.truth && readings.truth <= now.latest!)
    }

    @Test("a suspend: the boot clock keeps counting, so trusted time stays right")
    func suspendKeepsTime() throws {
        let readings = ScriptedReadings()
        let clock = TrustedClock(readings: readings)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(5), inbound: .milliseconds(5)))
        let monotonicBefore = readings.monotonic
        readings.suspend(for: .seconds(3600))
        readings.advance(by: .seconds(2))
        #expect(readings.monotonic - monotonicBefore == .seconds(2))
        let now = clock.now
        #expect(now.sinceEpoch == readings.truth)
        #expect(clock.timeSinceSync == .seconds(3602))
        // The bound grew by 50 ppm of the hour: 180 ms.
        #expect(now.errorBound! >= .milliseconds(5) + .milliseconds(180))
        #expect(now.errorBound! <= .milliseconds(5) + .milliseconds(181))
    }

    @Test("the wall clock set back an hour changes nothing in trusted time")
    func wallSetBack() throws {
        let readings = ScriptedReadings()
        let clock = TrustedClock(readings: readings)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(1), inbound: .milliseconds(1)))
        readings.advance(by: .seconds(30))
        readings.stepWall(by: .seconds(-3600))
        readings.advance(by: .seconds(30))
        #expect(clock.now.sinceEpoch == readings.truth)
        #expect(clock.wallClockOffset == .seconds(-3600))
        readings.stepWall(by: .seconds(7200))
        #expect(clock.now.sinceEpoch == readings.truth)
        #expect(clock.wallClockOffset == .seconds(3600))
    }

    @Test("the sample with the smallest round trip wins, whatever the order")
    func bestSampleWins() throws {
        for order in [[0, 1, 2, 3], [3, 2, 1, 0], [2, 0, 3, 1]] {
            let readings = ScriptedReadings()
            let clock = TrustedClock(readings: readings)
            // Round trips of 400, 60, 200 and 900 ms; each path is asymmetric
            // by its whole length, so each sample is off by a different amount.
            let roundTrips: [Duration] = [
                .milliseconds(400), .milliseconds(60), .milliseconds(200), .milliseconds(900),
            ]
            var taken: [Int: TimeSample] = [:]
            for index in order {
                taken[index] = readings.exchange(outbound: roundTrips[index], inbound: .zero)
                try clock.sync(with: taken[index]!)
                readings.advance(by: .milliseconds(100))
            }
            #expect(clock.bestSample == taken[1], "order \(order)")
            #expect(clock.samples.count == 4)
            // Off by half of 60 ms.
            #expect(clock.now.sinceEpoch - readings.truth == .milliseconds(30), "order \(order)")
        }
    }

    @Test("an old sample loses to a newer one once its drift allowance outgrows the difference")
    func oldSampleAges() throws {
        let readings = ScriptedReadings()
        let clock = TrustedClock(readings: readings)
        let old = readings.exchange(outbound: .milliseconds(10), inbound: .milliseconds(10))
        try clock.sync(with: old)
        // 100 s later: 5 ms of drift allowance; a 14 ms round trip (7 ms)
        // beats 10 + 5 = 15 ms.
        readings.advance(by: .seconds(100))
        let newer = readings.exchange(outbound: .milliseconds(7), inbound: .milliseconds(7))
        try clock.sync(with: newer)
        #expect(clock.bestSample == newer)
        // A 40 ms round trip (20 ms) does not beat it.
        readings.advance(by: .seconds(1))
        try clock.sync(with: readings.exchange(outbound: .milliseconds(20), inbound: .milliseconds(20)))
        #expect(clock.bestSample == newer)
    }

    @Test("only the most recent samples are kept")
    func keepsRecentSamples() throws {
        let readings = ScriptedReadings()
        let clock = TrustedClock(
            configuration: .init(maximumSamples: 3), readings: readings)
        var all: [TimeSample] = []
        for index in 0..<5 {
            let sample = readings.exchange(
                outbound: .milliseconds(index == 0 ? 1 : 50), inbound: .milliseconds(50))
            all.append(sample)
            try clock.sync(with: sample)
        }
        #expect(clock.samples == Array(all.suffix(3)))
        // The best one (index 0) has left with the oldest.
        #expect(clock.bestSample != all[0])
    }

    @Test("impossible samples are refused and change nothing")
    func invalidSamples() throws {
        let readings = ScriptedReadings()
        let clock = TrustedClock(readings: readings)
        let good = readings.exchange(outbound: .milliseconds(3), inbound: .milliseconds(3))
        try clock.sync(with: good)
        let now = readings.boot
        let bad: [TimeSample] = [
            TimeSample(serverTime: .seconds(1), sentAt: now, receivedAt: now - .seconds(1)),
            TimeSample(
                serverTime: .seconds(1), sentAt: now - .seconds(1), receivedAt: now,
                serverResolution: .seconds(-1)),
            TimeSample(
                serverTime: .seconds(1), sentAt: now - .seconds(1), receivedAt: now,
                serverProcessingTime: .seconds(2)),
            TimeSample(
                serverTime: .seconds(1), sentAt: now - .seconds(1), receivedAt: now,
                serverUncertainty: .nanoseconds(-1)),
            TimeSample(serverTime: .seconds(1), sentAt: now, receivedAt: now + .seconds(1)),
        ]
        for sample in bad {
            #expect(throws: TrustedTimeError.self) { try clock.sync(with: sample) }
        }
        // Server times that no clock reading holds (a Date header of 1600, a
        // corrupt reply): refused, where a center's time base saturated.
        let outside = TrustedTimeError.invalidSample(
            "a server time outside the years 1677 to 2262, which clock readings hold")
        let nanosecond = Duration.nanoseconds(1)
        for serverTime in [
            Duration.nanoseconds(Int64.min) - nanosecond, .nanoseconds(Int64.max) + nanosecond / 2,
            .seconds(Int64.min), .seconds(Int64.max),
        ] {
            #expect(throws: outside) {
                try clock.sync(with: TimeSample(serverTime: serverTime, sentAt: now, receivedAt: now))
            }
        }
        #expect(throws: outside) {
            try clock.sync(with: TimeSample(httpDate: "Sat, 01 Jan 1600 00:00:00 GMT", sentAt: now, receivedAt: now))
        }
        // A resolution or an uncertainty of centuries: refused, where the
        // clock would have moved to the end of its range.
        let lastSecond = Duration.nanoseconds(Int64.max) - .seconds(1)
        #expect(throws: TrustedTimeError.invalidSample(
            "a server time outside the years 1677 to 2262 once half its resolution is added")) {
            try clock.sync(with: TimeSample(
                serverTime: .seconds(1), sentAt: now, receivedAt: now, serverResolution: .seconds(Int64.max)))
        }
        #expect(throws: TrustedTimeError.invalidSample(
            "a server time outside the years 1677 to 2262 once half its resolution is added")) {
            try clock.sync(with: TimeSample(
                serverTime: lastSecond, sentAt: now, receivedAt: now, serverResolution: .seconds(4)))
        }
        let tooUncertain = TrustedTimeError.invalidSample(
            "an error bound longer than clock readings hold (292 years)")
        for uncertainty in [Duration.seconds(Int64.max), .nanoseconds(Int64.max)] {
            #expect(throws: tooUncertain) {
                try clock.sync(with: TimeSample(
                    serverTime: .seconds(1), sentAt: now - .seconds(1), receivedAt: now,
                    serverUncertainty: uncertainty))
            }
        }
        #expect(clock.samples == [good])
        #expect(clock.now.sinceEpoch == readings.truth)
    }

    @Test("a sample truncated to whole seconds is placed mid-second, with half a second of error")
    func resolution() throws {
        let readings = ScriptedReadings(truth: ScriptedReadings.newYear2026 + .milliseconds(700))
        let clock = TrustedClock(readings: readings)
        let sample = readings.exchange(
            outbound: .milliseconds(20), inbound: .milliseconds(20), resolution: .seconds(1))
        #expect(sample.serverTime == ScriptedReadings.newYear2026)
        #expect(sample.errorBound == .milliseconds(520))
        try clock.sync(with: sample)
        let now = clock.now
        #expect(magnitude(now.sinceEpoch - readings.truth) <= now.errorBound!)
        #expect(now.sinceEpoch - readings.truth == .milliseconds(500 - 720))
    }

    @Test("sleep(until:) sleeps on the boot clock and never returns early")
    func sleepUntilServerTime() async throws {
        let readings = ScriptedReadings(wallError: .seconds(-3600))
        let clock = TrustedClock(readings: readings)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(1), inbound: .milliseconds(1)))
        let deadline = clock.now.advanced(by: .seconds(10))
        try await clock.sleep(until: deadline)
        #expect(clock.now >= deadline)
        #expect(readings.sleeps == [.seconds(10)])

        // A sync during the sleep moves server time back 3 s: the clock
        // sleeps again for the rest.
        let deadline2 = clock.now.advanced(by: .seconds(20))
        readings.onNextSleep {
            let boot = readings.boot
            let sample = TimeSample(
                serverTime: readings.truth - .seconds(3), sentAt: boot, receivedAt: boot)
            _ = try? clock.sync(with: sample)
        }
        try await clock.sleep(until: deadline2)
        #expect(clock.now >= deadline2)
        #expect(readings.sleeps.suffix(2) == [.seconds(20), .seconds(3)])
        // Already past: returns at once.
        try await clock.sleep(until: deadline)
        #expect(readings.sleeps.count == 3)
    }

    @Test("the Clock conformance: Task.sleep with the trusted clock, on the real boot clock")
    func realSleep() async throws {
        let clock = TrustedClock()
        let boot = BootClock().now
        try clock.sync(
            with: TimeSample(serverTime: .seconds(2_000_000_000), sentAt: boot, receivedAt: boot))
        let start = clock.now
        try await Task.sleep(until: start.advanced(by: .milliseconds(30)), clock: clock)
        #expect(clock.now.sinceEpoch - start.sinceEpoch >= .milliseconds(30))
        #expect(clock.now.sinceEpoch > .seconds(2_000_000_000))
        #expect(clock.minimumResolution == .nanoseconds(1))
    }

    @Test("a sync during sleep(until:) that moves server time forward ends the sleep when the clock reads the deadline")
    func sleepFollowsForwardSync() async throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(1_000))
        let clock = TrustedClock(readings: LoopClockReadings(loop: loop, bootID: "boot-1"))
        let boot = loop.now(.boot)
        try clock.sync(
            with: TimeSample(serverTime: .seconds(2_000_000_000), sentAt: boot, receivedAt: boot))
        let deadline = clock.now.advanced(by: .seconds(100))
        let sleeper = Task { () async throws -> TrustedTime in
            try await clock.sleep(until: deadline)
            return clock.now
        }
        try await waitFor { loop.statistics.pending == 1 }
        try loop.advance(by: .seconds(10))
        // The server says it is 50 s later than the clock thought: the
        // deadline is now 40 s of the boot clock away, not 90.
        let resynced = loop.now(.boot)
        try clock.sync(
            with: TimeSample(
                serverTime: clock.now.sinceEpoch + .seconds(50), sentAt: resynced,
                receivedAt: resynced))
        try loop.advance(by: .seconds(40))
        // With a limit: a sleep still planned on the old server time would
        // end only at +100 s of the boot clock.
        let ended = try? await valueWithin60Seconds(of: sleeper)?.get()
        let end = try #require(ended, "the sleep did not end at the deadline")
        #expect(end >= deadline)
    }

    @Test("sleep(until:) on readings whose boot clock is not the machine's: no spin, no wait for the machine's clock",
          arguments: [false, true])
    func sleepOnShiftedReadings(ahead: Bool) async throws {
        // An hour ahead, or behind by as much as the machine's boot clock
        // allows (an hour, or half its reading on a machine up for less than
        // two hours): a time sample is never taken at a negative reading.
        let behind = min(.seconds(3600), BootClock.now.offset / 2)
        let readings = ShiftedReadings(shift: ahead ? .seconds(3600) : .zero - behind)
        let clock = TrustedClock(readings: readings)
        let boot = readings.boot
        try clock.sync(
            with: TimeSample(serverTime: .seconds(2_000_000_000), sentAt: boot, receivedAt: boot))
        let deadline = clock.now.advanced(by: .milliseconds(30))
        let reads = readings.reads
        let sleeper = Task { try await clock.sleep(until: deadline) }
        // The sleep is 30 ms of real time; the limit is generous, for a
        // loaded machine. A sleep until the machine's boot clock reads the
        // deadline would end at once (behind it) or an hour later (ahead).
        let inTime = (try? await valueWithin60Seconds(of: sleeper)?.get()) != nil
        #expect(inTime, "the sleep did not end within 60 s")
        #expect(clock.now >= deadline)
        // One boot-clock sleep, and a reading before and after it: a sleep
        // that ended at once would be taken again and again until the
        // readings caught up.
        #expect(readings.reads - reads < 20)
    }

    @Test("refresh policy: age and error bound")
    func refreshPolicy() throws {
        let readings = ScriptedReadings()
        let clock = TrustedClock(
            configuration: .init(
                refreshPolicy: .init(
                    maximumAge: .seconds(600), maximumErrorBound: .milliseconds(100),
                    afterWallClockChange: true)),
            readings: readings)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(5), inbound: .milliseconds(5)))
        #expect(clock.refreshReason == nil)
        #expect(!clock.needsSync)
        readings.advance(by: .seconds(601))
        #expect(clock.refreshReason == .syncTooOld(age: .seconds(601) + .milliseconds(0)))
        try clock.sync(with: readings.exchange(outbound: .milliseconds(40), inbound: .milliseconds(40)))
        #expect(clock.refreshReason == nil)
        // 40 ms + 50 ppm: past 100 ms after 1200 s of suspend; the age rule
        // is off here so only the bound speaks.
        let boundOnly = TrustedClock(
            configuration: .init(
                refreshPolicy: .init(maximumAge: nil, maximumErrorBound: .milliseconds(100))),
            readings: readings)
        try boundOnly.sync(
            with: readings.exchange(outbound: .milliseconds(40), inbound: .milliseconds(40)))
        readings.suspend(for: .seconds(1_300))
        guard case .errorBoundTooLarge(let bound) = boundOnly.refreshReason else {
            Issue.record("expected errorBoundTooLarge, got \(String(describing: boundOnly.refreshReason))")
            return
        }
        #expect(bound > .milliseconds(100))
    }

    @Test("reset forgets the samples and falls back to the wall clock")
    func reset() throws {
        let readings = ScriptedReadings(wallError: .seconds(5))
        let clock = TrustedClock(readings: readings)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(1), inbound: .milliseconds(1)))
        clock.reset()
        #expect(!clock.isSynced)
        #expect(clock.samples.isEmpty)
        #expect(clock.now.sinceEpoch == readings.wall)
        #expect(clock.refreshReason == .neverSynced)
    }

    @Test("TrustedTime arithmetic saturates at the ends of Duration's range instead of trapping")
    func trustedTimeSaturates() {
        let longest = Duration(attoseconds: .max)
        let shortest = Duration(attoseconds: .min)
        let late = TrustedTime(sinceEpoch: .seconds(1))
        let early = TrustedTime(sinceEpoch: .seconds(-1))
        #expect(late.advanced(by: longest).sinceEpoch == longest)
        #expect(early.advanced(by: shortest).sinceEpoch == shortest)
        #expect(early.advanced(by: longest).sinceEpoch == longest - .seconds(1))  // no overflow
        let end = TrustedTime(sinceEpoch: longest)
        let start = TrustedTime(sinceEpoch: shortest)
        #expect(start.duration(to: end) == longest)
        #expect(end.duration(to: start) == shortest)
        let wide = TrustedTime(sinceEpoch: .seconds(1), errorBound: longest, source: .wallClockFallback)
        #expect(wide.latest == longest)
        #expect(wide.earliest == .seconds(1) - longest)
        let odd = TrustedTime(sinceEpoch: .seconds(1), errorBound: shortest, source: .wallClockFallback)
        #expect(odd.earliest == longest)
        #expect(odd.latest == .seconds(1) + shortest)
    }

    @Test("server time at boot-clock instants at the ends of Duration's range saturates, synced or not")
    func timeAtExtremeBootInstants() throws {
        let readings = ScriptedReadings()
        let clock = TrustedClock(readings: readings)
        let longest = Duration(attoseconds: .max)
        let shortest = Duration(attoseconds: .min)
        let latest = BootClock.Instant(offset: longest)
        let earliest = BootClock.Instant(offset: shortest)
        // The wall clock moved by the boot clock's time to the instant.
        #expect(clock.time(atBoot: latest).sinceEpoch == longest)
        #expect(clock.time(atBoot: earliest).sinceEpoch == shortest + readings.wall)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(1), inbound: .milliseconds(1)))
        // The span from the sample's midpoint held at the range's end, then
        // the server time at the midpoint added.
        let server = try #require(clock.bestSample).serverTimeAtMidpoint
        for (instant, expected) in [(latest, longest), (earliest, shortest + server)] {
            let time = clock.time(atBoot: instant)
            #expect(time.sinceEpoch == expected)
            // The drift allowance of that span, held at Int64.max ns.
            #expect(time.errorBound! >= .nanoseconds(Int64.max))
        }
    }

    @Test("a sample whose figures pass Duration's range is refused, not trapped on")
    func extremeSampleFigures() throws {
        let readings = ScriptedReadings()
        let clock = TrustedClock(readings: readings)
        let boot = readings.boot
        let longest = Duration(attoseconds: .max)
        let samples = [
            TimeSample(serverTime: .seconds(1_700_000_000), sentAt: boot, receivedAt: boot,
                serverResolution: .seconds(1), serverUncertainty: longest),
            TimeSample(serverTime: .seconds(1_700_000_000), sentAt: boot, receivedAt: boot,
                serverUncertainty: longest - .seconds(1)),
            TimeSample(serverTime: .seconds(1_700_000_000), sentAt: boot, receivedAt: boot,
                serverResolution: longest),
            TimeSample(serverTime: .seconds(1_700_000_000), sentAt: boot, receivedAt: boot + longest),
        ]
        for sample in samples {
            #expect(throws: TrustedTimeError.self) { try clock.sync(with: sample) }
        }
        #expect(!clock.isSynced)
        let refused = TimeSample(
            serverTime: .seconds(1_700_000_000), sentAt: boot, receivedAt: boot,
            serverProcessingTime: Duration(attoseconds: .min))
        #expect(refused.roundTrip == longest)
        #expect(throws: TrustedTimeError.self) { try clock.sync(with: refused) }
    }

    @Test("TrustedTime: equality and order by instant only; description")
    func trustedTimeValue() {
        let a = TrustedTime(sinceEpoch: .seconds(10), errorBound: .milliseconds(3), source: .wallClockFallback)
        let b = TrustedTime(sinceEpoch: .seconds(10))
        #expect(a == b)
        #expect(a.hashValue == b.hashValue)
        #expect(b < b.advanced(by: .nanoseconds(1)))
        #expect(b.duration(to: b.advanced(by: .seconds(3))) == .seconds(3))
        #expect(b.source == .exact && b.errorBound == .zero)
        let synced = TrustedTime(
            sinceEpoch: ScriptedReadings.newYear2026 + .milliseconds(1500),
            errorBound: .microseconds(120), source: .synced(since: BootClock.Instant(offset: .seconds(1))))
        #expect(synced.description == "2026-01-01T00:00:01.500000000Z ±0.000120s (synced)")
        #expect(b.description == "1970-01-01T00:00:10.000000000Z")
        #expect(
            TrustedTime(sinceEpoch: .nanoseconds(-1)).description
                == "1969-12-31T23:59:59.999999999Z")
    }

    @Test("sync and now from many threads at once")
    func concurrentSyncAndRead() async throws {
        let clock = TrustedClock()
        let server = Duration.seconds(2_000_000_000)
        let origin = BootClock().now
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<2 {
                group.addTask {
                    for _ in 0..<2_000 {
                        let boot = BootClock().now
                        _ = try? clock.sync(
                            with: TimeSample(
                                serverTime: server + (boot - origin), sentAt: boot, receivedAt: boot))
                    }
                }
            }
            for _ in 0..<2 {
                group.addTask {
                    for _ in 0..<2_000 {
                        let now = clock.now
                        if now.isSynced {
                            // Every sample agrees: the reading is the server's
                            // time to within its error bound.
                            let expected = server + (BootClock().now - origin)
                            #expect(magnitude(now.sinceEpoch - expected) <= now.errorBound! + .seconds(1))
                        }
                    }
                }
            }
        }
        #expect(clock.samples.count == 8)
    }
}

/// The suspend-aware stopwatch on scripted and on real clocks.
@Suite("SuspendAwareStopwatch")
struct SuspendAwareStopwatchTests {
    @Test("a suspend shows as elapsed but not awake")
    func suspend() {
        let readings = ScriptedReadings()
        var stopwatch = SuspendAwareStopwatch(readings: readings)
        readings.advance(by: .seconds(2))
        readings.suspend(for: .seconds(3600))
        readings.advance(by: .milliseconds(500))
        readings.stepWall(by: .seconds(-86_400))  // irrelevant to both clocks
        let reading = stopwatch.read()
        #expect(reading.elapsed == .seconds(3602) + .milliseconds(500))
        #expect(reading.awake == .milliseconds(2500))
        #expect(reading.suspended == .seconds(3600))
        #expect(stopwatch.elapsed == reading.elapsed)
        #expect(stopwatch.suspended == .seconds(3600))
        let lap = stopwatch.restart()
        #expect(lap == reading)
        readings.advance(by: .seconds(1))
        #expect(stopwatch.read() == .init(elapsed: .seconds(1), awake: .seconds(1), suspended: .zero))
    }

    @Test("on the real clocks: elapsed >= awake, suspended >= 0")
    func realClocks() {
        let stopwatch = SuspendAwareStopwatch()
        for _ in 0..<10_000 {
            let reading = stopwatch.read()
            #expect(reading.elapsed >= reading.awake)
            #expect(reading.suspended >= .zero)
            if reading.elapsed < reading.awake { break }
        }
    }
}
