import Dispatch
import Synchronization
import TimerBench
import TimerKit

#if canImport(Glibc)
import Glibc
#endif

/// TimerKit's FrameTicker on a loop thread of its own.
public struct FrameTickerPeer: FramePeer {
    public let name = "TimerKit FrameTicker"

    public init() {}

    public func run(rate: Double, seconds: Double) throws -> FrameRecording {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let log = CallbackLog(capacity: Int(rate * seconds * 2) + 16)
        let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: rate)) { _, _ in
            log.append(monotonicNanoseconds())
        }
        // The ticker's grid starts where it was made: one period before its first frame.
        let period = ticker.frameDuration?.nanoseconds ?? framePeriod(rate)
        let origin = (ticker.nextTimestamp?.offset.nanoseconds ?? monotonicNanoseconds()) - period
        sleepFor(seconds: seconds)
        ticker.invalidate()
        return FrameRecording(origin: origin, period: period, callbacks: log.values)
    }
}

/// A task that sleeps until each grid point: `Task.sleep(until:clock:)` on
/// the suspending clock (CLOCK_MONOTONIC), deadline += period, skipping
/// grid points that passed while it was late.
public struct TaskSleepPeer: FramePeer {
    public let name = "Task.sleep(until:) loop"

    public init() {}

    public func run(rate: Double, seconds: Double) throws -> FrameRecording {
        let period = framePeriod(rate)
        let log = CallbackLog(capacity: Int(rate * seconds * 2) + 16)
        let clock = SuspendingClock()
        let start = clock.now
        let origin = monotonicNanoseconds()  // read right after `start`: the same clock
        let end = start + .nanoseconds(Int64(seconds * 1e9))
        let done = DispatchSemaphore(value: 0)
        Task.detached {
            var next = start + .nanoseconds(period)
            while next < end {
                try? await Task.sleep(until: next, clock: clock)
                log.append(monotonicNanoseconds())
                next += .nanoseconds(period)
                let now = clock.now
                while next <= now { next += .nanoseconds(period) }
            }
            done.signal()
        }
        done.wait()
        return FrameRecording(origin: origin, period: period, callbacks: log.values)
    }
}

/// A repeating DispatchSourceTimer with no leeway on a serial queue.
public struct DispatchPeer: FramePeer {
    public let name = "DispatchSourceTimer"

    public init() {}

    public func run(rate: Double, seconds: Double) throws -> FrameRecording {
        let period = framePeriod(rate)
        let log = CallbackLog(capacity: Int(rate * seconds * 2) + 16)
        let queue = DispatchQueue(label: "frame-peers.dispatch", qos: .userInteractive)
        let timer = DispatchSource.makeTimerSource(queue: queue)
        timer.setEventHandler { log.append(monotonicNanoseconds()) }
        // DispatchTime reads CLOCK_MONOTONIC on Linux: its origin is ours.
        let start = DispatchTime.now()
        timer.schedule(
            deadline: start + .nanoseconds(Int(period)), repeating: .nanoseconds(Int(period)),
            leeway: .nanoseconds(0))
        timer.activate()
        sleepFor(seconds: seconds)
        timer.cancel()
        queue.sync {}
        return FrameRecording(origin: Int64(start.uptimeNanoseconds), period: period, callbacks: log.values)
    }
}

/// Blocks the calling thread for `seconds`, resuming after EINTR.
public func sleepFor(seconds: Double) {
    var request = timespec(tv_sec: Int(seconds), tv_nsec: Int((seconds - seconds.rounded(.down)) * 1e9))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 && errno == EINTR { request = remaining }
}
