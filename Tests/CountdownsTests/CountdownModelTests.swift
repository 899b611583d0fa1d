import Glibc
import Testing
import TimerKit

@testable import Countdowns

// Property test: random operations (add, remove, observe, unobserve,
// advance, sometimes in a mode the center does not run in) on a center on a
// manual loop, checked against a model of what must hold:
//   - every end is delivered exactly once, never before its end, and by the
//     end of an advance in one of the center's modes every end that passed
//     has been delivered;
//   - a removed countdown never ends, and its observation goes quiet;
//   - every tick's value is the remaining time at delivery rounded up to the
//     granularity, it comes only when the value changed, and its `skipped`
//     counts the values that went by unseen;
//   - group ticks read the same remaining times through remaining(_:at:).
//
//   TK_SEED=<n>               repeat a run
//   TK_COUNTDOWN_OPS=<n>      operations per run (default 100,000)

/// A SplitMix64 generator, so a failing run repeats from its seed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
    mutating func below(_ bound: Int) -> Int { Int(next() % UInt64(bound)) }
    mutating func chance(_ percent: Int) -> Bool { below(100) < percent }
}

func environmentInteger(_ name: String) -> UInt64? {
    guard let raw = getenv(name) else { return nil }
    return UInt64(String(cString: raw))
}

func testSeed() -> UInt64 {
    if let seed = environmentInteger("TK_SEED") { return seed }
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return UInt64(time.tv_sec) &* 1_000_000_007 &+ UInt64(time.tv_nsec)
}

/// What the test knows of each countdown and observation, and the
/// violations it saw.
final class ModelState: @unchecked Sendable {
    struct Entry {
        var end: Int64
        var group: CountdownGroup?
    }

    struct Watch {
        var countdown: Countdown
        var step: Int64
        var shown: Int64
    }

    /// Countdowns yet to end or be removed.
    var entries: [Countdown: Entry] = [:]
    /// Those that ended or were removed (true: ended).
    var finished: [Countdown: Bool] = [:]
    /// Each observed countdown's end, kept after it finishes.
    var ends_: [Countdown: Int64] = [:]
    /// Observations alive; those over are only remembered by key.
    var watches: [Int: Watch] = [:]
    var overWatches: Set<Int> = []
    var problems: [String] = []
    var ends = 0
    var ticks = 0
    var groupTicks = 0
}

