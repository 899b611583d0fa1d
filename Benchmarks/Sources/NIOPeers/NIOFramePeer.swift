import FrameBench
import NIOCore
import NIOPosix
import TimerBench

/// NIO's `scheduleRepeatedTask(initialDelay:delay:)` on an event loop of
/// its own: the way NIO offers to run something at a fixed rate. Its next
/// run is scheduled `delay` after the previous one ran, so lateness adds up.
public struct NIOFramePeer: FramePeer {
    public let name = "NIO scheduleRepeatedTask"

    public init() {}

    public func run(rate: Double, seconds: Double) throws -> FrameRecording {
        let period = framePeriod(rate)
        let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
        defer { try? group.syncShutdownGracefully() }
        let loop = group.next()
        let log = CallbackLog(capacity: Int(rate * seconds * 2) + 16)
        // NIODeadline reads CLOCK_MONOTONIC on Linux: its origin is ours.
        let origin = try loop.submit { Int64(NIODeadline.now().uptimeNanoseconds) }.wait()
        let task = try loop.submit {
            loop.scheduleRepeatedTask(initialDelay: .nanoseconds(period), delay: .nanoseconds(period)) { _ in
                log.append(monotonicNanoseconds())
            }
        }.wait()
        sleepFor(seconds: seconds - Double(monotonicNanoseconds() - origin) / 1e9)
        try loop.submit { task.cancel() }.wait()
        return FrameRecording(origin: origin, period: period, callbacks: log.values)
    }
}
