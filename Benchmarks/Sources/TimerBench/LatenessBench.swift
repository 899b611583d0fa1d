import CBenchSupport
import CTimerCore
import Dispatch
import Foundation
import TimerKit

// Part 2: wake-up lateness (fire time - intended time) of a repeating timer,
// one LatenessPeer per library: a bare timerfd loop in C (the floor), the C
// loop, the Swift TimerLoop, Foundation's RunLoop, Dispatch,
// Task.sleep(until:) and TimerKit's MonotonicClock.sleep(until:) (Benchmarks/
// adds SwiftNIO). Peers run in rounds, in an order that rotates every round,
// so that machine noise hits all of them.

/// The deadline grid of a repeating timer and the fires seen on it.
///
/// A fire is measured against the deadline it was waiting for (the earliest
/// grid point not yet fired). Grid points that passed before a late fire are
/// skipped, as every repeating timer here does: where the timer says how many
/// grid points a fire stands for (TimerKit's `missed`, Dispatch's source
/// data) that count is used; otherwise (CFRunLoop, the sleeping loops) the
/// next deadline is the first grid point after the fire.
public final class Round: @unchecked Sendable {
    public let first: Int64
    public let period: Int64
    public let target: Int
    public let discard: Int
    private var k: Int64 = 0
    public private(set) var fires = 0
    public private(set) var firstFireAt: Int64 = 0
    public var samples: [Int64] = []
    public var skipped: Int64 = 0
    public var early = 0

    public init(first: Int64, period: Int64, target: Int, discard: Int) {
        self.first = first
        self.period = period
        self.target = target
        self.discard = discard
        samples.reserveCapacity(target)
    }

    public var done: Bool { fires >= target }

    /// Records a fire read at `now` on the grid's clock, standing for
    /// `consumed` grid points if the timer says so; true once the round has
    /// all its fires.
    @inline(__always)
    public func fire(at now: Int64, consumed: Int64? = nil) -> Bool {
        if fires >= target { return true }
        if fires == 0 { firstFireAt = now }
        let late = now - (first + k * period)
        if late < 0 { early += 1 }
        if fires >= discard { samples.append(late) }
        if let consumed {
            let points = max(consumed, 1)
            k += points
            skipped += points - 1
        } else {
            k += 1
            if first + k * period <= now {
                let next = (now - first) / period + 1
                skipped += next - k
                k = next
            }
        }
        fires += 1
        return fires >= target
    }
}

/// A repeating timer of one library, measured for wake-up lateness.
///
/// `round(_:)` starts a repeating timer with the spec's period, runs it on
/// the calling thread (or waits for the thread it runs on) until the round
/// has all its fires, stops it and returns the round. It throws when the
/// timer cannot be made or does not fire in time (`spec.limit(from:)`).
public protocol LatenessPeer: AnyObject {
    var name: String { get }
    func round(_ spec: RoundSpec) throws -> Round
}

/// The period and size of one round of fires.
public struct RoundSpec: Sendable {
    public var period: Int64
    public var fires: Int
    /// The first fires of each round left out.
    public var discard: Int

    public init(period: Int64, fires: Int, discard: Int) {
        self.period = period
        self.fires = fires
        self.discard = discard
    }

    /// A round whose grid starts at `first`.
    public func makeRound(first: Int64) -> Round {
        Round(first: first, period: period, target: fires, discard: discard)
    }

    /// A generous time limit for a round started at `first`, so that a timer
    /// that never fires cannot hang the run.
    public func limit(from first: Int64) -> Int64 {
        first + Int64(fires) * period * 20 + 5_000_000_000
    }
}

/// What one side measured over all its rounds.
public struct LatenessSide {
    public var name: String
    public var samples: [Int64] = []
    public var skipped: Int64 = 0
    public var early = 0
    public var rounds = 0
    public var failed: String?
    public var summary = Summary()

    mutating func add(_ round: Round) {
        samples += round.samples
        skipped += round.skipped
        early += round.early
        rounds += 1
    }
}

public struct LatenessConfig {
    public var periods: [Int64]
    /// Rounds for each period.
    public var rounds: [Int]
    /// Fires per round, for each period.
    public var firesPerRound: [Int]
    /// The first fires of each round left out on every side.
    public var discard = 1
}

public struct LatenessResult {
    public var period: Int64
    public var fires: Int
    public var sides: [LatenessSide]
    /// Foundation: first fire after creation, per round (Timer(timeInterval:repeats:block:)).
    public var foundationFirstFire: [Int64] = []
    /// Foundation: fireDate - creation time as the timer reports it, per round.
    public var foundationFireDateOffset: [Int64] = []
}