@Suite("CountdownCenter against a model")
struct CountdownModelTests {
    @Test("random operations keep every end once and never early, and every value exact")
    func randomOperations() throws {
        let seed = testSeed()
        let operations = Int(environmentInteger("TK_COUNTDOWN_OPS") ?? 100_000)
        var rng = SeededGenerator(seed: seed)
        let loop = try TimerLoop.manual(startingAt: .seconds(1_000))
        let center = try CountdownCenter(loop: loop)
        let model = ModelState()
        @Sendable func now() -> Int64 { loop.now(.boot).offset.nanoseconds }
        @Sendable func problem(_ text: String) { model.problems.append(text) }

        center.onEnd { end in
            let time = now()
            if let ended = model.finished[end.countdown] {
                return problem(ended ? "\(end.countdown) ended twice" : "\(end.countdown) ended after being removed")
            }
            guard let entry = model.entries.removeValue(forKey: end.countdown) else {
                return problem("end of an unknown \(end.countdown)")
            }
            if time < entry.end { problem("\(end.countdown) ended \(entry.end - time) ns early") }
            if end.lateness != .nanoseconds(time - entry.end) { problem("\(end.countdown) lateness \(end.lateness)") }
            if end.group != entry.group { problem("\(end.countdown) ended in the wrong group") }
            model.finished[end.countdown] = true
            model.ends += 1
        }

        let groups = [center.makeGroup(), center.makeGroup()]
        var observations: [Int: CountdownObservation] = [:]
        var groupObservations: [CountdownObservation] = []
        var live: [Countdown] = []
        var nextWatch = 0
        let steps: [Int64] = [1_000_000_000, 10_000_000_000, 60_000_000_000, 500_000_000]

        for step in 0..<operations {
            live.removeAll { model.entries[$0] == nil }
            switch rng.below(100) {
            case 0..<30:
                let delay = Int64(rng.below(600_000)) * 1_000_000 + Int64(rng.below(1_000_000))
                let group = rng.chance(30) ? groups[rng.below(2)] : nil
                let countdown = center.add(endingAt: loop.now(.boot) + .nanoseconds(delay), in: group)
                model.entries[countdown] = ModelState.Entry(end: now() + delay, group: group)
                live.append(countdown)
            case 30..<38 where !live.isEmpty:
                let countdown = live[rng.below(live.count)]
                if !center.remove(countdown) { problem("remove of live \(countdown) failed") }
                model.entries[countdown] = nil
                model.finished[countdown] = false
                for (key, watch) in model.watches where watch.countdown == countdown {
                    model.watches[key] = nil
                    model.overWatches.insert(key)
                }
            case 38..<50 where !live.isEmpty && observations.count < 30:
                let countdown = live[rng.below(live.count)]
                let granularity = steps[rng.below(steps.count)]
                let key = nextWatch
                nextWatch += 1
                let end = model.entries[countdown]!.end
                model.ends_[countdown] = end
                let shown = roundedUp(end - now(), granularity)
                model.watches[key] = ModelState.Watch(countdown: countdown, step: granularity, shown: shown)
                observations[key] = try center.observe(countdown, every: .nanoseconds(granularity)) { event in
                    if model.overWatches.contains(key) { return problem("an event after the observation was over") }
                    guard var watch = model.watches[key] else { return problem("event of a forgotten watch") }
                    switch event {
                    case .tick(let tick):
                        let remaining = end - now()
                        let value = roundedUp(remaining, watch.step)
                        if tick.value != value { problem("tick value \(tick.value), expected \(value)") }
                        if tick.remaining != .nanoseconds(max(0, remaining)) { problem("tick remaining") }
                        if value >= watch.shown { problem("a tick without a change: \(watch.shown) to \(value)") }
                        if tick.skipped != UInt64(watch.shown - 1 - value) {
                            problem("skipped \(tick.skipped), expected \(watch.shown - 1 - value)")
                        }
                        if value < 1 { problem("a tick at zero (the end reports that)") }
                        watch.shown = value
                        model.ticks += 1
                    case .ended(let ended):
                        if ended.countdown != countdown { problem("another countdown's end") }
                        model.watches[key] = nil
                        model.overWatches.insert(key)
                        return
                    }
                    model.watches[key] = watch
                }
            case 50..<58 where !observations.isEmpty:
                let key = Array(observations.keys)[rng.below(observations.count)]
                observations.removeValue(forKey: key)?.cancel()
                if model.watches.removeValue(forKey: key) != nil { model.overWatches.insert(key) }
            case 58..<60 where groupObservations.count < 4:
                let group = groups[rng.below(2)]
                groupObservations.append(try center.observe(group, every: .milliseconds(500)) { event in
                    guard case .tick(let tick) = event else { return }
                    if tick.time != now() { problem("a group tick stamped \(tick.time), now \(now())") }
                    for (countdown, entry) in model.entries where entry.group == group {
                        let expected = Duration.nanoseconds(max(0, entry.end - tick.time))
                        if center.remaining(countdown, at: tick) != expected { problem("remaining(at:) of \(countdown)") }
                    }
                    model.groupTicks += 1
                })
            case 60..<61 where !groupObservations.isEmpty:
                groupObservations.removeLast().cancel()
            default:
                let delta = Duration.nanoseconds(Int64(rng.below(2_000)) * 1_000_000 + Int64(rng.below(1_000)))
                if rng.chance(10) {
                    // A mode outside the center's: nothing is delivered.
                    try loop.advance(by: delta, mode: "elsewhere")
                } else {
                    try loop.advance(by: delta, mode: rng.chance(20) ? .tracking : .default)
                    // In one of the center's modes everything due was delivered.
                    let time = now()
                    for (countdown, entry) in model.entries where entry.end <= time {
                        problem("\(countdown) passed its end by \(time - entry.end) ns undelivered")
                    }
                    for (_, watch) in model.watches {
                        let end = model.ends_[watch.countdown]!
                        let value = roundedUp(end - time, watch.step)
                        if value > 0 && value != watch.shown {
                            problem("a display shows \(watch.shown) where \(value) is due")
                        }
                    }
                }
            }
            if !model.problems.isEmpty {
                Issue.record("operation \(step), seed \(seed): \(model.problems.prefix(5)) (TK_SEED=\(seed))")
                return
            }
        }
        #expect(model.ends > operations / 20, "too few ends to mean much (seed \(seed))")
        #expect(model.ticks > operations / 20, "too few ticks to mean much (seed \(seed))")
        #expect(model.groupTicks > 0)
        print("countdown model: \(operations) operations, \(model.ends) ends, \(model.ticks) ticks, \(model.groupTicks) group ticks (seed \(seed))")
        for observation in observations.values { observation.cancel() }
        for observation in groupObservations { observation.cancel() }
        #expect(center.count == model.entries.count)
    }
}

extension Duration {
    var nanoseconds: Int64 {
        components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
    }
}

/// `remaining` in units of `step`, rounded up: the test's own arithmetic,
/// not the center's.
func roundedUp(_ remaining: Int64, _ step: Int64) -> Int64 {
    remaining <= 0 ? 0 : (remaining + step - 1) / step
}
