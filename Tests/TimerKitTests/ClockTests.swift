import CTimerCore
import Glibc
import Testing

@testable import TimerKit

/// Reads a kernel clock with libc, in nanoseconds.
private func libcNow(_ id: clockid_t) -> Int64 {
    var time = timespec()
    let result = clock_gettime(id, &time)
    precondition(result == 0, "clock_gettime(\(id)) failed")
    return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
}

/// A reading of `Clock` lies between two libc readings of `kernelClock`.
private func checkReadsKernelClock<Clock: KernelClock>(_ clock: Clock, _ kernelClock: clockid_t)
    throws
{
    for _ in 0..<1_000 {
        let before = libcNow(kernelClock)
        let reading = clock.now.offset.nanosecondCount
        let after = libcNow(kernelClock)
        try #require(before <= reading, "\(Clock.self): \(reading) < \(before)")
        try #require(reading <= after, "\(Clock.self): \(reading) > \(after)")
    }
    var expected = timespec()
    #expect(clock_getres(kernelClock, &expected) == 0)
    #expect(clock.minimumResolution.nanosecondCount
            == Int64(expected.tv_sec) * 1_000_000_000 + Int64(expected.tv_nsec))
}

@Suite("The machine's clocks")
struct KernelClockTests {
    @Test("each clock reads its kernel clock and reports its resolution")
    func clocksReadTheirKernelClocks() throws {
        try checkReadsKernelClock(MonotonicClock(), CLOCK_MONOTONIC)
        try checkReadsKernelClock(BootClock(), CLOCK_BOOTTIME)
        try checkReadsKernelClock(WallClock(), CLOCK_REALTIME)
    }

    @Test("every clock names a different C clock")
    func clockIDsAreDistinct() {
        let ids = [MonotonicClock.clockID, BootClock.clockID, WallClock.clockID]
        #expect(Set(ids).count == 3)
        #expect(Set(ClockID.allCases.map { $0.rawClock.rawValue }).count == ClockID.allCases.count)
        #expect(ClockID.allCases.allSatisfy { $0.rawClock.rawValue < TK_CLOCK_COUNT })
        #expect(ManualClock.clockID == .monotonic)
    }

    @Test("the monotonic clock never goes backwards")
    func monotonicNeverGoesBackwards() throws {
        var previous = MonotonicClock.now
        for _ in 0..<100_000 {
            let current = MonotonicClock.now
            try #require(current >= previous)
            previous = current
        }
    }

    @Test("the boot clock is never behind the monotonic clock read before it")
    func bootIsNeverBehindMonotonic() throws {
        for _ in 0..<10_000 {
            let monotonic = MonotonicClock.now.offset
            let boot = BootClock.now.offset
            try #require(boot >= monotonic)
        }
    }

    @Test("the monotonic clock advances by at least the time slept")
    func monotonicAdvancesAcrossSleep() {
        let start = MonotonicClock.now
        var request = timespec(tv_sec: 0, tv_nsec: 2_000_000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 {
            request = remaining
        }
        #expect(MonotonicClock.now - start >= .milliseconds(2))
    }

    @Test("the boot id is a UUID, the same each time")
    func bootIDIsStable() throws {
        let id = try BootClock.bootID()
        #expect(id.count == 36)
        #expect(id.filter { $0 == "-" }.count == 4)
        #expect(try BootClock.bootID() == id)
    }
}

@Suite("Standard library instants")
struct StandardInstantTests {
    @Test("a monotonic instant and a SuspendingClock instant convert exactly, both ways")
    func suspendingRoundTrip() {
        var generator = SeededGenerator(seed: testSeed())
        for _ in 0..<1_000 {
            let offset = Duration.nanoseconds(generator.within(0...Int64(1) << 62))
            let instant = MonotonicClock.Instant(offset: offset)
            #expect(MonotonicClock.Instant(instant.suspendingInstant) == instant)
            #expect(SuspendingClock().systemEpoch.duration(to: instant.suspendingInstant) == offset)
        }
    }

