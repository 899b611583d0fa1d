import Testing
import TimerKit

// Property test: random sequences of operations on a manual TimerLoop and its
// LoopTimers, applied both to the facade and to the reference model in
// TimerLoopReferenceModel.swift. After each operation the two must agree on
// every action call (timer, loop time, missed, and what the timer reported
// inside its action), every operation's outcome, each timer's isValid,
// fireDate and isWaitingForMode, and the loop's pending, fired and wakeup
// counts.
//
//   TK_SEED=<n>          repeat a run (the seed is printed on failure)
//   TK_FACADE_OPS=<n>    operations per run (default 100,000)

/// The facade side: the real loop, its timers, and the same action scripts.
private final class RealSide: @unchecked Sendable {
    let loop: TimerLoop
    private(set) var timers: [AnyLoopTimer] = []
    private(set) var log: [Event] = []
    var snapshot: [Int] = []
    private var generators: [SeededGenerator] = []
    private var actionDepth = 0
    private let seed: UInt64

    init(loop: TimerLoop, seed: UInt64) {
        self.loop = loop
        self.seed = seed
    }

    func clearLog() { log.removeAll(keepingCapacity: true) }

    func apply(_ op: ModelOp) {
        let outcome: Outcome
        do throws(TimerError) {
            outcome = try perform(op)
        } catch {
            outcome = .failed(error)
        }
        log.append(.outcome(op, outcome))
    }

    private func perform(_ op: ModelOp) throws(TimerError) -> Outcome {
        switch op {
        case .schedule(let spec):
            let n = timers.count
            // TimerLoop.schedule takes one mode (or the common modes).
            if spec.viaLoopSchedule && !spec.absolute && spec.modes.count == 1 {
                switch spec.clock {
                case .monotonic: register(try schedule(spec, MonotonicClock(), n))
                case .boot: register(try schedule(spec, BootClock(), n))
                case .wall: register(try schedule(spec, WallClock(), n))
                }
            } else {
                let timer = try make(spec)
                try add(timer, spec.modes)
            }
            return .created(n)
        case .create(let spec):
            _ = try make(spec)
            return .created(timers.count - 1)
        case .add(let n, let modes):
            try add(timers[n], modes)
        case .invalidate(let n):
            timers[n].invalidate()
        case .setFireDate(let n, let offset):
            switch timers[n] {
            case let timer as LoopTimer<MonotonicClock>: try setFireDate(timer, offset)
            case let timer as LoopTimer<BootClock>: try setFireDate(timer, offset)
            case let timer as LoopTimer<WallClock>: try setFireDate(timer, offset)
            default: preconditionFailure("a timer of another clock")
            }
        case .setTolerance(let n, let tolerance):
            try timers[n].setTolerance(.nanoseconds(tolerance))
        case .setInterval(let n, let interval):
            try timers[n].setInterval(.nanoseconds(interval))
        case .fire(let n):
            timers[n].fire()
        case .advance(let delta, let mode):
            return .advanced(try loop.advance(by: .nanoseconds(delta), mode: mode.mode))
        case .addCommonMode(let mode):
            try loop.addCommonMode(mode.mode)
        }
        return .done
    }

    private func schedule<Clock: KernelClock>(_ spec: TimerSpec, _ clock: Clock, _ n: Int)
        throws(TimerError) -> LoopTimer<Clock>
    {
        try loop.schedule(
            after: .nanoseconds(spec.delay),
            repeating: spec.repeats ? .nanoseconds(spec.interval) : nil,
            tolerance: .nanoseconds(spec.tolerance), clock: clock,
            in: spec.modes[0].mode, action(for: n))
    }

    private func setFireDate<Clock: KernelClock>(_ timer: LoopTimer<Clock>, _ offset: Int64)
        throws(TimerError)
    {
        let now = loop.now(Clock()).offset.nanosecondCount
        try timer.setFireDate(Clock.Instant(offset: .nanoseconds(saturating(now, offset))))
    }

    private func add(_ timer: AnyLoopTimer, _ modes: [ModeChoice]) throws(TimerError) {
        // add(_:forMode: .common) has a test of its own (LoopModeTests).
        if modes.count == 1 && modes[0] != .common {
            try loop.add(timer, forMode: modes[0].mode)
        } else {
            try loop.add(timer, in: modes.map(\.mode))
        }
    }

