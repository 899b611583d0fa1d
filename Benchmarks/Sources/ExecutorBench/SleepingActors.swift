import TimerBench
import TimerKit

#if canImport(Glibc)
import Glibc
#endif

/// What one side measured: each sleep's lateness, and how often the actor
/// was resumed on another thread than the one it slept on.
public struct SleepRecord: Sendable {
    /// Wake-up time minus the intended time, per sleep, in nanoseconds.
    public var lateness: [Int64] = []
    /// Sleeps after which the actor ran on a different thread.
    public var threadChanges = 0
    /// Jobs other threads queued on the actor's executor (TimerKit side:
    /// ``TimerLoop/jobsFromOtherThreads``; each is a wake-up through the
    /// loop's eventfd). Not known for the standard library's executors.
    public var crossThreadJobs: Int?
    /// Voluntary and involuntary context switches of the process meanwhile.
    public var contextSwitches = 0

    public init() {}
}

/// The process's context switches so far (getrusage).
func contextSwitches() -> Int {
    var usage = rusage()
    getrusage(RUSAGE_SELF.rawValue, &usage)
    return usage.ru_nvcsw + usage.ru_nivcsw
}

/// An actor on a TimerLoop, sleeping on TimerKit's monotonic clock: its
/// sleeps' timers are on its own loop, so they resume on the loop's thread.
public actor LoopSleeper {
    let loop: TimerLoop
    public nonisolated var unownedExecutor: UnownedSerialExecutor { loop.asUnownedSerialExecutor() }

    public init(loop: TimerLoop) { self.loop = loop }

    /// Sleeps to `count` grid points `period` apart, starting `period` from now.
    public func run(count: Int, period: Duration) async throws -> SleepRecord {
        var record = SleepRecord()
        record.lateness.reserveCapacity(count)
        let hopsBefore = loop.jobsFromOtherThreads
        let switchesBefore = contextSwitches()
        let clock = MonotonicClock()
        var deadline = clock.now
        for _ in 0..<count {
            deadline = deadline + period
            let before = pthread_self()
            try await clock.sleep(until: deadline)
            let now = clock.now
            record.lateness.append((now - deadline).saturatingNanosecondsForBench)
            if pthread_equal(before, pthread_self()) == 0 { record.threadChanges += 1 }
        }
        record.contextSwitches = contextSwitches() - switchesBefore
        record.crossThreadJobs = loop.jobsFromOtherThreads - hopsBefore
        return record
    }
}

/// A default actor sleeping with `Task.sleep(until:clock:)` on the
/// standard library's suspending clock (the same kernel clock).
public actor TaskSleeper {
    public init() {}

    /// Sleeps to `count` grid points `period` apart, starting `period` from now.
    public func run(count: Int, period: Duration) async throws -> SleepRecord {
        var record = SleepRecord()
        record.lateness.reserveCapacity(count)
        let switchesBefore = contextSwitches()
        let clock = SuspendingClock()
        var deadline = clock.now
        for _ in 0..<count {
            deadline = deadline + period
            let before = pthread_self()
            try await Task.sleep(until: deadline, tolerance: .zero, clock: clock)
            let now = clock.now
            record.lateness.append((now - deadline).saturatingNanosecondsForBench)
            if pthread_equal(before, pthread_self()) == 0 { record.threadChanges += 1 }
        }
        record.contextSwitches = contextSwitches() - switchesBefore
        return record
    }
}

extension Duration {
    /// Whole nanoseconds (the lateness of one sleep fits easily).
    var saturatingNanosecondsForBench: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