/// Part 2 of the run: every peer's lateness, round by round.
public enum LatenessBench {
    /// TimerKit's peers without package dependencies, the floor first and
    /// the C loop and TimerKit next (the ratios are taken against them).
    public static func standardPeers() throws -> [any LatenessPeer] {
        [
            BareTimerfdLateness(), try CLoopLateness(), try TimerLoopLateness(),
            FoundationLateness(), DispatchLateness(), TaskSleepLateness(), MonotonicSleepLateness(),
        ]
    }

    static func run(_ config: LatenessConfig, peers: [any LatenessPeer], failures: inout [String])
        -> [LatenessResult]
    {
        var results: [LatenessResult] = []
        for (index, period) in config.periods.enumerated() {
            let spec = RoundSpec(period: period, fires: config.firesPerRound[index], discard: config.discard)
            var result = LatenessResult(
                period: period, fires: spec.fires, sides: peers.map { LatenessSide(name: $0.name) })
            let rounds = config.rounds[index]
            progress("lateness: \(micros(period)) us period, \(rounds) rounds x \(spec.fires) fires per side")
            let foundation = peers.firstIndex { $0 is FoundationLateness }
            // Round -1 warms every side up (threads, caches, lazily started
            // services); its fires are not kept.
            for round in -1..<rounds {
                if round > 0 && round % 10 == 0 {
                    progress("lateness: \(micros(period)) us period, round \(round) of \(rounds)")
                }
                for i in 0..<peers.count {
                    let s = (i + max(round, 0)) % peers.count
                    guard result.sides[s].failed == nil else { continue }
                    do {
                        let r = try peers[s].round(spec)
                        guard round >= 0 else { continue }
                        result.sides[s].add(r)
                        if s == foundation, let peer = peers[s] as? FoundationLateness {
                            result.foundationFirstFire.append(peer.lastFirstFire)
                            result.foundationFireDateOffset.append(peer.lastFireDateOffset)
                        }
                    } catch {
                        result.sides[s].failed = "\(error)"
                        failures.append("lateness \(peers[s].name) at \(micros(period)) us: \(error)")
                    }
                }
            }
            for s in result.sides.indices {
                result.sides[s].summary = Summary(result.sides[s].samples)
            }
            results.append(result)
        }
        return results
    }
}

/// The floor: a bare timerfd and epoll_wait, in C (CBenchSupport).
final class BareTimerfdLateness: LatenessPeer {
    let name = "bare timerfd+epoll_wait (floor)"

    func round(_ spec: RoundSpec) throws -> Round {
        let first = monotonicNanoseconds() + 2 * spec.period
        let round = spec.makeRound(first: first)
        var fireTimes = [Int64](repeating: 0, count: spec.fires)
        var expirations = [UInt64](repeating: 0, count: spec.fires)
        let recorded = tkb_floor_run(
            first, spec.period, Int32(spec.fires), spec.limit(from: first), &fireTimes, &expirations)
        guard recorded >= 0 else { throw SideFailure("tkb_floor_run returned \(recorded)") }
        for i in 0..<Int(recorded) {
            _ = round.fire(at: fireTimes[i], consumed: Int64(clamping: expirations[i]))
        }
        guard round.done else {
            throw SideFailure("the timerfd fired \(round.fires) of \(round.target) times before the time limit")
        }
        return round
    }
}

/// The C loop: a repeating C timer with an absolute first deadline, its
/// callback a C function pointer; one loop for the whole run.
final class CLoopLateness: LatenessPeer {
    let name = "C loop (tk_loop_run)"
    private let loop: OpaquePointer

    init() throws {
        var loop: OpaquePointer?
        let created = tk_loop_create(&loop)
        guard created == 0, let loop else { throw SideFailure("tk_loop_create returned \(created)") }
        self.loop = loop
    }

    deinit { _ = tk_loop_destroy(loop) }

