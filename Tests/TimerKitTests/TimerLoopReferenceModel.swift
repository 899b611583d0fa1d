import TimerKit

// A reference model of a manual TimerLoop and the LoopTimers on it, written
// from the documented semantics (TimerLoop, LoopTimer and the C contract in
// include/CTimerCore.h), with linear scans instead of heaps so that it can be
// checked by reading. TimerLoopModelTests drives the model and the real facade
// with the same random operations and compares what they do.
//
// The rules it implements:
//   - A timer fires `delay` after it is added (negative counts as 0), or at its
//     absolute fire date; every new deadline (schedule, reschedule, re-arm)
//     gets a fresh sequence number, which breaks ties between equal deadlines.
//   - advance(by: d, mode: m) jumps to each wake-up target, the least
//     (fire date + tolerance) among the unparked timers of m (a repeating
//     timer's tolerance is clamped to interval / 2), and runs a pass there. A
//     pass first unparks the parked timers of m; then each clock offers,
//     among its timers older than the pass, the earliest (by deadline, then
//     sequence) if it is due (a timer new in the pass waits for a later one,
//     without holding up those behind it); the most overdue offer (then the
//     smaller sequence) is taken: it fires if m is one of its modes and is
//     parked otherwise. After 64 steps in a row that move time by nothing
//     (65 passes at one time), a step looks only at targets later than now.
//   - A repeating timer is re-armed on its grid before its action runs:
//     missed = (now - deadline) / interval, next = deadline + (missed + 1) *
//     interval. A one-shot is out of the loop while its action runs; its
//     action may revive it with setFireDate; otherwise it is then invalid.
//   - fire() runs the action now with missed 0: a one-shot is cancelled
//     first (so its action cannot revive it) and is then invalid; a repeating
//     timer keeps its schedule. An unscheduled timer's action simply runs;
//     an unscheduled one-shot is invalid from the start of the call.
//   - setTolerance, setInterval and adding modes keep the fire date but give
//     the timer a new sequence number (and unpark it); they need a timer that
//     is scheduled right now (not a one-shot inside its own action).
//   - advance is refused (busy) while the loop runs a callback: an advance or
//     a fire() of a scheduled timer.
//   - A timer added to .common is in the loop's common modes (default and
//     tracking, and each added by addCommonMode), those added after it too:
//     which modes it is in is read at each use, so an addCommonMode changes
//     nothing else about it (fire date, sequence number, parked).

/// The modes the model test uses.
enum ModeChoice: Int, CaseIterable, Equatable, CustomStringConvertible {
    case standard, tracking, common, custom1, custom2

    /// The modes a loop can run in.
    static let runModes: [ModeChoice] = [.standard, .tracking, .custom1, .custom2]

    var mode: LoopMode {
        switch self {
        case .standard: .default
        case .tracking: .tracking
        case .common: .common
        case .custom1: "model-custom-1"
        case .custom2: "model-custom-2"
        }
    }

    /// The model's bit for a run mode.
    var bit: UInt32 {
        switch self {
        case .standard: 1
        case .tracking: 2
        case .custom1: 4
        case .custom2: 8
        case .common: 0
        }
    }

    var description: String { mode.name }
}

/// What to make a timer with.
struct TimerSpec: Equatable {
    var repeats: Bool
    var interval: Int64
    /// Relative: the delay. Absolute: the fire date minus the loop's time.
    var delay: Int64
    var absolute: Bool
    var tolerance: Int64
    var clock: ClockID
    var modes: [ModeChoice]
    /// Use TimerLoop.schedule rather than LoopTimer.init + TimerLoop.add.
    var viaLoopSchedule: Bool
}

/// One operation on the loop or a timer (timers named by creation number).
enum ModelOp: Equatable {
    case schedule(TimerSpec)
    case create(TimerSpec)
    case add(Int, [ModeChoice])
    case invalidate(Int)
    /// To the loop's time plus the given offset.
    case setFireDate(Int, Int64)
    case setTolerance(Int, Int64)
    case setInterval(Int, Int64)
    case fire(Int)
    case advance(Int64, ModeChoice)
    case addCommonMode(ModeChoice)
}

