import Synchronization
import TimerBench
import TimerKit

/// Allocations per frame of a FrameTicker delivering frames to a
/// FrameRateMonitor, counted by the program's malloc interposer: the ticker
/// on a manual loop (so nothing else runs), and the monitor alone.
public struct FrameAllocations: Sendable {
    public var frames: Int
    /// malloc-family calls per frame while a manual loop delivers frames to
    /// an action that records them in a monitor.
    public var tickerPerFrame: Double
    /// malloc-family calls per recorded frame time, the monitor alone.
    public var monitorPerFrame: Double

    public static func measure(_ counter: MallocCounter, frames: Int = 100_000) throws -> FrameAllocations {
        // The counter must see allocations that happen, or a 0 below means nothing.
        counter.start()
        var kept = 0
        for index in 0..<1000 { kept &+= Array(repeating: index, count: 64 + index % 7).count }
        let control = counter.stop()
        guard control.mallocs >= 1000, kept > 0 else {
            throw SideFailure("the malloc counter saw \(control.mallocs) of 1,000 allocations")
        }
        // The monitor alone: frame times 16.67 ms apart, with a hitch every 97th.
        var monitor = try FrameRateMonitor(framesPerSecond: 60)
        var time = MonotonicClock.Instant(offset: .seconds(1))
        for _ in 0..<10 {
            time = time + .nanoseconds(16_666_667)
            monitor.record(time)
        }
        counter.start()
        for index in 0..<frames {
            time = time + .nanoseconds(index % 97 == 0 ? 50_000_000 : 16_666_667)
            monitor.record(time)
        }
        let alone = counter.stop()

        // A ticker on a manual loop, its action recording into a monitor.
        let loop = try TimerLoop.manual(startingAt: .seconds(1))
        let shared = SharedMonitor(try FrameRateMonitor(framesPerSecond: 60))
        let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 60)) { _, frame in
            shared.monitor.withLock { _ = $0.record(frame) }
        }
        try loop.advance(by: .seconds(1))  // warm up
        let before = ticker.frameCount
        counter.start()
        try loop.advance(by: .nanoseconds(Int64(frames) * 16_666_667))
        let ticking = counter.stop()
        let delivered = Int(ticker.frameCount - before)
        ticker.invalidate()
        return FrameAllocations(
            frames: delivered,
            tickerPerFrame: Double(ticking.mallocs) / Double(max(1, delivered)),
            monitorPerFrame: Double(alone.mallocs) / Double(frames))
    }
}

private final class SharedMonitor: Sendable {
    let monitor: Mutex<FrameRateMonitor>
    init(_ monitor: FrameRateMonitor) { self.monitor = Mutex(monitor) }
}
