import CBenchSupport
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

/// The floor: one repeating timerfd on CLOCK_MONOTONIC, armed with an
/// absolute first deadline, and one epoll_wait on it, in C, on the calling
/// thread (CBenchSupport's `tkb_floor_run`). No timer library can do better
/// on this machine; the other rows are read against it.
public struct BareTimerfdPeer: FramePeer {
    public let name = "bare timerfd (C floor)"

    public init() {}

    public func run(rate: Double, seconds: Double) throws -> FrameRecording {
        let period = framePeriod(rate)
        let fires = Int32(max(1, (seconds * rate).rounded(.down)))
        var times = [Int64](repeating: 0, count: Int(fires))
        var expirations = [UInt64](repeating: 0, count: Int(fires))
        let first = monotonicNanoseconds() + period
        let limit = first + Int64(seconds * 1e9) + 1_000_000_000
        let count = tkb_floor_run(first, period, fires, limit, &times, &expirations)
        guard count > 0 else { throw SideFailure("tkb_floor_run returned \(count)") }
        return FrameRecording(origin: first - period, period: period, callbacks: Array(times[0..<Int(count)]))
    }
}
