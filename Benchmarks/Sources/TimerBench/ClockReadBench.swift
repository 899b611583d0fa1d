import CTimerCore
import Dispatch
import Foundation
import TimerKit

// Part 4: the cost of reading a clock, for clock_gettime on each clock, the
// C core's tk_clock_now, TimerKit's clocks and the standard library's,
// Foundation's and Dispatch's "now".

/// One way of reading the current time, as nanoseconds (or any value that
/// depends on the reading, so that it cannot be left out).
public struct ClockReader: Sendable {
    public var name: String
    public var read: @Sendable () -> Int64

    public init(name: String, read: @escaping @Sendable () -> Int64) {
        self.name = name
        self.read = read
    }

    private static func gettime(_ id: clockid_t) -> Int64 {
        var spec = timespec()
        clock_gettime(id, &spec)
        return Int64(spec.tv_sec) &* 1_000_000_000 &+ Int64(spec.tv_nsec)
    }

    private static func core(_ clock: tk_clock) -> Int64 {
        var now: Int64 = 0
        _ = tk_clock_now(clock, &now)
        return now
    }

    /// The clocks that need no package.
    public static var standard: [ClockReader] {
        // One read a call: the standard library's instants are opaque, so
        // each is measured from a base read once here.
        let continuous = ContinuousClock.now
        let suspending = SuspendingClock.now
        return [
        ClockReader(name: "clock_gettime(CLOCK_MONOTONIC)") { gettime(CLOCK_MONOTONIC) },
        ClockReader(name: "clock_gettime(CLOCK_MONOTONIC_COARSE)") { gettime(CLOCK_MONOTONIC_COARSE) },
        ClockReader(name: "clock_gettime(CLOCK_MONOTONIC_RAW)") { gettime(CLOCK_MONOTONIC_RAW) },
        ClockReader(name: "clock_gettime(CLOCK_BOOTTIME)") { gettime(CLOCK_BOOTTIME) },
        ClockReader(name: "clock_gettime(CLOCK_REALTIME)") { gettime(CLOCK_REALTIME) },
        ClockReader(name: "clock_gettime(CLOCK_REALTIME_COARSE)") { gettime(CLOCK_REALTIME_COARSE) },
        ClockReader(name: "clock_gettime(CLOCK_TAI)") { gettime(CLOCK_TAI) },
        ClockReader(name: "tk_clock_now(TK_CLOCK_MONOTONIC)") { core(TK_CLOCK_MONOTONIC) },
        ClockReader(name: "tk_clock_now(TK_CLOCK_BOOTTIME)") { core(TK_CLOCK_BOOTTIME) },
        ClockReader(name: "tk_clock_now(TK_CLOCK_REALTIME)") { core(TK_CLOCK_REALTIME) },
        // A Swift instant is handed on as the low bits of its attoseconds
        // (an inlined read of its storage) rather than converted to
        // nanoseconds: a 128-bit division would be measured with the read.
        ClockReader(name: "TimerKit MonotonicClock.now") {
            Int64(truncatingIfNeeded: MonotonicClock().now.offset.attoseconds)
        },
        ClockReader(name: "TimerKit BootClock.now") {
            Int64(truncatingIfNeeded: BootClock().now.offset.attoseconds)
        },
        ClockReader(name: "ContinuousClock.now") {
            Int64(truncatingIfNeeded: (ContinuousClock.now - continuous).attoseconds)
        },
        ClockReader(name: "SuspendingClock.now") {
            Int64(truncatingIfNeeded: (SuspendingClock.now - suspending).attoseconds)
        },
        ClockReader(name: "DispatchTime.now()") { Int64(DispatchTime.now().uptimeNanoseconds) },
        ClockReader(name: "Foundation Date()") { Int64(Date().timeIntervalSinceReferenceDate) },
        ClockReader(name: "Foundation ProcessInfo.systemUptime") {
            Int64(ProcessInfo.processInfo.systemUptime * 1e9)
        },
        ]
    }
}

struct ClockReadFigure {
    var name: String
    /// Nanoseconds per read: the median of the timed reps.
    var ns = Double.nan
    var fastest = Double.nan
    var slowest = Double.nan
    var reads = 0
}

enum ClockReadBench {
    static func run(_ readers: [ClockReader], reads: Int, reps: Int) -> [ClockReadFigure] {
        progress("clock reads: \(readers.count) clocks, \(reps) reps of \(reads) reads each")
        var perRead = [[Double]](repeating: [], count: readers.count)
        var sink: Int64 = 0
        for rep in -1..<reps {
            for i in readers.indices {
                let reader = readers[(i + max(rep, 0)) % readers.count]
                let index = (i + max(rep, 0)) % readers.count
                let t0 = monotonicNanoseconds()
                for _ in 0..<reads { sink &+= reader.read() }
                let t1 = monotonicNanoseconds()
                if rep >= 0 { perRead[index].append(Double(t1 - t0) / Double(reads)) }
            }
        }
        // Keeps the reads from being optimised away.
        if sink == 42 { progress("clock reads: \(sink)") }
        return readers.indices.map { i in
            ClockReadFigure(
                name: readers[i].name, ns: median(perRead[i]), fastest: perRead[i].min() ?? .nan,
                slowest: perRead[i].max() ?? .nan, reads: reads)
        }
    }
}