/// How an operation ended.
enum Outcome: Equatable {
    case done
    case created(Int)
    case advanced(Int)
    case failed(TimerError)
}

/// What the test sees happen, in order.
enum Event: Equatable {
    /// An action ran: which timer, the loop's time, `missed`, and what the
    /// timer and loop reported inside the action.
    case fired(timer: Int, now: Int64, missed: UInt64, valid: Bool, fireDate: Int64?,
               pending: UInt64)
    case outcome(ModelOp, Outcome)
}

// MARK: Random operations (shared by both sides, so that they stay in step)

extension SeededGenerator {
    /// A time: whole milliseconds half of the time (to make ties), else any
    /// nanosecond count.
    mutating func time(upTo milliseconds: Int64) -> Int64 {
        if chance(50) { return within(0...milliseconds) * 1_000_000 }
        return within(0...milliseconds * 1_000_000)
    }

    mutating func modeList() -> [ModeChoice] {
        switch below(100) {
        case 0..<40: [.standard]
        case 40..<65: [.common]
        case 65..<75: [.tracking]
        case 75..<85: [.custom1]
        case 85..<90: [.custom2]
        case 90..<95: [.tracking, .custom1]
        default: [.standard, .custom2]
        }
    }

    mutating func runMode() -> ModeChoice {
        switch below(100) {
        case 0..<50: .standard
        case 50..<75: .tracking
        case 75..<90: .custom1
        default: .custom2
        }
    }

    mutating func interval() -> Int64 {
        max(500_000, time(upTo: 40))
    }

    mutating func tolerance() -> Int64 {
        chance(50) ? 0 : time(upTo: 12)
    }

    mutating func timerSpec() -> TimerSpec {
        let repeats = chance(40)
        var delay = time(upTo: 40)
        if chance(5) { delay = 0 }
        if chance(5) { delay = -time(upTo: 5) }
        let clockRoll = below(100)
        return TimerSpec(
            repeats: repeats, interval: repeats ? interval() : 0, delay: delay,
            absolute: chance(10), tolerance: tolerance(),
            clock: clockRoll < 80 ? .monotonic : clockRoll < 90 ? .boot : .wall,
            modes: modeList(), viaLoopSchedule: chance(50))
    }

    /// An offset for setFireDate: mostly ahead, sometimes in the past.
    mutating func fireDateOffset() -> Int64 {
        chance(10) ? -time(upTo: 30) : time(upTo: 30)
    }

    /// What an action does when it runs (at nesting depth 1): mostly nothing.
    mutating func actionScript(me: Int, snapshot: [Int]) -> [ModelOp] {
        guard chance(30) else { return [] }
        var ops: [ModelOp] = []
        for _ in 0..<(chance(15) ? 2 : 1) {
            let other = snapshot.isEmpty ? me : snapshot[below(snapshot.count)]
            let either = chance(50) ? me : other
            switch below(100) {
            case 0..<20: ops.append(.invalidate(me))
            case 20..<35: ops.append(.setFireDate(me, fireDateOffset()))
            case 35..<45: ops.append(.invalidate(other))
            case 45..<53: ops.append(.setFireDate(other, fireDateOffset()))
            case 53..<60: ops.append(.setTolerance(either, tolerance()))
            case 60..<67: ops.append(.setInterval(either, interval()))
            case 67..<74: ops.append(.add(either, modeList()))
            case 74..<80: ops.append(.fire(other))
            case 80..<88: ops.append(.schedule(timerSpec()))
            case 88..<91: ops.append(.create(timerSpec()))
            default: ops.append(.advance(time(upTo: 5), runMode()))
            }
        }
        return ops
    }
}

/// The seed of timer `number`'s own generator (its action script).
func actionSeed(_ seed: UInt64, _ number: Int) -> UInt64 {
    var generator = SeededGenerator(seed: seed ^ (UInt64(number) &* 0xD134_2543_DE82_EF95))
    return generator.next()
}

// MARK: The model

