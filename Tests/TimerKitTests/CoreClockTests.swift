import CTimerCore
import Glibc
import Testing

@testable import TimerKit

/// The kernel clock each CoreClock case must read.
private func kernelClock(_ clock: CoreClock) -> clockid_t {
    switch clock {
    case .monotonic: CLOCK_MONOTONIC
    case .boot: CLOCK_BOOTTIME
    case .wall: CLOCK_REALTIME
    }
}

/// Reads a kernel clock with libc, in nanoseconds.
private func libcNow(_ id: clockid_t) -> Int64 {
    var time = timespec()
    let result = clock_gettime(id, &time)
    precondition(result == 0, "clock_gettime(\(id)) failed")
    return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
}

extension Duration {
    /// The duration in whole nanoseconds.
    fileprivate var nanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

@Suite("CoreClock")
struct CoreClockTests {
    @Test("now() lies between two libc readings of the same kernel clock",
          arguments: CoreClock.allCases)
    func nowMatchesKernelClock(clock: CoreClock) throws {
        for _ in 0..<1_000 {
            let before = libcNow(kernelClock(clock))
            let reading = try clock.now().nanoseconds
            let after = libcNow(kernelClock(clock))
            try #require(before <= reading, "\(clock): \(reading) < \(before)")
            try #require(reading <= after, "\(clock): \(reading) > \(after)")
        }
    }

    @Test("the monotonic clock never goes backwards")
    func monotonicNeverGoesBackwards() throws {
        var previous = try CoreClock.monotonic.now()
        for _ in 0..<100_000 {
            let current = try CoreClock.monotonic.now()
            try #require(current >= previous)
            previous = current
        }
    }

    @Test("the boot clock is never behind the monotonic clock read before it")
    func bootIsNeverBehindMonotonic() throws {
        for _ in 0..<10_000 {
            let monotonic = try CoreClock.monotonic.now()
            let boot = try CoreClock.boot.now()
            try #require(boot >= monotonic)
        }
    }

    @Test("the monotonic clock advances by at least the time slept")
    func monotonicAdvancesAcrossSleep() throws {
        let start = try CoreClock.monotonic.now()
        var request = timespec(tv_sec: 0, tv_nsec: 2_000_000)
        var remaining = timespec()
        while nanosleep(&request, &remaining) != 0 {
            request = remaining
        }
        let elapsed = try CoreClock.monotonic.now() - start
        #expect(elapsed >= .milliseconds(2))
    }

    @Test("resolution() is what the kernel reports", arguments: CoreClock.allCases)
    func resolutionMatchesKernel(clock: CoreClock) throws {
        var expected = timespec()
        #expect(clock_getres(kernelClock(clock), &expected) == 0)
        let resolution = try clock.resolution()
        #expect(resolution > .zero)
        #expect(resolution.nanoseconds
                == Int64(expected.tv_sec) * 1_000_000_000 + Int64(expected.tv_nsec))
    }

    @Test("every case names a different C clock")
    func casesAreDistinct() {
        let raw = Set(CoreClock.allCases.map { $0.rawClock.rawValue })
        #expect(raw.count == CoreClock.allCases.count)
        #expect(raw.allSatisfy { $0 < TK_CLOCK_COUNT })
    }

    @Test("reading an unknown C clock throws EINVAL naming tk_clock_now",
          arguments: [UInt32(TK_CLOCK_COUNT), 7, UInt32.max])
    func unknownClockIsRejected(raw: UInt32) {
        #expect(throws: CoreError(code: EINVAL, function: "tk_clock_now")) {
            _ = try CoreClock.now(tk_clock(rawValue: raw))
        }
    }

    @Test("the resolution of an unknown C clock throws EINVAL naming tk_clock_resolution")
    func unknownClockResolutionIsRejected() {
        #expect(throws: CoreError(code: EINVAL, function: "tk_clock_resolution")) {
            _ = try CoreClock.resolution(tk_clock(rawValue: UInt32(TK_CLOCK_COUNT)))
        }
    }
}