    func round(_ spec: RoundSpec) throws -> Round {
        let first = monotonicNanoseconds() + 2 * spec.period
        let round = spec.makeRound(first: first)
        var timerSpec = tk_timer_spec(
            clock: TK_CLOCK_MONOTONIC, delay_ns: 0, deadline_ns: first, interval_ns: spec.period, leeway_ns: 0,
            modes: 1, flags: UInt32(TK_TIMER_ABSOLUTE))
        var id: tk_timer_id = 0
        let context = Unmanaged.passRetained(round)
        defer { context.release() }
        let scheduled = tk_loop_schedule(
            loop, &timerSpec,
            { loop, _, missed, context in
                let now = monotonicNanoseconds()
                let round = Unmanaged<Round>.fromOpaque(context!).takeUnretainedValue()
                if round.fire(at: now, consumed: 1 + Int64(missed)) {
                    _ = tk_loop_stop(loop)
                }
            }, context.toOpaque(), &id)
        guard scheduled == 0 else { throw SideFailure("tk_loop_schedule returned \(scheduled)") }
        let result = tk_loop_run(loop, 0, spec.limit(from: first), 0)
        _ = tk_loop_cancel(loop, id)
        guard result >= 0 else { throw SideFailure("tk_loop_run returned \(result)") }
        guard round.done else {
            throw SideFailure("the timer fired \(round.fires) of \(round.target) times before the time limit")
        }
        return round
    }
}

/// The Swift facade: a repeating LoopTimer on a TimerLoop run on this
/// thread; one loop for the whole run.
final class TimerLoopLateness: LatenessPeer {
    let name = "TimerKit TimerLoop+LoopTimer"
    private let loop: TimerLoop

    init() throws { loop = try TimerLoop() }

    func round(_ spec: RoundSpec) throws -> Round {
        let first = monotonicNanoseconds() + 2 * spec.period
        let round = spec.makeRound(first: first)
        let loop = self.loop
        let timer = try LoopTimer(fireAt: MonotonicClock.Instant(offset: .nanoseconds(first)), repeating: .nanoseconds(spec.period)) { _, missed in
            let now = monotonicNanoseconds()
            if round.fire(at: now, consumed: 1 + Int64(missed)) { loop.stop() }
        }
        try loop.add(timer)
        defer { timer.invalidate() }
        _ = try loop.run(until: MonotonicClock.Instant(offset: .nanoseconds(spec.limit(from: first))))
        guard round.done else {
            throw SideFailure("the timer fired \(round.fires) of \(round.target) times before the time limit")
        }
        return round
    }
}

/// Foundation: Timer(timeInterval:repeats:block:) added to this thread's
/// RunLoop. The grid is the timer's own fireDate (on Linux: the creation
/// time, where it first fires), taken to the monotonic clock.
final class FoundationLateness: LatenessPeer {
    let name = "Foundation Timer+RunLoop"
    /// The last round's first fire after the timer's creation.
    private(set) var lastFirstFire: Int64 = 0
    /// The last round's fireDate - creation time, as the timer reports it.
    private(set) var lastFireDateOffset: Int64 = 0

    func round(_ spec: RoundSpec) throws -> Round {
        let before = monotonicNanoseconds()
        let date = Date()
        let after = monotonicNanoseconds()
        let created = before + (after - before) / 2
        let holder = RoundHolder()
        let timer = Timer(timeInterval: Double(spec.period) / 1e9, repeats: true) { timer in
            let now = monotonicNanoseconds()
            if holder.round!.fire(at: now) {
                timer.invalidate()
                // Ends the run: a block on the main queue counts as a handled source.
                DispatchQueue.main.async {}
            }
        }
        let fireDateOffset = Int64((timer.fireDate.timeIntervalSince(date) * 1e9).rounded())
        let round = spec.makeRound(first: created + fireDateOffset)
        holder.round = round
        RunLoop.current.add(timer, forMode: .default)
        let deadline = spec.limit(from: round.first)
        while !round.done && monotonicNanoseconds() < deadline {
            let left = Double(deadline - monotonicNanoseconds()) / 1e9
            _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: max(left, 0)))
        }
        timer.invalidate()
        guard round.done else {
            throw SideFailure("the timer fired \(round.fires) of \(round.target) times before the time limit")
        }
        lastFirstFire = round.firstFireAt - created
        lastFireDateOffset = fireDateOffset
        return round
    }
}

/// Dispatch: a repeating DispatchSourceTimer (leeway 0) on a serial queue.
final class DispatchLateness: LatenessPeer {
    let name = "DispatchSourceTimer"

    func round(_ spec: RoundSpec) throws -> Round {
        let queue = DispatchQueue(label: "timerkit.bench.lateness")
        let source = DispatchSource.makeTimerSource(queue: queue)
        let done = DispatchSemaphore(value: 0)
        let offset = DispatchClockOffset.measure()
        let first = monotonicNanoseconds() + 2 * spec.period
        let round = spec.makeRound(first: first)
        source.setEventHandler {
            let now = monotonicNanoseconds()
            // The number of times the timer fired since the handler last ran.
            if round.fire(at: now, consumed: Int64(source.data)) {
                source.cancel()
                done.signal()
            }
        }
        source.schedule(
            deadline: offset.dispatchTime(first),
            repeating: .nanoseconds(Int(spec.period)), leeway: .nanoseconds(0))
        source.resume()
        let waitNs = spec.limit(from: first) - monotonicNanoseconds()
        if done.wait(timeout: .now() + .nanoseconds(Int(waitNs))) == .timedOut {
            source.cancel()
            queue.sync {}
            throw SideFailure("the source fired \(round.fires) of \(round.target) times before the time limit")
        }
        queue.sync {}
        return round
    }
}

