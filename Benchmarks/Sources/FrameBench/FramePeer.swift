import Synchronization

/// A way to get a callback at a steady frame rate: TimerKit's FrameTicker,
/// or what a program writes without it (a Task.sleep loop, a
/// DispatchSourceTimer, NIO's scheduleRepeatedTask).
public protocol FramePeer: Sendable {
    /// The name in the table.
    var name: String { get }
    /// Runs frames at `rate` for `seconds` and returns when each callback
    /// started, on CLOCK_MONOTONIC, with the grid's origin (the instant one
    /// period before the first frame was due).
    func run(rate: Double, seconds: Double) throws -> FrameRecording
}

/// What a peer's callbacks saw: the grid's origin and period, and the
/// CLOCK_MONOTONIC reading at the start of each callback.
public struct FrameRecording: Sendable {
    public var origin: Int64
    public var period: Int64
    public var callbacks: [Int64]

    public init(origin: Int64, period: Int64, callbacks: [Int64]) {
        self.origin = origin
        self.period = period
        self.callbacks = callbacks
    }
}

/// Callback times collected on whatever thread a peer calls back on.
public final class CallbackLog: Sendable {
    private let times: Mutex<[Int64]>

    public init(capacity: Int) {
        var times: [Int64] = []
        times.reserveCapacity(capacity)
        self.times = Mutex(times)
    }

    public func append(_ time: Int64) {
        times.withLock { $0.append(time) }
    }

    public var values: [Int64] {
        times.withLock { $0 }
    }
}

/// The period of `rate` in whole nanoseconds, as every peer uses it.
public func framePeriod(_ rate: Double) -> Int64 {
    Int64((1e9 / rate).rounded())
}