/// The model of one manual loop and its timers.
final class ModelLoop {
    /// The C core's view of a timer.
    enum Core: Equatable {
        /// Not scheduled yet.
        case none
        /// Pending (possibly parked).
        case scheduled
        /// A one-shot whose action runs from a pass: out of the loop, but its
        /// own action may still cancel or revive it.
        case firing
        /// Cancelled, or a one-shot that fired.
        case gone
    }

    struct Timer {
        let repeats: Bool
        let clock: Int
        /// The facade's isValid.
        var valid = true
        /// The facade holds the C timer (LoopTimer's `state.loop` is set).
        var attached = false
        var core = Core.none
        var parked = false
        var deadline: Int64 = 0
        var leeway: Int64 = 0
        var seq: UInt64 = 0
        var modes: UInt32 = 0
        /// Before scheduling: the delay, or the absolute fire date.
        var firstFire: Int64
        var firstFireIsAbsolute: Bool
        var interval: Int64
        var tolerance: Int64
    }

    private(set) var now: Int64 = 0
    private var nextSeq: UInt64 = 0
    private(set) var timers: [Timer] = []
    /// The timers whose core state is `.scheduled`.
    private var live: [Int] = []
    private(set) var fired: UInt64 = 0
    private(set) var wakeups: UInt64 = 0
    /// Loop callbacks in progress (advances, and fire() of scheduled timers).
    private var busy = 0
    private var commonModes: UInt32 = 0b11

    private(set) var log: [Event] = []
    /// Timers an action may pick (set by the driver before each operation).
    var snapshot: [Int] = []
    private var generators: [SeededGenerator] = []
    private var actionDepth = 0
    private let seed: UInt64

    init(seed: UInt64) {
        self.seed = seed
    }

    var pending: UInt64 { UInt64(live.count) }

    func clearLog() { log.removeAll(keepingCapacity: true) }

    func isValid(_ n: Int) -> Bool { timers[n].valid }

    func fireDate(_ n: Int) -> Int64? {
        let t = timers[n]
        return t.valid && t.attached && t.core == .scheduled ? t.deadline : nil
    }

    func isWaitingForMode(_ n: Int) -> Bool {
        let t = timers[n]
        return t.attached && t.core == .scheduled && t.parked
    }

