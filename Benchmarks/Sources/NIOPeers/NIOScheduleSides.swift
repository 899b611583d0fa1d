import NIOCore
import NIOPosix
import TimerBench

/// A NIO timer API as a schedule side: `make` schedules a timer on the
/// loop, `cancel` cancels it. `pending` is touched on the loop's thread only.
final class NIOScheduleSide<Timer>: ScheduleSide, @unchecked Sendable {
    let name: String
    /// A group of its own, so that `drain` can end it.
    private let group = MultiThreadedEventLoopGroup(numberOfThreads: 1)
    private let loop: any EventLoop
    private let make: (any EventLoop, Int64) throws -> Timer
    private let cancel: (Timer) -> Void
    private var pending: [Timer] = []

    init(
        name: String, make: @escaping (any EventLoop, Int64) throws -> Timer,
        cancel: @escaping (Timer) -> Void
    ) {
        self.name = name
        self.make = make
        self.cancel = cancel
        loop = group.next()
    }

    func fill(_ delays: [Int64]) throws {
        try loop.submit {
            self.pending.reserveCapacity(delays.count)
            for delay in delays { self.pending.append(try self.make(self.loop, delay)) }
        }.wait()
    }

    func pairs(_ delays: UnsafeBufferPointer<Int64>) throws {
        let delays = LoopBuffer(buffer: delays)
        try loop.submit {
            for delay in delays.buffer { self.cancel(try self.make(self.loop, delay)) }
        }.wait()
    }

    func churn(_ delays: UnsafeBufferPointer<Int64>, _ victims: UnsafeBufferPointer<Int>) throws {
        let delays = LoopBuffer(buffer: delays)
        let victims = LoopBuffer(buffer: victims)
        try loop.submit {
            for i in 0..<delays.buffer.count {
                let timer = try self.make(self.loop, delays.buffer[i])
                self.cancel(self.pending[victims.buffer[i]])
                self.pending[victims.buffer[i]] = timer
            }
        }.wait()
    }

    func settle() {}

    /// Cancelling the pending timers one by one would be quadratic (each
    /// cancel searches the heap); shutting the loop down ends them all in
    /// one pass.
    func drain() {
        try? loop.submit { self.pending = [] }.wait()
        try? group.syncShutdownGracefully()
    }
}

/// Does nothing when called: the schedule benchmark never lets a timer fire.
struct IgnoredCallback: NIOScheduledCallbackHandler, Sendable {
    func handleScheduledCallback(eventLoop: some EventLoop) {}
}

extension NIOScheduleSide where Timer == Scheduled<Void> {
    /// `EventLoop.scheduleTask(in:_:)` (a promise and a future a timer),
    /// cancelled with `Scheduled.cancel()`.
    static func scheduleTask() -> NIOScheduleSide {
        NIOScheduleSide(
            name: "NIO scheduleTask", make: { loop, delay in loop.scheduleTask(in: .nanoseconds(delay)) {} },
            cancel: { $0.cancel() })
    }
}

extension NIOScheduleSide where Timer == NIOScheduledCallback {
    /// `EventLoop.scheduleCallback(in:handler:)` (no promise, no future),
    /// cancelled with `NIOScheduledCallback.cancel()`.
    static func scheduleCallback() -> NIOScheduleSide {
        NIOScheduleSide(
            name: "NIO scheduleCallback",
            make: { loop, delay in try loop.scheduleCallback(in: .nanoseconds(delay), handler: IgnoredCallback()) },
            cancel: { $0.cancel() })
    }
}
