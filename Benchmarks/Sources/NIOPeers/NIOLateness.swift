import Dispatch
import NIOCore
import NIOPosix
import TimerBench

/// NIO's repeating timer as an application writes one for a fixed rate: a
/// chain of `scheduleTask(deadline:)` calls on the event loop, each task
/// scheduling the next grid point (the first one after the fire, when fires
/// were missed). The grid goes to NIODeadline through DispatchClockOffset:
/// on Linux both NIODeadline and DispatchTime read CLOCK_MONOTONIC, so the
/// offset is about zero; measuring it keeps the peer right on any platform.
final class NIOLateness: LatenessPeer, @unchecked Sendable {
    let name = "NIO scheduleTask chain"
    private let loop: any EventLoop

    init(loop: any EventLoop) { self.loop = loop }

    func round(_ spec: RoundSpec) throws -> Round {
        let offset = DispatchClockOffset.measure()
        let first = monotonicNanoseconds() + 2 * spec.period
        let round = spec.makeRound(first: first)
        let chain = NIOTaskChain(loop: loop, round: round, offset: offset, first: first, period: spec.period)
        loop.execute { chain.arm(0) }
        let waitNs = spec.limit(from: first) - monotonicNanoseconds()
        if chain.done.wait(timeout: .now() + .nanoseconds(Int(waitNs))) == .timedOut {
            try loop.submit { chain.cancel() }.wait()
            throw SideFailure("the task chain fired \(round.fires) of \(round.target) times before the time limit")
        }
        return round
    }
}

/// The chain of one round; touched on the event loop's thread only.
final class NIOTaskChain: @unchecked Sendable {
    let done = DispatchSemaphore(value: 0)
    private let loop: any EventLoop
    private let round: Round
    private let offset: DispatchClockOffset
    private let first: Int64
    private let period: Int64
    private var scheduled: Scheduled<Void>?

    init(loop: any EventLoop, round: Round, offset: DispatchClockOffset, first: Int64, period: Int64) {
        self.loop = loop
        self.round = round
        self.offset = offset
        self.first = first
        self.period = period
    }

    /// Schedules the task for grid point `k`.
    func arm(_ k: Int64) {
        let deadline = NIODeadline.uptimeNanoseconds(offset.uptime(first + k * period))
        scheduled = loop.scheduleTask(deadline: deadline) {
            let now = monotonicNanoseconds()
            if self.round.fire(at: now) {
                self.done.signal()
            } else {
                self.arm(max((now - self.first) / self.period + 1, k + 1))
            }
        }
    }

    func cancel() { scheduled?.cancel() }
}