    @Test("a boot instant and a ContinuousClock instant convert exactly, both ways")
    func continuousRoundTrip() {
        var generator = SeededGenerator(seed: testSeed())
        for _ in 0..<1_000 {
            let offset = Duration.nanoseconds(generator.within(0...Int64(1) << 62))
            let instant = BootClock.Instant(offset: offset)
            #expect(BootClock.Instant(instant.continuousInstant) == instant)
        }
    }

    @Test("SuspendingClock reads CLOCK_MONOTONIC and ContinuousClock reads CLOCK_BOOTTIME")
    func standardClocksReadTheSameKernelClocks() {
        // Bracketed: the converted standard reading lies between two of ours.
        for _ in 0..<1_000 {
            let before = MonotonicClock.now
            let suspending = MonotonicClock.Instant(SuspendingClock.now)
            let after = MonotonicClock.now
            #expect(before <= suspending && suspending <= after)
            let bootBefore = BootClock.now
            let continuous = BootClock.Instant(ContinuousClock.now)
            let bootAfter = BootClock.now
            #expect(bootBefore <= continuous && continuous <= bootAfter)
        }
    }

    @Test("a deadline converted from the standard library wakes a TimerKit sleep, never early")
    func convertedDeadlineSleep() async throws {
        let deadline = SuspendingClock.now + .milliseconds(5)
        try await MonotonicClock().sleep(until: MonotonicClock.Instant(deadline))
        #expect(SuspendingClock.now >= deadline)
    }
}

@Suite("ClockInstant")
struct ClockInstantTests {
    @Test("arithmetic and order")
    func arithmetic() {
        let a = BootClock.Instant(offset: .seconds(10))
        let b = a + .milliseconds(1500)
        #expect(b - a == .milliseconds(1500))
        #expect(a.duration(to: b) == .milliseconds(1500))
        #expect(b - .milliseconds(1500) == a)
        #expect(a < b && !(b < a))
        #expect(a.advanced(by: .zero) == a)
        #expect(b.description == "BootClock + 11.5 seconds")
    }

    @Test("arithmetic saturates at the ends of Duration's range instead of trapping")
    func saturation() {
        let longest = Duration(attoseconds: .max)
        let shortest = Duration(attoseconds: .min)
        let late = MonotonicClock.Instant(offset: .seconds(1))
        let early = MonotonicClock.Instant(offset: .seconds(-1))
        #expect((late + longest).offset == longest)
        #expect(late.advanced(by: longest).offset == longest)
        #expect((early + shortest).offset == shortest)
        #expect((early - longest).offset == shortest)
        #expect((late - shortest).offset == longest)
        let end = MonotonicClock.Instant(offset: longest)
        let start = MonotonicClock.Instant(offset: shortest)
        #expect(end - start == longest)
        #expect(start - end == shortest)
        #expect(start.duration(to: end) == longest)
        #expect(end.duration(to: start) == shortest)
        // Within the range, exact as before.
        #expect((end - .seconds(1)) + .seconds(1) == end)
    }

    @Test("sleeps and runs for the longest Durations neither trap nor end early")
    func longestSleeps() async throws {
        let longest = Duration(attoseconds: .max)
        // A real sleep that long is cancelled: it throws, no trap.
        let sleeper = Task { try await MonotonicClock().sleep(for: longest, tolerance: longest) }
        let boot = Task { try await Task.sleep(for: longest, clock: BootClock()) }
        sleeper.cancel()
        boot.cancel()
        await #expect(throws: CancellationError.self) { try await sleeper.value }
        await #expect(throws: CancellationError.self) { try await boot.value }
        // On a manual clock, a sleep for the shortest ends at once.
        let clock = try ManualClock(start: ManualClock.Instant(offset: .seconds(-1)))
        try await clock.sleep(for: Duration(attoseconds: .min))
        // A manual run for the longest moves time to the clock's end (the
        // nanosecond before its last instant, which never comes).
        let loop = try TimerLoop.manual(startingAt: .seconds(1))
        try loop.run(for: longest)
        #expect(loop.now(.monotonic).nanoseconds == Int64.max - 1)
    }
}