    // MARK: Operations

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
            let n = create(spec)
            try add(n, modes: modeSet(spec.modes))
            return .created(n)
        case .create(let spec):
            return .created(create(spec))
        case .add(let n, let modes):
            try add(n, modes: modeSet(modes))
        case .invalidate(let n):
            invalidate(n)
        case .setFireDate(let n, let offset):
            try setFireDate(n, saturating(now, offset))
        case .setTolerance(let n, let tolerance):
            try setTolerance(n, tolerance)
        case .setInterval(let n, let interval):
            try setInterval(n, interval)
        case .fire(let n):
            fire(n)
        case .advance(let delta, let mode):
            return .advanced(try advance(delta, mode))
        case .addCommonMode(let mode):
            if mode == .common { throw .notARunMode(.common) }
            commonModes |= mode.bit
        }
        return .done
    }

    /// The bit that stands for .common in a timer's `modes`.
    private static let common: UInt32 = 0x8000_0000

    private func modeSet(_ modes: [ModeChoice]) -> UInt32 {
        modes.reduce(0) { $0 | ($1 == .common ? Self.common : $1.bit) }
    }

    /// The modes `t` fires in now.
    private func inModes(_ t: Timer) -> UInt32 {
        t.modes & ~Self.common | (t.modes & Self.common != 0 ? commonModes : 0)
    }

    private func create(_ spec: TimerSpec) -> Int {
        let clock = spec.clock == .monotonic ? 0 : spec.clock == .boot ? 1 : 2
        timers.append(Timer(
            repeats: spec.repeats, clock: clock,
            firstFire: spec.absolute ? saturating(now, spec.delay) : max(0, spec.delay),
            firstFireIsAbsolute: spec.absolute,
            interval: spec.repeats ? spec.interval : 0, tolerance: spec.tolerance))
        generators.append(SeededGenerator(seed: actionSeed(seed, timers.count - 1)))
        return timers.count - 1
    }

    private func add(_ n: Int, modes: UInt32) throws(TimerError) {
        guard timers[n].valid else { throw .invalidated }
        if timers[n].attached {
            let merged = timers[n].modes | modes
            if merged == timers[n].modes { return }
            guard timers[n].core == .scheduled else { throw .invalidated }
            let t = timers[n]
            _ = reschedule(n, deadline: t.deadline, interval: t.interval,
                           tolerance: t.tolerance, modes: merged)
            return
        }
        let t = timers[n]
        let deadline = t.firstFireIsAbsolute ? t.firstFire : saturating(now, t.firstFire)
        timers[n].attached = true
        timers[n].core = .scheduled
        live.append(n)
        place(n, deadline: deadline, interval: t.interval, tolerance: t.tolerance, modes: modes)
    }

    /// tk_loop_reschedule: false for -ENOENT.
    private func reschedule(_ n: Int, deadline: Int64, interval: Int64, tolerance: Int64,
                            modes: UInt32) -> Bool {
        switch timers[n].core {
        case .scheduled: break
        case .firing: live.append(n)
        case .none, .gone: return false
        }
        timers[n].core = .scheduled
        place(n, deadline: deadline, interval: interval, tolerance: tolerance, modes: modes)
        return true
    }

    private func place(_ n: Int, deadline: Int64, interval: Int64, tolerance: Int64,
                       modes: UInt32) {
        timers[n].deadline = deadline
        timers[n].interval = interval
        timers[n].tolerance = tolerance
        timers[n].leeway = interval > 0 ? min(tolerance, interval / 2) : tolerance
        timers[n].modes = modes
        timers[n].seq = nextSeq
        nextSeq += 1
        timers[n].parked = false
    }

    private func unlive(_ n: Int) {
        live.remove(at: live.firstIndex(of: n)!)
    }

    private func invalidate(_ n: Int) {
        guard timers[n].valid else { return }
        timers[n].valid = false
        guard timers[n].attached else { return }
        switch timers[n].core {
        case .scheduled:
            unlive(n)
            timers[n].core = .gone
            timers[n].attached = false
        case .firing:
            timers[n].core = .gone
            timers[n].attached = false
        case .none, .gone:
            // A one-shot inside the action run by its fire(): already out of
            // the core; the end of that fire lets it go.
            break
        }
    }

    private func setFireDate(_ n: Int, _ date: Int64) throws(TimerError) {
        guard timers[n].valid else { throw .invalidated }
        let t = timers[n]
        if t.attached {
            guard reschedule(n, deadline: date, interval: t.interval, tolerance: t.tolerance,
                             modes: t.modes)
            else { throw .invalidated }
        }
        timers[n].firstFire = date
        timers[n].firstFireIsAbsolute = true
    }

    private func setTolerance(_ n: Int, _ tolerance: Int64) throws(TimerError) {
        guard tolerance >= 0 else { throw .negativeTolerance(.nanoseconds(tolerance)) }
        try keepingFireDate(n, interval: timers[n].interval, tolerance: tolerance)
    }

    private func setInterval(_ n: Int, _ interval: Int64) throws(TimerError) {
        guard timers[n].repeats else { throw .notRepeating }
        guard interval > 0 else { throw .invalidInterval(.nanoseconds(interval)) }
        try keepingFireDate(n, interval: interval, tolerance: timers[n].tolerance)
    }

    private func keepingFireDate(_ n: Int, interval: Int64, tolerance: Int64)
        throws(TimerError)
    {
        guard timers[n].valid else { throw .invalidated }
        let t = timers[n]
        guard t.attached else {
            timers[n].interval = interval
            timers[n].tolerance = tolerance
            return
        }
        guard t.core == .scheduled else { throw .invalidated }
        _ = reschedule(n, deadline: t.deadline, interval: interval, tolerance: tolerance,
                       modes: t.modes)
        timers[n].firstFire = t.deadline
        timers[n].firstFireIsAbsolute = true
    }

    private func fire(_ n: Int) {
        guard timers[n].valid else { return }
        if timers[n].attached {
            guard timers[n].core == .scheduled else { return }
            if !timers[n].repeats {
                unlive(n)
                timers[n].core = .gone
            }
            fired += 1
            busy += 1
            runAction(n, missed: 0)
            busy -= 1
            finishOneShot(n)
        } else {
            // A one-shot is done as the call begins: its action cannot add
            // it to the loop, nor give it a fire date.
            if !timers[n].repeats { invalidate(n) }
            runAction(n, missed: 0)
        }
    }

    /// After a one-shot's action: it is done unless the action scheduled it again.
    private func finishOneShot(_ n: Int) {
        guard !timers[n].repeats else { return }
        if timers[n].attached && timers[n].core != .scheduled {
            timers[n].valid = false
            timers[n].attached = false
        }
        if timers[n].core == .firing { timers[n].core = .gone }
    }

    private func runAction(_ n: Int, missed: UInt64) {
        log.append(.fired(timer: n, now: now, missed: missed, valid: timers[n].valid,
                          fireDate: fireDate(n), pending: pending))
        actionDepth += 1
        defer { actionDepth -= 1 }
        guard actionDepth == 1 else { return }
        let ops = generators[n].actionScript(me: n, snapshot: snapshot)
        for op in ops { apply(op) }
    }

    // MARK: Advancing

    private func advance(_ delta: Int64, _ mode: ModeChoice) throws(TimerError) -> Int {
        guard delta >= 0 else {
            throw .system(SystemError(errno: .invalidArgument, function: "tk_loop_advance"))
        }
        guard busy == 0 else { throw .busy }
        busy += 1
        defer { busy -= 1 }
        let bit = mode.bit
        let end = saturating(now, delta)
        var count = 0
        var sameTime = 0  // passes at this time after the first
        while true {
            count += pass(bit)
            var target: Int64?
            for n in live {
                let t = timers[n]
                if t.parked || inModes(t) & bit == 0 { continue }
                let at = saturating(t.deadline, t.leeway)
                if at == .max { continue }
                let wait = saturating(at, -now)
                if wait == .max || (sameTime >= 64 && wait <= 0) { continue }
                if target == nil || wait < target! { target = wait }
            }
            let left = end - now
            guard let target, target <= left else {
                now = end
                return count
            }
            let moved = max(0, target)
            now += moved
            sameTime = moved > 0 ? 0 : sameTime + 1
            wakeups += 1
        }
    }

    private func pass(_ bit: UInt32) -> Int {
        for n in live where timers[n].parked && inModes(timers[n]) & bit != 0 {
            timers[n].parked = false
        }
        let passSeq = nextSeq
        var count = 0
        while true {
            var first = [-1, -1, -1]
            for n in live where !timers[n].parked && timers[n].seq < passSeq {
                let t = timers[n]
                let f = first[t.clock]
                if f < 0 || (t.deadline, t.seq) < (timers[f].deadline, timers[f].seq) {
                    first[t.clock] = n
                }
            }
            var best = -1
            var bestLate: Int64 = 0
            for n in first where n >= 0 {
                let t = timers[n]
                if t.deadline == .max || t.deadline > now { continue }
                let late = saturating(now, -t.deadline)
                if best < 0 || late > bestLate || (late == bestLate && t.seq < timers[best].seq) {
                    best = n
                    bestLate = late
                }
            }
            guard best >= 0 else { return count }
            if inModes(timers[best]) & bit == 0 {
                timers[best].parked = true
                continue
            }
            var missed: UInt64 = 0
            if timers[best].repeats {
                let t = timers[best]
                let late = Int128(now) - Int128(t.deadline)
                missed = UInt64(late / Int128(t.interval))
                let next = Int128(t.deadline) + (Int128(missed) + 1) * Int128(t.interval)
                timers[best].deadline = next > Int128(Int64.max) ? .max : Int64(next)
                timers[best].seq = nextSeq
                nextSeq += 1
            } else {
                unlive(best)
                timers[best].core = .firing
            }
            count += 1
            fired += 1
            runAction(best, missed: missed)
            finishOneShot(best)
        }
    }
}

/// `a + b`, saturating.
func saturating(_ a: Int64, _ b: Int64) -> Int64 {
    let (sum, overflow) = a.addingReportingOverflow(b)
    if !overflow { return sum }
    return b > 0 ? .max : .min
}