    private func make(_ spec: TimerSpec) throws(TimerError) -> AnyLoopTimer {
        let timer: AnyLoopTimer
        switch spec.clock {
        case .monotonic: timer = try make(spec, MonotonicClock())
        case .boot: timer = try make(spec, BootClock())
        case .wall: timer = try make(spec, WallClock())
        }
        register(timer)
        return timer
    }

    private func make<Clock: KernelClock>(_ spec: TimerSpec, _ clock: Clock)
        throws(TimerError) -> LoopTimer<Clock>
    {
        let interval: Duration? = spec.repeats ? .nanoseconds(spec.interval) : nil
        let action: LoopTimer<Clock>.Action = action(for: timers.count)
        if spec.absolute {
            let date = saturating(loop.now(clock).offset.nanosecondCount, spec.delay)
            return try LoopTimer(
                fireAt: Clock.Instant(offset: .nanoseconds(date)), repeating: interval,
                tolerance: .nanoseconds(spec.tolerance), action)
        }
        return try LoopTimer(
            after: .nanoseconds(spec.delay), repeating: interval,
            tolerance: .nanoseconds(spec.tolerance), clock: clock, action)
    }

    private func register(_ timer: AnyLoopTimer) {
        timers.append(timer)
        generators.append(SeededGenerator(seed: actionSeed(seed, timers.count - 1)))
    }

    private func action<Clock: TimerClock>(for n: Int) -> LoopTimer<Clock>.Action {
        { [unowned self] timer, missed in
            self.fired(n, timer, missed, fireDate: timer.fireDate?.offset.nanosecondCount)
        }
    }

    private func fired(_ n: Int, _ timer: AnyLoopTimer, _ missed: UInt64, fireDate: Int64?) {
        log.append(.fired(
            timer: timer === timers[n] ? n : -1, now: loop.time.nanosecondCount,
            missed: missed, valid: timer.isValid, fireDate: fireDate,
            pending: loop.statistics.pending))
        actionDepth += 1
        defer { actionDepth -= 1 }
        guard actionDepth == 1 else { return }
        let ops = generators[n].actionScript(me: n, snapshot: snapshot)
        for op in ops { apply(op) }
    }

    func invalidateAll() {
        for timer in timers { timer.invalidate() }
    }
}

/// A top-level operation chosen with `rng`: `valid` are the valid timers,
/// `known` also some invalid ones, `cap` the crowd to stay below.
private func nextOperation(
    _ rng: inout SeededGenerator, valid: [Int], known: [Int], cap: Int
) -> ModelOp {
    func pick() -> Int? {
        let pool = rng.chance(85) && !valid.isEmpty ? valid : known
        return pool.isEmpty ? nil : pool[rng.below(pool.count)]
    }
    // Keep a crowd: schedule more while there are few timers.
    if valid.count < cap / 2 && rng.chance(30) { return .schedule(rng.timerSpec()) }
    let roll = rng.below(1000)
    if roll < 200 && valid.count >= cap, let n = pick() { return .invalidate(n) }
    switch roll {
    case 0..<180: return .schedule(rng.timerSpec())
    case 180..<200: return .create(rng.timerSpec())
    case 200..<260: if let n = pick() { return .add(n, rng.modeList()) }
    case 260..<330: if let n = pick() { return .invalidate(n) }
    case 360..<440: if let n = pick() { return .setFireDate(n, rng.fireDateOffset()) }
    case 440..<490:
        if let n = pick() {
            return .setTolerance(n, rng.chance(5) ? -1 - rng.time(upTo: 3) : rng.tolerance())
        }
    case 490..<540:
        if let n = pick() {
            return .setInterval(n, rng.chance(5) ? -rng.time(upTo: 3) : rng.interval())
        }
    case 540..<600: if let n = pick() { return .fire(n) }
    case 600..<604:
        return .addCommonMode(
            rng.chance(20) ? .common : [.tracking, .custom1, .custom2][rng.below(3)])
    case 604..<607: return .advance(-1 - rng.time(upTo: 3), rng.runMode())
    default: break
    }
    let delta: Int64
    switch rng.below(100) {
    case 0..<10: delta = 0
    case 10..<50: delta = rng.time(upTo: 5)
    case 50..<92: delta = rng.time(upTo: 30)
    default: delta = rng.time(upTo: 150)
    }
    return .advance(delta, rng.runMode())
}

