import Dispatch
import Glibc
import Testing
import TimerKit
import TrustedTime

@testable import Countdowns

// Exact sequences on a manual loop: what a display shows at every tick, ends
// exactly once and never early, a suspend (the boot clock moved alone), a
// wall-clock step, the ticker stopping when nothing is observed.

/// Events in arrival order, with the loop's boot time at each.
final class Recorder: @unchecked Sendable {
    private let lock = Locked<[String]>([])
    var all: [String] { lock.value }
    func append(_ line: String) { lock.withLock { $0.append(line) } }
    func clear() { lock.withLock { $0.removeAll() } }
}

/// Seconds (with up to three decimals) of a duration, for compact logs.
func secs(_ duration: Duration) -> String {
    let ms = duration.components.seconds * 1_000 + duration.components.attoseconds / 1_000_000_000_000_000
    return ms % 1_000 == 0 ? "\(ms / 1_000)" : "\(Double(ms) / 1_000)"
}

@Suite("CountdownCenter on a manual loop")
struct CountdownCenterTests {
    @Test("a display ticks on whole seconds of remaining time, and the end comes once")
    func ticksOnWholeSeconds() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(1_000))
        let center = try CountdownCenter(loop: loop)
        let log = Recorder()
        // 3.5 s from now: the display shows 4, then 3 at 0.5 s, 2 at 1.5 s ...
        let countdown = center.add(endingAt: loop.now(.boot) + .milliseconds(3_500))
        let observation = try center.observe(countdown) { event in
            let at = secs(loop.now(.boot).offset - .seconds(1_000))
            switch event {
            case .tick(let tick): log.append("\(at): \(tick.value) (\(secs(tick.remaining)) left)")
            case .ended(let end): log.append("\(at): ended, late \(secs(end.lateness))")
            }
        }
        #expect(center.isTicking)
        try loop.advance(by: .seconds(10))
        #expect(log.all == [
            "0.5: 3 (3 left)", "1.5: 2 (2 left)", "2.5: 1 (1 left)", "3.5: ended, late 0",
        ])
        #expect(!center.contains(countdown))
        #expect(center.remaining(countdown) == nil)
        #expect(!center.isTicking, "the observation ended with its countdown")
        observation.cancel()
    }

    @Test("unobserved countdowns fire their ends exactly once, in order, and cost no tick")
    func unobservedEnds() throws {
        let loop = try TimerLoop.manual()
        let center = try CountdownCenter(loop: loop)
        let ends = Recorder()
        center.onEnd { end in ends.append("\(end.countdown) at \(secs(loop.now(.boot).offset))") }
        let a = center.add(endingAt: loop.now(.boot) + .seconds(30))
        let b = center.add(endingAt: loop.now(.boot) + .seconds(10))
        let c = center.add(remaining: .seconds(20))
        #expect(center.count == 3)
        #expect(!center.isTicking)
        let before = loop.statistics.wakeups
        try loop.advance(by: .seconds(60))
        #expect(ends.all == ["\(b) at 10", "\(c) at 20", "\(a) at 30"])
        #expect(loop.statistics.wakeups - before == 3, "one wake-up an end, no ticks")
        #expect(center.count == 0)
    }

    @Test("a handler holding the last reference to another observation is let go of outside the center's lock")
    func handlerReleasedOutsideTheLock() throws {
        let loop = try TimerLoop.manual()
        let center = try CountdownCenter(loop: loop)
        let a = center.add(remaining: .seconds(30))
        let b = center.add(remaining: .seconds(40))
        // Each call runs on another thread with a limit: a center that let go
        // of the handler under its lock would wait for itself forever.
        let returns = returnsOnAnotherThread
        func holding(_ inner: CountdownObservation) -> @Sendable (CountdownEvent) -> Void {
            { _ in _ = inner }
        }
        let outer = try center.observe(a, holding(try center.observe(b) { _ in }))
        #expect(returns { outer.cancel() }, "cancel")
        _ = try center.observe(a, holding(try center.observe(b) { _ in }))
        #expect(returns { center.remove(a) }, "remove")
        func endHolding(_ inner: CountdownObservation) -> @Sendable (CountdownEnd) -> Void {
            { _ in _ = inner }
        }
        func jumpHolding(_ inner: CountdownObservation) -> @Sendable (TimeBaseJump) -> Void {
            { _ in _ = inner }
        }
        center.onEnd(endHolding(try center.observe(b) { _ in }))
        #expect(returns { center.onEnd(nil) }, "onEnd(nil)")
        center.onTimeBaseJump(jumpHolding(try center.observe(b) { _ in }))
        #expect(returns { center.onTimeBaseJump(nil) }, "onTimeBaseJump(nil)")
    }

    @Test("a suspend: ends that passed while the boot clock moved alone come at once, with their lateness")
    func suspend() throws {
        let loop = try TimerLoop.manual()
        let center = try CountdownCenter(loop: loop)
        let ends = Recorder()
        center.onEnd { end in ends.append("late \(secs(end.lateness))") }
        center.add(endingAt: loop.now(.boot) + .seconds(5))
        center.add(endingAt: loop.now(.boot) + .seconds(50))
        // The machine sleeps an hour: the boot clock moves, the monotonic one does not.
        try loop.setManualTime(to: loop.now(.boot) + .seconds(3_600))
        try loop.advance(by: .zero)
        #expect(ends.all == ["late 3595", "late 3550"])
    }

    @Test("a countdown ended long ago is late by exactly the span since its end, past Int64.max ns")
    func latenessBeyondInt64() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(1_000))
        let center = try CountdownCenter(loop: loop)
        let lateness = Locked<[Duration]>([])
        center.onEnd { end in lateness.withLock { $0.append(end.lateness) } }
        // The remaining time is taken to Int64.min ns: the end is that long
        // before now, 1,000 s on the boot clock.
        center.add(remaining: .seconds(Int64.min))
        // One that ends as late as a time base goes: its remaining time at a
        // tick from Int64.min ns is the whole span, past Int64.max ns too.
        let last = center.add(remaining: .seconds(Int64.max))
        #expect(center.remaining(last, at: CenterTick(time: .min, skipped: 0))
            == .nanoseconds(Int64.max) - .nanoseconds(Int64.min))
        try loop.advance(by: .zero)
        let expected = Duration.zero - .nanoseconds(Int64.min)
        #expect(expected > .nanoseconds(Int64.max))
        #expect(lateness.value == [expected])
    }

    @Test("a wall-clock step moves nothing on the boot clock")
    func wallClockStepMovesNothing() throws {
        let loop = try TimerLoop.manual()
        let center = try CountdownCenter(loop: loop)
        let countdown = center.add(remaining: .seconds(60))
        try loop.setManualTime(to: loop.now(.wall) - .seconds(3_600))  // set back an hour
        try loop.advance(by: .seconds(10))
        #expect(center.remaining(countdown) == .seconds(50))
        try loop.setManualTime(to: loop.now(.wall) + .seconds(86_400))  // a day ahead
        try loop.advance(by: .zero)
        #expect(center.remaining(countdown) == .seconds(50))
    }

    @Test("a late loop: the tick says how many values it skipped")
    func skippedTicks() throws {
        let loop = try TimerLoop.manual()
        let center = try CountdownCenter(loop: loop)
        let ticks = Recorder()
        let countdown = center.add(remaining: .seconds(10))
        let observation = try center.observe(countdown) { event in
            if case .tick(let tick) = event { ticks.append("\(tick.value) skipped \(tick.skipped)") }
        }
        try loop.advance(by: .seconds(1))  // 9
        // The loop runs only in .tracking for 3.5 s (the center is in the common
        // modes, so it still ticks); then a mode outside them for 2 s.
        try loop.advance(by: .milliseconds(3_500), mode: .tracking)  // 8, 7, 6
        try loop.advance(by: .seconds(2), mode: "elsewhere")  // nothing while away
        try loop.advance(by: .zero)  // back: 3.5 s left, shows 4: skipped 5 and 6? no: 5 only
        #expect(ticks.all == ["9 skipped 0", "8 skipped 0", "7 skipped 0", "6 skipped 0", "4 skipped 1"])
        observation.cancel()
    }

    @Test("group and center-wide ticks come on the grid of the time base; remaining(at:) reads them")
    func groupTicks() throws {
        let loop = try TimerLoop.manual(startingAt: .milliseconds(100_250))
        let center = try CountdownCenter(loop: loop)
        let page = center.makeGroup()
        let first = center.add(remaining: .seconds(3), in: page)
        let second = center.add(remaining: .milliseconds(4_500), in: page)
        let log = Recorder()
        let observation = try center.observe(page) { event in
            switch event {
            case .tick(let tick):
                let values = [first, second].map { center.remaining($0, at: tick).map(secs) ?? "-" }
                log.append("tick \(secs(.nanoseconds(tick.time))): \(values.joined(separator: " "))")
            case .ended(let end):
                log.append("ended \(end.countdown == first ? "first" : "second")")
            }
        }
        let all = Recorder()
        let everything = try center.observeAll(every: .seconds(2)) { tick in
            all.append("all \(secs(.nanoseconds(tick.time)))")
        }
        try loop.advance(by: .seconds(5))
        #expect(log.all == [
            "tick 101: 2.25 3.75", "tick 102: 1.25 2.75", "tick 103: 0.25 1.75", "ended first",
            "tick 104: - 0.75", "ended second", "tick 105: - -",
        ])
        #expect(all.all == ["all 102", "all 104"])
        observation.cancel()
        everything.cancel()
        #expect(!center.isTicking)
    }

    @Test("the ticker runs only while something is observed")
    func tickerRefCount() throws {
        let loop = try TimerLoop.manual()
        let center = try CountdownCenter(loop: loop)
        center.add(remaining: .seconds(3_600))
        var observations: [CountdownObservation] = []
        for _ in 0..<3 { observations.append(try center.observeAll { _ in }) }
        #expect(center.isTicking)
        observations.removeLast()
        observations[0].cancel()
        #expect(center.isTicking)
        observations.removeAll()  // dropped: cancelled
        #expect(!center.isTicking)
        let before = loop.statistics.wakeups
        try loop.advance(by: .seconds(600))
        #expect(loop.statistics.wakeups == before, "nothing observed, no end due: no wake-up")
    }

    @Test("removing a countdown: no end comes, and its observation ends")
    func remove() throws {
        let loop = try TimerLoop.manual()
        let center = try CountdownCenter(loop: loop)
        let events = Recorder()
        center.onEnd { _ in events.append("end") }
        let countdown = center.add(remaining: .seconds(5))
        let observation = try center.observe(countdown) { _ in events.append("event") }
        #expect(center.remove(countdown))
        #expect(!center.remove(countdown))
        try loop.advance(by: .seconds(10))
        #expect(events.all.isEmpty)
        #expect(!center.isTicking)
        #expect(throws: CountdownError.noSuchCountdown(countdown)) {
            try center.observe(countdown) { _ in }
        }
        observation.cancel()
    }

    @Test("removing most of many countdowns, then reusing their slots: the rest end once each, in order, on time")
    func removeManyAndReuse() throws {
        let loop = try TimerLoop.manual()
        let center = try CountdownCenter(loop: loop)
        let start = loop.now(.boot)
        let ended = Locked<[Countdown: Duration]>([:])
        let twice = Locked(0)
        center.onEnd { end in
            let at = loop.now(.boot) - start
            ended.withLock { if $0.updateValue(at, forKey: end.countdown) != nil { twice.withLock { $0 += 1 } } }
        }
        // 5,000 countdowns ending at 1..5000 ms; remove all but every tenth
        // (enough removals for the stale ends to be dropped in bulk).
        var kept: [Countdown: Duration] = [:]
        var removed: [Countdown] = []
        for index in 1...5_000 {
            let countdown = center.add(endingAt: start + .milliseconds(index))
            if index % 10 == 0 { kept[countdown] = .milliseconds(index) } else { removed.append(countdown) }
        }
        for countdown in removed.shuffled() { #expect(center.remove(countdown)) }
        #expect(center.count == 500)
        // New countdowns take the freed slots: they end later, at 6..1005 ms
        // after the old ones would have.
        for index in 1...1_000 {
            kept[center.add(endingAt: start + .milliseconds(5_000 + index))] = .milliseconds(5_000 + index)
        }
        #expect(center.count == 1_500)
        for countdown in removed.prefix(10) {
            #expect(!center.contains(countdown))
            #expect(center.remaining(countdown) == nil)
        }
        try loop.advance(by: .seconds(7))
        #expect(twice.withLock { $0 } == 0)
        let all = ended.withLock { $0 }
        #expect(all == kept, "every kept countdown ends once, at its end, and no removed one ends")
        #expect(center.count == 0)
    }

    @Test("a handler that cancels another observation, or removes its countdown, silences it within the same tick")
    func cancelWithinATick() throws {
        let loop = try TimerLoop.manual()
        let center = try CountdownCenter(loop: loop)
        let heard = Recorder()
        let a = center.add(remaining: .seconds(10))
        let b = center.add(remaining: .seconds(10))
        let c = center.add(remaining: .seconds(10))
        let held = Locked<[CountdownObservation]>([])
        // All three tick at the same instant; the first to hear cancels the
        // second's observation and removes the third's countdown.
        let first = try center.observe(a) { event in
            guard case .tick(let tick) = event else { return }
            heard.append("a \(tick.value)")
            if tick.value == 9 {
                held.withLock { $0[0].cancel() }
                center.remove(c)
            }
        }
        let second = try center.observe(b) { event in
            if case .tick(let tick) = event { heard.append("b \(tick.value)") }
        }
        let third = try center.observe(c) { event in
            if case .tick(let tick) = event { heard.append("c \(tick.value)") }
        }
        held.withLock { $0 = [second, third] }
        try loop.advance(by: .seconds(2))
        #expect(heard.all == ["a 9", "a 8"], "b and c hear nothing once a's handler ended them")
        first.cancel()
    }

    @Test("a handler that cancels an observation whose countdown ends at the same instant silences its end")
    func cancelAnEndOfTheSameInstant() throws {
        let loop = try TimerLoop.manual()
        let center = try CountdownCenter(loop: loop)
        let heard = Recorder()
        let a = center.add(remaining: .seconds(5))
        let b = center.add(remaining: .seconds(5))
        let c = center.add(remaining: .seconds(5))
        let held = Locked<[CountdownObservation]>([])
        // a, b and c end at the same instant. The center's end handler, which
        // hears a's end first, cancels c's observation; a's observer cancels
        // b's. Neither may hear its end after the cancel returned.
        center.onEnd { end in
            if end.countdown == a { held.withLock { $0[1].cancel() } }
        }
        let first = try center.observe(a) { event in
            guard case .ended = event else { return }
            heard.append("a ended")
            held.withLock { $0[0].cancel() }
        }
        let second = try center.observe(b) { event in
            if case .ended = event { heard.append("b ended") }
        }
        let third = try center.observe(c) { event in
            if case .ended = event { heard.append("c ended") }
        }
        held.withLock { $0 = [second, third] }
        try loop.advance(by: .seconds(6))
        #expect(heard.all == ["a ended"], "b and c hear nothing once cancelled")
        #expect(center.count == 0)
        first.cancel()
    }

    @Test("onEnd replaced or removed by a handler: ends of the same serve not delivered yet go to the handler set now")
    func endHandlerReplacedWhileDelivering() throws {
        let loop = try TimerLoop.manual()
        let center = try CountdownCenter(loop: loop)
        let heard = Recorder()
        // Three ends at the same instant, collected by one serve. The first
        // handler to hear one replaces itself; the next time, removes it.
        let first: @Sendable (CountdownEnd) -> Void = { end in
            heard.append("first")
            center.onEnd { _ in heard.append("second") }
        }
        center.onEnd(first)
        for _ in 0..<3 { center.add(remaining: .seconds(5)) }
        try loop.advance(by: .seconds(6))
        #expect(heard.all == ["first", "second", "second"])
        heard.clear()
        center.onEnd { _ in
            heard.append("removing")
            center.onEnd(nil)
        }
        for _ in 0..<3 { center.add(remaining: .seconds(5)) }
        try loop.advance(by: .seconds(6))
        #expect(heard.all == ["removing"], "no handler hears the ends after onEnd(nil)")
        #expect(center.count == 0)
    }

    @Test("bad input is refused and changes nothing")
    func errors() throws {
        let loop = try TimerLoop.manual()
        let center = try CountdownCenter(loop: loop)
        let countdown = center.add(remaining: .seconds(5))
        #expect(throws: CountdownError.invalidGranularity(.zero)) {
            try center.observe(countdown, every: .zero) { _ in }
        }
        #expect(throws: CountdownError.invalidGranularity(.nanoseconds(1) / 2)) {
            try center.observeAll(every: .nanoseconds(1) / 2) { _ in }
        }
        #expect(throws: CountdownError.needsTrustedClock) {
            try center.add(endingAt: TrustedTime(sinceEpoch: .seconds(1)))
        }
        // Another center's handles and groups name nothing here, even when
        // their numbers match.
        let other = try CountdownCenter(loop: loop)
        let foreignGroup = other.makeGroup()
        let foreign = other.add(remaining: .seconds(5))
        _ = center.makeGroup()
        #expect(throws: CountdownError.noSuchGroup(foreignGroup)) { try center.observe(foreignGroup) { _ in } }
        #expect(throws: CountdownError.noSuchCountdown(foreign)) { try center.observe(foreign) { _ in } }
        #expect(!center.remove(foreign))
        #expect(center.remaining(foreign) == nil)
        #expect(other.remaining(foreign) == .seconds(5))
        #expect(center.count == 1)
        // Adding with another center's group adds the countdown, in no group.
        let stray = center.add(remaining: .seconds(5), in: foreignGroup)
        #expect(center.contains(stray))
        #expect(center.remove(stray))
        #expect(center.count == 1)
        #expect(!center.isTicking)
        #expect(throws: CountdownError.timer(.noModes)) { try CountdownCenter(loop: loop, modes: []) }
    }

    @Test("an end with a part of a nanosecond comes at the next whole nanosecond, never before")
    func partOfANanosecond() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(100))
        let center = try CountdownCenter(loop: loop)
        let oneAndAHalf = Duration.nanoseconds(3) / 2
        let atInstant = center.add(endingAt: loop.now(.boot) + oneAndAHalf)
        let fromRemaining = center.add(remaining: oneAndAHalf)
        let ended = Recorder()
        center.onEnd { end in
            ended.append("\(end.countdown == atInstant ? "instant" : "remaining") +\((loop.now(.boot).offset - .seconds(100)).components.attoseconds / 1_000_000_000) ns")
        }
        try loop.advance(by: .nanoseconds(1))
        #expect(ended.all.isEmpty, "ended at 1 ns, before its end at 1.5 ns")
        #expect(center.remaining(atInstant) != nil && center.remaining(fromRemaining) != nil)
        try loop.advance(by: .nanoseconds(1))
        #expect(ended.all == ["instant +2 ns", "remaining +2 ns"])
    }

    @Test("a trusted center, synced or not, takes boot-clock ends at the ends of Duration's range: held at its time base's ends")
    func trustedCenterExtremeEnds() throws {
        for synced in [false, true] {
            let loop = try TimerLoop.manual(startingAt: .seconds(100))
            let clock = TrustedClock(readings: LoopClockReadings(loop: loop, bootID: "test-boot"))
            if synced {
                let boot = loop.now(.boot)
                try clock.sync(with: TimeSample(serverTime: .seconds(1_700_000_000), sentAt: boot, receivedAt: boot))
            }
            let center = try CountdownCenter(loop: loop, timeBase: .trusted(clock))
            let ended = Locked<[Countdown]>([])
            center.onEnd { end in ended.withLock { $0.append(end.countdown) } }
            let never = center.add(endingAt: BootClock.Instant(offset: Duration(attoseconds: .max)))
            let long = center.add(endingAt: loop.now(.boot) + Duration(attoseconds: .max / 2) + Duration(attoseconds: .max / 2))
            let past = center.add(endingAt: BootClock.Instant(offset: Duration(attoseconds: .min)))
            let sale = FlashSale(center: center, remaining: .seconds(60), receivedAt: BootClock.Instant(offset: Duration(attoseconds: .max)))
            try loop.advance(by: .seconds(1))
            #expect(ended.value == [past], "synced: \(synced)")
            #expect(center.contains(never) && center.contains(long), "synced: \(synced)")
            #expect(center.remaining(never)! > .seconds(1_000_000_000), "synced: \(synced)")
            _ = sale
        }
    }

    @Test("groups past the 2^32nd: made without a trap, each its own, and a countdown in one ends in it")
    func groupsPast32Bits() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(1_000))
        let center = try CountdownCenter(loop: loop)
        // As if the center had made 2^32 - 2 groups already.
        center.state.withLock { $0.groupsMade = UInt64(UInt32.max) - 1 }
        let groups = (0..<3).map { _ in center.makeGroup() }
        #expect(groups.map(\.description) == ["group #4294967295", "group #4294967296", "group #4294967297"])
        #expect(Set(groups).count == 3)
        #expect(MemoryLayout<CountdownTable.Slot>.stride == 24)  // a countdown's slot, as documented
        // The 2^32nd: its number's low 32 bits are 0, which a 32-bit slot
        // would read as no group.
        let countdown = center.add(remaining: .seconds(2), in: groups[1])
        let log = Recorder()
        var observations = try groups.enumerated().map { index, group in
            try center.observe(group) { event in
                if case .ended(let end) = event {
                    log.append("group \(index): ended in \(end.group.map(\.description) ?? "none")")
                }
            }
        }
        try loop.advance(by: .seconds(3))
        #expect(log.all == ["group 1: ended in group #4294967296"])
        #expect(center.remaining(countdown) == nil)
        for observation in observations { observation.cancel() }
        observations.removeAll()
        #expect(!center.isTicking)
    }

    @Test("a trusted time base at Int64.min, the earliest server time a sample may give: groups and the whole center tick on their grids")
    func timeBaseAtInt64Min() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(5_000))
        let clock = TrustedClock(readings: LoopClockReadings(loop: loop, bootID: "test-boot"))
        let earliest = TimeSample(
            serverTime: .nanoseconds(Int64.min), sentAt: loop.now(.boot), receivedAt: loop.now(.boot))
        try clock.sync(with: earliest)
        let center = try CountdownCenter(loop: loop, timeBase: .trusted(clock))
        #expect(center.now().base == .min)
        let page = center.makeGroup()
        center.add(remaining: .seconds(3), in: page)
        let ticks = Recorder()
        let observation = try center.observe(page) { event in
            if case .tick(let tick) = event { ticks.append("page \(tick.time)") }
        }
        let all = try center.observeAll(every: .seconds(1)) { tick in ticks.append("all \(tick.time)") }
        // The grid of whole seconds since 1970: its first point after
        // Int64.min ns is 0.854775808 s later.
        try loop.advance(by: .seconds(1))
        #expect(ticks.all == ["page -9223372036000000000", "all -9223372036000000000"])
        // A re-sync back to the earliest time, with the observations on,
        // plans their ticks from Int64.min again.
        try clock.sync(with: TimeSample(
            serverTime: .nanoseconds(Int64.min), sentAt: loop.now(.boot), receivedAt: loop.now(.boot)))
        try loop.advance(by: .seconds(1))
        #expect(ticks.all.count == 4)
        observation.cancel()
        all.cancel()
        #expect(!center.isTicking)
    }

    @Test("moving an end keeps the handle: the old end fires nothing, an observer ticks at once and hears the new end once, also after moving back")
    func movedEnd() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(1_000))
        let center = try CountdownCenter(loop: loop)
        let events = Recorder()
        center.onEnd { end in events.append("end \(end.countdown) at \(secs(loop.now(.boot).offset))") }
        let moved = center.add(endingAt: BootClock.Instant(offset: .seconds(1_010)))
        let other = center.add(endingAt: BootClock.Instant(offset: .seconds(1_030)))
        let observation = try center.observe(moved, every: .seconds(10)) { event in
            if case .tick(let tick) = event { events.append("tick \(tick.value) at \(secs(loop.now(.boot).offset))") }
        }
        try loop.advance(by: .seconds(5))
        #expect(center.moveEnd(of: moved, to: BootClock.Instant(offset: .seconds(1_040))))
        #expect(center.remaining(moved) == .seconds(35))
        try loop.advance(by: .seconds(20))  // past the old end: nothing ends
        #expect(center.contains(moved))
        // Back to an earlier end than the one before: its first entry names it again.
        #expect(center.moveEnd(of: moved, to: BootClock.Instant(offset: .seconds(1_028))))
        try loop.advance(by: .seconds(20))
        #expect(!center.moveEnd(of: moved, to: BootClock.Instant(offset: .seconds(2_000))))
        #expect(!center.contains(moved))
        #expect(!center.contains(other))
        #expect(events.all == [
            "tick 4 at 1005", "tick 3 at 1010", "tick 2 at 1020", "tick 1 at 1025",
            "end \(moved) at 1028", "end \(other) at 1030",
        ])
        observation.cancel()
        #expect(center.count == 0)
    }

    @Test("after an end moved by whole steps, with other observations queued, each value ticks once")
    func movedEndTicksOnce() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(1_000))
        let center = try CountdownCenter(loop: loop)
        let log = Recorder()
        let moved = center.add(endingAt: BootClock.Instant(offset: .seconds(1_100)))
        let observation = try center.observe(moved, every: .seconds(10)) { event in
            let at = secs(loop.now(.boot).offset - .seconds(1_000))
            switch event {
            case .tick(let tick): log.append("\(at): \(tick.value)")
            case .ended(let end): log.append("\(at): ended, late \(secs(end.lateness))")
            }
        }
        // Another observation, so that the entry the move leaves behind is
        // not the first in the queue.
        let other = try center.observe(center.add(remaining: .seconds(105)), every: .seconds(10)) { _ in }
        try loop.advance(by: .seconds(10))
        #expect(log.all == ["10: 9"])
        log.clear()
        // Ten seconds later, on the same grid: its old next tick (at 20 s)
        // is a tick time of the new end too.
        #expect(center.moveEnd(of: moved, to: BootClock.Instant(offset: .seconds(1_110))))
        try loop.advance(by: .seconds(120))
        #expect(log.all == [
            "10: 10", "20: 9", "30: 8", "40: 7", "50: 6", "60: 5", "70: 4", "80: 3", "90: 2", "100: 1",
            "110: ended, late 0",
        ])
        observation.cancel()
        other.cancel()
    }

    @Test("a handler that runs the loop holds the center's events back until it returns; the next serve catches up")
    func nestedRunHoldsEventsBack() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(1_000))
        let center = try CountdownCenter(loop: loop)
        let log = Recorder()
        let modal = Locked(true)
        let a = center.add(endingAt: BootClock.Instant(offset: .seconds(1_010)))
        let b = center.add(endingAt: BootClock.Instant(offset: .seconds(1_010)))
        let first = try center.observe(a) { event in
            let isFirst = modal.withLock { first in
                defer { first = false }
                return first
            }
            guard case .tick = event, isFirst else { return }
            // A modal, run from the handler for 3 s.
            do { _ = try loop.run(mode: .tracking, for: .seconds(3)) } catch { log.append("modal: \(error)") }
        }
        let second = try center.observe(b) { event in
            let at = secs(loop.now(.boot).offset - .seconds(1_000))
            if case .tick(let tick) = event { log.append("\(at): \(tick.value), skipped \(tick.skipped)") }
        }
        // (A nested run needs an outer run: an advance refuses one.)
        _ = try loop.run(for: .seconds(5))
        #expect(log.all == ["4: 9, skipped 0", "4: 6, skipped 2", "5: 5, skipped 0"])
        first.cancel()
        second.cancel()
    }

    @Test("an end moved twice at one instant ticks its observation once, with the last value")
    func movedTwiceTicksOnce() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(1_000))
        let center = try CountdownCenter(loop: loop)
        let events = Recorder()
        let countdown = center.add(endingAt: BootClock.Instant(offset: .seconds(1_010)))
        let observation = try center.observe(countdown) { event in
            if case .tick(let tick) = event { events.append("tick \(tick.value) at \(secs(loop.now(.boot).offset))") }
        }
        #expect(center.moveEnd(of: countdown, to: BootClock.Instant(offset: .seconds(1_020))))
        #expect(center.moveEnd(of: countdown, to: BootClock.Instant(offset: .seconds(1_030))))
        try loop.advance(by: .zero)
        #expect(events.all == ["tick 30 at 1000"])
        try loop.advance(by: .seconds(1))
        #expect(events.all == ["tick 30 at 1000", "tick 29 at 1001"])
        observation.cancel()
    }

    @Test("the next grid point after any time, against a 128-bit reference")
    func gridPoints() {
        func reference(step: Int64, now: Int64) -> Int64 {
            let step = Int128(step), now = Int128(now)
            var floor = now / step
            if now % step < 0 { floor -= 1 }
            let point = (floor + 1) * step
            return point > Int128(Int64.max) ? .max : Int64(point)
        }
        let steps: [Int64] = [1, 2, 3, 7, 1_000_000_000, 60_000_000_000, Int64.max / 2, Int64.max - 1, Int64.max]
        let times: [Int64] = [
            .min, .min + 1, .min + 2, -1_000_000_001, -1_000_000_000, -999_999_999, -3, -2, -1, 0, 1, 2, 3,
            999_999_999, 1_000_000_000, .max - 2, .max - 1, .max,
        ]
        for step in steps {
            for now in times {
                #expect(CenterState.nextGridPoint(step: step, now: now) == reference(step: step, now: now),
                        "step \(step), now \(now)")
            }
        }
    }
}
