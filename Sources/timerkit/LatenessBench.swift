import CTimerCore
import Dispatch
import Foundation
import TimerKit

// Part 2: wake-up lateness (fire time - intended time) of a repeating timer,
// for the C loop, the Swift TimerLoop, Foundation's RunLoop, Dispatch,
// Task.sleep(until:) and TimerKit's MonotonicClock.sleep(until:). Sides run
// in rounds, in an order that rotates every round, so that machine noise
// hits all of them.

/// The deadline grid of a repeating timer and the fires seen on it.
///
/// A fire is measured against the deadline it was waiting for (the earliest
/// grid point not yet fired). Grid points that passed before a late fire are
/// skipped, as every repeating timer here does: where the timer says how many
/// grid points a fire stands for (TimerKit's `missed`, Dispatch's source
/// data) that count is used; otherwise (CFRunLoop, the sleeping loops) the
/// next deadline is the first grid point after the fire.
final class Round: @unchecked Sendable {
    let first: Int64
    let period: Int64
    let target: Int
    let discard: Int
    private var k: Int64 = 0
    private(set) var fires = 0
    private(set) var firstFireAt: Int64 = 0
    var samples: [Int64] = []
    var skipped: Int64 = 0
    var early = 0

    init(first: Int64, period: Int64, target: Int, discard: Int) {
        self.first = first
        self.period = period
        self.target = target
        self.discard = discard
        samples.reserveCapacity(target)
    }

    var done: Bool { fires >= target }