/// A timer's fire date on its own clock, in nanoseconds.
private func fireDateNanoseconds(_ timer: AnyLoopTimer) -> Int64? {
    switch timer {
    case let timer as LoopTimer<MonotonicClock>: timer.fireDate?.offset.nanosecondCount
    case let timer as LoopTimer<BootClock>: timer.fireDate?.offset.nanosecondCount
    case let timer as LoopTimer<WallClock>: timer.fireDate?.offset.nanosecondCount
    default: preconditionFailure("a timer of another clock")
    }
}

@Suite("TimerLoop against a reference model")
struct TimerLoopModelTests {
    @Test("random operations on a manual loop match the reference model")
    func facadeMatchesModel() throws {
        let seed = testSeed()
        let operations = Int(environmentInteger("TK_FACADE_OPS") ?? 100_000)
        var rng = SeededGenerator(seed: seed)
        let loop = try TimerLoop.manual()
        let real = RealSide(loop: loop, seed: seed)
        let model = ModelLoop(seed: seed)
        defer { real.invalidateAll() }

        // The timers operations pick from: every valid one, plus a few
        // recently invalidated ones (to invalidate twice, or be refused).
        var known: [Int] = []
        var recentlyDead: [Int] = []
        var history: [(ModelOp, [Event])] = []
        let reproduce = "reproduce with TK_SEED=\(seed)"

        for step in 0..<operations {
            let valid = known.filter { model.isValid($0) }
            let op = nextOperation(
                &rng, valid: valid, known: known + recentlyDead, cap: 48)
            let timersBefore = model.timers.count
            real.snapshot = known
            model.snapshot = known
            real.clearLog()
            model.clearLog()
            real.apply(op)
            model.apply(op)

            history.append((op, model.log))
            if history.count > 12 { history.removeFirst() }
            func fail(_ what: String) {
                var report = "operation \(step) of seed \(seed): \(what)\nrecent operations:\n"
                for (op, events) in history {
                    report += "  \(op)\n"
                    for event in events { report += "      \(event)\n" }
                }
                print(report)
                Issue.record(Comment(rawValue: "\(what) (\(reproduce); log printed above)"))
            }

            if real.log != model.log {
                let index = zip(real.log, model.log).enumerated().first { $0.element.0 != $0.element.1 }?.offset
                    ?? min(real.log.count, model.log.count)
                fail("""
                    event \(index) differs
                      facade: \(index < real.log.count ? "\(real.log[index])" : "nothing")
                      model:  \(index < model.log.count ? "\(model.log[index])" : "nothing")
                    """)
                return
            }
            guard real.timers.count == model.timers.count else {
                fail("facade has \(real.timers.count) timers, model \(model.timers.count)")
                return
            }
            let created = Array(timersBefore..<model.timers.count)
            for n in known + recentlyDead + created {
                let timer = real.timers[n]
                let fireDate = fireDateNanoseconds(timer)
                if timer.isValid != model.isValid(n) || fireDate != model.fireDate(n)
                    || timer.isWaitingForMode != model.isWaitingForMode(n)
                {
                    fail("""
                        timer \(n): facade isValid \(timer.isValid) fireDate \(String(describing: fireDate)) \
                        waiting \(timer.isWaitingForMode); model isValid \(model.isValid(n)) \
                        fireDate \(String(describing: model.fireDate(n))) \
                        waiting \(model.isWaitingForMode(n))
                        """)
                    return
                }
            }
            let stats = loop.statistics
            if stats.pending != model.pending || stats.fired != model.fired
                || stats.wakeups != model.wakeups || loop.time.nanosecondCount != model.now
            {
                fail("""
                    facade pending \(stats.pending) fired \(stats.fired) wakeups \(stats.wakeups) \
                    now \(loop.time); model pending \(model.pending) fired \(model.fired) \
                    wakeups \(model.wakeups) now \(model.now)
                    """)
                return
            }

            // Keep every valid timer; keep the newly dead for a while.
            var stillValid: [Int] = []
            for n in known + created {
                if model.isValid(n) {
                    stillValid.append(n)
                } else if !recentlyDead.contains(n) {
                    recentlyDead.append(n)
                }
            }
            known = stillValid
            if recentlyDead.count > 8 { recentlyDead.removeFirst(recentlyDead.count - 8) }
        }
        #expect(model.fired > UInt64(operations) / 10, "the run fired too few timers to mean much")
    }
}
