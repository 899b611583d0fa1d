import Dispatch
import Foundation
import TimerBench
import TimerKit

/// Create + cancel with `pending` timers already waiting an hour: one
/// timer made, scheduled, activated and cancelled, `pairs` times, in ns per
/// pair (the median of `rounds` rounds).
enum QueueCost {
    static func queueTimer(pending: Int, pairs: Int, rounds: Int) throws -> Double {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let queue = DispatchQueue(label: "queue-peers.cost")
        let far = MonotonicClock.now + .seconds(3600)
        var waiting: [QueueTimer] = []
        waiting.reserveCapacity(pending)
        for index in 0..<pending {
            let timer = try QueueTimer(queue: queue, loop: loop)
            timer.setEventHandler { _ in }
            try timer.schedule(deadline: far + .nanoseconds(index))
            try timer.activate()
            waiting.append(timer)
        }
        var perPair: [Double] = []
        for _ in 0..<rounds {
            let begin = monotonicNanoseconds()
            for index in 0..<pairs {
                let timer = try QueueTimer(queue: queue, loop: loop)
                timer.setEventHandler { _ in }
                try timer.schedule(deadline: far + .nanoseconds(index * 7))
                try timer.activate()
                timer.cancel()
            }
            perPair.append(Double(monotonicNanoseconds() - begin) / Double(pairs))
        }
        guard loop.statistics.pending == UInt64(pending) else {
            throw SideFailure("QueueTimer: \(loop.statistics.pending) pending, not \(pending)")
        }
        for timer in waiting { timer.cancel() }
        queue.sync {}
        return median(perPair)
    }

    static func dispatch(pending: Int, pairs: Int, rounds: Int) -> Double {
        let queue = DispatchQueue(label: "queue-peers.cost.dispatch")
        let far = DispatchTime.now() + .seconds(3600)
        var waiting: [DispatchSourceTimer] = []
        waiting.reserveCapacity(pending)
        for index in 0..<pending {
            let source = DispatchSource.makeTimerSource(queue: queue)
            source.setEventHandler {}
            source.schedule(deadline: far + .nanoseconds(index))
            source.activate()
            waiting.append(source)
        }
        var perPair: [Double] = []
        for _ in 0..<rounds {
            let begin = monotonicNanoseconds()
            for index in 0..<pairs {
                let source = DispatchSource.makeTimerSource(queue: queue)
                source.setEventHandler {}
                source.schedule(deadline: far + .nanoseconds(index * 7))
                source.activate()
                source.cancel()
            }
            perPair.append(Double(monotonicNanoseconds() - begin) / Double(pairs))
        }
        for source in waiting { source.cancel() }
        queue.sync {}
        return median(perPair)
    }
}