/// Task.sleep(until:) on the continuous clock, in a loop over the grid;
/// each wake-up is measured against the instant it slept until.
final class TaskSleepLateness: LatenessPeer {
    let name = "Task.sleep(until:) loop"

    func round(_ spec: RoundSpec) throws -> Round {
        let round = spec.makeRound(first: 0)
        let period = spec.period
        let waiter = TaskWaiter()
        let task = Task.detached {
            defer { waiter.done.signal() }
            let clock = ContinuousClock()
            let start = clock.now + .nanoseconds(2 * period)
            var k: Int64 = 0
            do {
                while !round.done {
                    let deadline = start + .nanoseconds(k * period)
                    try await Task.sleep(until: deadline, clock: clock)
                    let now = clock.now
                    // The grid measured from `start`, so the round's origin is 0.
                    _ = round.fire(at: (now - start).nanoseconds)
                    k = ((now - start).nanoseconds / period) + 1
                }
            } catch {
                waiter.error = error
            }
        }
        try waiter.wait(for: task, spec)
        return round
    }
}

/// TimerKit's MonotonicClock.sleep(until:) in a loop over the grid.
final class MonotonicSleepLateness: LatenessPeer {
    let name = "MonotonicClock.sleep(until:) loop"

    func round(_ spec: RoundSpec) throws -> Round {
        let first = monotonicNanoseconds() + 2 * spec.period
        let round = spec.makeRound(first: first)
        let period = spec.period
        let waiter = TaskWaiter()
        let task = Task.detached {
            defer { waiter.done.signal() }
            let clock = MonotonicClock()
            var k: Int64 = 0
            do {
                while !round.done {
                    let deadline = MonotonicClock.Instant(offset: .nanoseconds(first + k * period))
                    try await clock.sleep(until: deadline, tolerance: nil)
                    let now = monotonicNanoseconds()
                    _ = round.fire(at: now)
                    k = max((now - first) / period + 1, k + 1)
                }
            } catch {
                waiter.error = error
            }
        }
        try waiter.wait(for: task, spec)
        return round
    }
}

/// CLOCK_MONOTONIC minus the clock DispatchTime (and NIODeadline) count on,
/// so that a deadline on the monotonic grid can be handed to them.
public struct DispatchClockOffset: Sendable {
    public var offset: Int64

    /// Reads both clocks back to back.
    public static func measure() -> DispatchClockOffset {
        let before = monotonicNanoseconds()
        let uptime = DispatchTime.now().uptimeNanoseconds
        let after = monotonicNanoseconds()
        return DispatchClockOffset(offset: before + (after - before) / 2 - Int64(uptime))
    }

    /// `monotonic` (CLOCK_MONOTONIC, ns) on DispatchTime's clock.
    public func uptime(_ monotonic: Int64) -> UInt64 { UInt64(max(monotonic - offset, 0)) }

    public func dispatchTime(_ monotonic: Int64) -> DispatchTime {
        DispatchTime(uptimeNanoseconds: uptime(monotonic))
    }
}

/// Waits for a task that measures on another thread, and carries its error.
public final class TaskWaiter: @unchecked Sendable {
    public let done = DispatchSemaphore(value: 0)
    /// Written by the task before it signals `done`.
    public var error: (any Error)?

    public init() {}

    /// Waits for `done` up to the round's limit; cancels the task if it is
    /// late; rethrows its error.
    public func wait(for task: Task<Void, Never>, _ spec: RoundSpec) throws {
        let waitNs = spec.limit(from: monotonicNanoseconds()) - monotonicNanoseconds()
        if done.wait(timeout: .now() + .nanoseconds(Int(waitNs))) == .timedOut {
            task.cancel()
            // Bounded: a task that never runs (a starved executor) must not
            // hang the benchmark; its round is not used.
            _ = done.wait(timeout: .now() + .seconds(10))
            throw SideFailure("the measuring task did not finish before the time limit")
        }
        if let error { throw error }
    }
}

/// Lets a Foundation timer's block reach the round made after the timer.
final class RoundHolder: @unchecked Sendable {
    var round: Round?
}

