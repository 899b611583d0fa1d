import Dispatch
import Foundation
import TimerBench
import TimerKit

/// Wake-up lateness of one repeating timer: each handler run against the
/// grid point of the last fire it stands for, on CLOCK_MONOTONIC.
/// Written on one serial queue; read once the run is over.
final class LatenessLog: @unchecked Sendable {
    private(set) var lateness: [Int64] = []
    private var fires: Int64 = 0
    private let start: Int64
    private let period: Int64
    private let runs: Int
    private let done = DispatchSemaphore(value: 0)

    init(start: Int64, period: Int64, runs: Int) {
        self.start = start
        self.period = period
        self.runs = runs
        lateness.reserveCapacity(runs)
    }

    /// A handler run standing for `count` fires.
    func record(_ count: UInt64) {
        let now = monotonicNanoseconds()
        guard lateness.count < runs else { return }
        fires += Int64(count)
        lateness.append(now - (start + (fires - 1) * period))
        if lateness.count == runs { done.signal() }
    }

    func wait() { done.wait() }
}

/// Runs a repeating `period` timer on each side until its handler has run
/// `runs` times; the sides run one after the other, QueueTimer first.
enum QueueLateness {
    static func queueTimer(period: Int64, runs: Int) throws -> [Int64] {
        let queue = DispatchQueue(label: "queue-peers.lateness")
        let timer = try QueueTimer(queue: queue)
        let start = monotonicNanoseconds() + 20_000_000
        let log = LatenessLog(start: start, period: period, runs: runs)
        timer.setEventHandler { fires in log.record(fires) }
        try timer.schedule(
            deadline: MonotonicClock.Instant(offset: .nanoseconds(start)),
            repeating: .nanoseconds(period))
        try timer.activate()
        log.wait()
        timer.cancel()
        queue.sync {}
        return log.lateness
    }

    static func dispatch(period: Int64, runs: Int) -> [Int64] {
        let queue = DispatchQueue(label: "queue-peers.lateness.dispatch")
        let offset = DispatchClockOffset.measure()
        let start = monotonicNanoseconds() + 20_000_000
        let log = LatenessLog(start: start, period: period, runs: runs)
        let source = DispatchSource.makeTimerSource(queue: queue)
        source.setEventHandler { log.record(UInt64(source.data)) }
        source.schedule(
            deadline: offset.dispatchTime(start), repeating: .nanoseconds(Int(period)),
            leeway: .nanoseconds(0))
        source.activate()
        log.wait()
        source.cancel()
        queue.sync {}
        return log.lateness
    }
}