    /// Records a fire read at `now` on the grid's clock, standing for
    /// `consumed` grid points if the timer says so; true once the round has
    /// all its fires.
    @inline(__always)
    func fire(at now: Int64, consumed: Int64? = nil) -> Bool {
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

/// What one side measured over all its rounds.
struct LatenessSide {
    var name: String
    var samples: [Int64] = []
    var skipped: Int64 = 0
    var early = 0
    var rounds = 0
    var failed: String?
    var summary = Summary()

    mutating func add(_ round: Round) {
        samples += round.samples
        skipped += round.skipped
        early += round.early
        rounds += 1
    }
}

struct LatenessConfig {
    var periods: [Int64]
    /// Rounds for each period.
    var rounds: [Int]
    var firesPerRound: Int
    /// The first fires of each round left out on every side.
    var discard = 1
}

struct LatenessResult {
    var period: Int64
    var sides: [LatenessSide]
    /// Foundation: first fire after creation, per round (Timer(timeInterval:repeats:block:)).
    var foundationFirstFire: [Int64] = []
    /// Foundation: fireDate - creation time as the timer reports it, per round.
    var foundationFireDateOffset: [Int64] = []
}

enum LatenessBench {
    static let sideNames = [
        "C loop (tk_loop_run)", "TimerKit TimerLoop+LoopTimer", "Foundation Timer+RunLoop",
        "DispatchSourceTimer", "Task.sleep(until:) loop", "MonotonicClock.sleep(until:) loop",
    ]

    static func run(_ config: LatenessConfig, failures: inout [String]) -> [LatenessResult] {
        var results: [LatenessResult] = []
        // One C loop and one Swift loop for the whole part, as a program would have.
        var cLoop: OpaquePointer?
        let created = tk_loop_create(&cLoop)
        let swiftLoop: TimerLoop?
        do { swiftLoop = try TimerLoop() } catch {
            swiftLoop = nil
            failures.append("lateness: TimerLoop(): \(error)")
        }
        if created != 0 { failures.append("lateness: tk_loop_create returned \(created)") }
        defer { if let cLoop { _ = tk_loop_destroy(cLoop) } }

        for (index, period) in config.periods.enumerated() {
            var result = LatenessResult(period: period, sides: sideNames.map { LatenessSide(name: $0) })
            if created != 0 { result.sides[0].failed = "tk_loop_create returned \(created)" }
            if swiftLoop == nil { result.sides[1].failed = "TimerLoop() failed" }
            let rounds = config.rounds[index]
            progress("lateness: \(micros(period)) us period, \(rounds) rounds x \(config.firesPerRound) fires per side")
            // Round -1 warms every side up (threads, caches, lazily started
            // services) and lets the previous part's background work finish;
            // its fires are not kept.
            for round in -1..<rounds {
                if round > 0 && round % 10 == 0 {
                    progress("lateness: \(micros(period)) us period, round \(round) of \(rounds)")
                }
                for i in 0..<sideNames.count {
                    let s = (i + max(round, 0)) % sideNames.count
                    guard result.sides[s].failed == nil else { continue }
                    do {
                        let r: Round
                        switch s {
                        case 0: r = try cRound(cLoop!, period, config)
                        case 1: r = try swiftRound(swiftLoop!, period, config)
                        case 2:
                            let (foundation, firstFire, offset) = try foundationRound(period, config)
                            r = foundation
                            if round >= 0 {
                                result.foundationFirstFire.append(firstFire)
                                result.foundationFireDateOffset.append(offset)
                            }
                        case 3: r = try dispatchRound(period, config)
                        case 4: r = try taskSleepRound(period, config)
                        default: r = try monotonicSleepRound(period, config)
                        }
                        if round >= 0 { result.sides[s].add(r) }
                    } catch {
                        result.sides[s].failed = "\(error)"
                        failures.append("lateness \(sideNames[s]) at \(micros(period)) us: \(error)")
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

    /// A generous limit, so that a side that never fires cannot hang the run.
    private static func limit(_ first: Int64, _ period: Int64, _ config: LatenessConfig) -> Int64 {
        first + Int64(config.firesPerRound) * period * 20 + 5_000_000_000
    }

    private static func newRound(_ first: Int64, _ period: Int64, _ config: LatenessConfig) -> Round {
        Round(first: first, period: period, target: config.firesPerRound, discard: config.discard)
    }

    /// The C loop: a repeating C timer with an absolute first deadline, its
    /// callback a C function pointer.
    static func cRound(_ loop: OpaquePointer, _ period: Int64, _ config: LatenessConfig) throws -> Round {
        let first = monotonicNanoseconds() + 2 * period
        let round = newRound(first, period, config)
        var spec = tk_timer_spec(
            clock: TK_CLOCK_MONOTONIC, deadline_ns: first, interval_ns: period, leeway_ns: 0,
            modes: 1, flags: UInt32(TK_TIMER_ABSOLUTE))
        var id: tk_timer_id = 0
        let context = Unmanaged.passRetained(round)
        defer { context.release() }
        let scheduled = tk_loop_schedule(
            loop, &spec,
            { loop, _, missed, context in
                let now = monotonicNanoseconds()
                let round = Unmanaged<Round>.fromOpaque(context!).takeUnretainedValue()
                if round.fire(at: now, consumed: 1 + Int64(missed)) {
                    _ = tk_loop_stop(loop)
                }
            }, context.toOpaque(), &id)
        guard scheduled == 0 else { throw SideFailure("tk_loop_schedule returned \(scheduled)") }
        let result = tk_loop_run(loop, 0, limit(first, period, config), 0)
        _ = tk_loop_cancel(loop, id)
        guard result >= 0 else { throw SideFailure("tk_loop_run returned \(result)") }
        guard round.done else {
            throw SideFailure("the timer fired \(round.fires) of \(round.target) times before the time limit")
        }
        return round
    }

    /// The Swift facade: a repeating LoopTimer on a TimerLoop run on this thread.
    static func swiftRound(_ loop: TimerLoop, _ period: Int64, _ config: LatenessConfig) throws -> Round {
        let first = monotonicNanoseconds() + 2 * period
        let round = newRound(first, period, config)
        let timer = try LoopTimer(fireAt: .nanoseconds(first), repeating: .nanoseconds(period)) { _, missed in
            let now = monotonicNanoseconds()
            if round.fire(at: now, consumed: 1 + Int64(missed)) { loop.stop() }
        }
        try loop.add(timer)
        defer { timer.invalidate() }
        _ = try loop.run(until: MonotonicClock.Instant(offset: .nanoseconds(limit(first, period, config))))
        guard round.done else {
            throw SideFailure("the timer fired \(round.fires) of \(round.target) times before the time limit")
        }
        return round
    }

    /// Foundation: Timer(timeInterval:repeats:block:) added to this thread's
    /// RunLoop. The grid is the timer's own fireDate (on Linux: the creation
    /// time, where it first fires), taken to the monotonic clock.
    static func foundationRound(_ period: Int64, _ config: LatenessConfig) throws -> (Round, Int64, Int64) {
        let before = monotonicNanoseconds()
        let date = Date()
        let after = monotonicNanoseconds()
        let created = before + (after - before) / 2
        let holder = RoundHolder()
        let timer = Timer(timeInterval: Double(period) / 1e9, repeats: true) { timer in
            let now = monotonicNanoseconds()
            if holder.round!.fire(at: now) {
                timer.invalidate()
                // Ends the run: a block on the main queue counts as a handled source.
                DispatchQueue.main.async {}
            }
        }
        let fireDateOffset = Int64((timer.fireDate.timeIntervalSince(date) * 1e9).rounded())
        let round = newRound(created + fireDateOffset, period, config)
        holder.round = round
        RunLoop.current.add(timer, forMode: .default)
        let deadline = limit(round.first, period, config)
        while !round.done && monotonicNanoseconds() < deadline {
            let left = Double(deadline - monotonicNanoseconds()) / 1e9
            _ = RunLoop.current.run(mode: .default, before: Date(timeIntervalSinceNow: max(left, 0)))
        }
        timer.invalidate()
        guard round.done else {
            throw SideFailure("the timer fired \(round.fires) of \(round.target) times before the time limit")
        }
        return (round, round.firstFireAt - created, fireDateOffset)
    }

    /// Dispatch: a repeating DispatchSourceTimer (leeway 0) on a serial queue.
    static func dispatchRound(_ period: Int64, _ config: LatenessConfig) throws -> Round {
        let queue = DispatchQueue(label: "timerkit.bench.lateness")
        let source = DispatchSource.makeTimerSource(queue: queue)
        let done = DispatchSemaphore(value: 0)
        // DispatchTime counts on its own clock; take the grid over to it.
        let before = monotonicNanoseconds()
        let uptime = DispatchTime.now().uptimeNanoseconds
        let after = monotonicNanoseconds()
        let offset = before + (after - before) / 2 - Int64(uptime)
        let first = after + 2 * period
        let round = newRound(first, period, config)
        source.setEventHandler {
            let now = monotonicNanoseconds()
            // The number of times the timer fired since the handler last ran.
            if round.fire(at: now, consumed: Int64(source.data)) {
                source.cancel()
                done.signal()
            }
        }
        source.schedule(
            deadline: DispatchTime(uptimeNanoseconds: UInt64(first - offset)),
            repeating: .nanoseconds(Int(period)), leeway: .nanoseconds(0))
        source.resume()
        let waitNs = limit(first, period, config) - monotonicNanoseconds()
        if done.wait(timeout: .now() + .nanoseconds(Int(waitNs))) == .timedOut {
            source.cancel()
            queue.sync {}
            throw SideFailure("the source fired \(round.fires) of \(round.target) times before the time limit")
        }
        queue.sync {}
        return round
    }

    /// Task.sleep(until:) on the continuous clock, in a loop over the grid;
    /// each wake-up is measured against the instant it slept until.
    static func taskSleepRound(_ period: Int64, _ config: LatenessConfig) throws -> Round {
        let round = newRound(0, period, config)
        let box = ErrorBox()
        let done = DispatchSemaphore(value: 0)
        let task = Task.detached {
            defer { done.signal() }
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
                box.error = error
            }
        }
        try wait(done, task, period, config)
        if let error = box.error { throw error }
        return round
    }

    /// TimerKit's MonotonicClock.sleep(until:) in a loop over the grid.
    static func monotonicSleepRound(_ period: Int64, _ config: LatenessConfig) throws -> Round {
        let first = monotonicNanoseconds() + 2 * period
        let round = newRound(first, period, config)
        let box = ErrorBox()
        let done = DispatchSemaphore(value: 0)
        let task = Task.detached {
            defer { done.signal() }
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
                box.error = error
            }
        }
        try wait(done, task, period, config)
        if let error = box.error { throw error }
        return round
    }

    private static func wait(
        _ done: DispatchSemaphore, _ task: Task<Void, Never>, _ period: Int64, _ config: LatenessConfig
    ) throws {
        let waitNs = limit(monotonicNanoseconds(), period, config) - monotonicNanoseconds()
        if done.wait(timeout: .now() + .nanoseconds(Int(waitNs))) == .timedOut {
            task.cancel()
            done.wait()
            throw SideFailure("the sleeping loop did not finish before the time limit")
        }
    }
}

/// Lets a Foundation timer's block reach the round made after the timer.
final class RoundHolder: @unchecked Sendable {
    var round: Round?
}

/// An error thrown inside a task, read after the task signalled.
final class ErrorBox: @unchecked Sendable {
    var error: (any Error)?
}
