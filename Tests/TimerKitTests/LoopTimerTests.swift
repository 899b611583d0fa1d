import Dispatch
import Glibc
import Testing
import TimerKit

// LoopTimer scenarios: ordering, ownership (weak targets, [weak self]), fire()
// by hand, never firing at creation or early, and the setters. Exact timing
// is checked on manual loops; real loops are checked only for "never early"
// and "fired".

/// An object that owns a repeating closure timer capturing it weakly.
private final class Ticker: @unchecked Sendable {
    let ticks = Locked(0)
    var timer: LoopTimer<MonotonicClock>?
    let invalidatesOnDeinit: Bool
    let onDeinit: @Sendable () -> Void

    init(loop: TimerLoop, invalidatesOnDeinit: Bool, onDeinit: @escaping @Sendable () -> Void)
        throws
    {
        self.invalidatesOnDeinit = invalidatesOnDeinit
        self.onDeinit = onDeinit
        timer = try loop.schedule(after: .seconds(1), repeating: .seconds(1)) {
            [weak self] timer, _ in
            guard let self else { return timer.invalidate() }
            self.ticks.withLock { $0 += 1 }
        }
    }

    deinit {
        onDeinit()
        if invalidatesOnDeinit { timer?.invalidate() }
    }
}

@Suite("LoopTimer")
struct LoopTimerTests {
    @Test("timers fire in deadline order, each at its own time, repeating ones on their grid")
    func firesInDeadlineOrder() throws {
        let loop = try TimerLoop.manual()
        let log = Locked<[String]>([])
        try loop.schedule(after: .seconds(2)) { _, _ in
            log.withLock { $0.append("b@\(loop.time)") }
        }
        try loop.schedule(after: .seconds(1)) { _, _ in
            log.withLock { $0.append("a@\(loop.time)") }
        }
        let repeating = try loop.schedule(after: .seconds(1), repeating: .seconds(1)) { _, missed in
            log.withLock { $0.append("r\(missed)@\(loop.time)") }
        }
        #expect(loop.statistics.pending == 3)
        #expect(try loop.advance(by: .milliseconds(2500)) == 4)
        // Equal deadlines fire in scheduling order.
        #expect(log.value == ["a@1.0 seconds", "r0@1.0 seconds", "b@2.0 seconds", "r0@2.0 seconds"])
        #expect(loop.time == .milliseconds(2500))
        #expect(repeating.fireDate?.offset == .seconds(3))
        #expect(loop.statistics.pending == 1)
        repeating.invalidate()
        #expect(!repeating.isValid)
        #expect(repeating.fireDate == nil)
        #expect(loop.statistics.pending == 0)
    }

    @Test("a one-shot timer is invalid once it has fired, and the loop lets it go")
    func oneShotIsDoneAfterFiring() throws {
        let loop = try TimerLoop.manual()
        weak var weakTimer: LoopTimer<MonotonicClock>?
        let fired = Locked(0)
        do {
            let timer = try loop.schedule(after: .seconds(1)) { _, _ in fired.withLock { $0 += 1 } }
            weakTimer = timer
        }
        // Only the loop holds it now.
        #expect(weakTimer != nil)
        #expect(weakTimer?.isValid == true)
        #expect(weakTimer?.fireDate?.offset == .seconds(1))
        try loop.advance(by: .seconds(1))
        #expect(fired.value == 1)
        #expect(weakTimer == nil, "the loop still holds a one-shot timer that fired")
        #expect(loop.statistics.pending == 0)
        try loop.advance(by: .seconds(10))
        #expect(fired.value == 1)
    }

    @Test("an owner with a weak-target timer deinitialises while the timer is scheduled")
    func weakTargetOwnerGoesAway() throws {
        let loop = try TimerLoop.manual()
        let gone = Locked(false)
        let calls = Locked<[UInt64]>([])
        var owner: Watched? = Watched { gone.withLock { $0 = true } }
        let timer = try LoopTimer(after: .seconds(1), repeating: .seconds(1), target: owner!) {
            _, _, missed in calls.withLock { $0.append(missed) }
        }
        owner!.timer = timer
        try loop.add(timer, in: [.common])
        try loop.advance(by: .seconds(3))
        #expect(calls.value == [0, 0, 0])
        #expect(loop.statistics.pending == 1)

        owner = nil  // its deinit invalidates the timer, as the documentation shows
        #expect(gone.value, "the timer kept its target alive")
        #expect(!timer.isValid)
        #expect(timer.fireDate == nil)
        #expect(loop.statistics.pending == 0)
        try loop.advance(by: .seconds(5))
        #expect(calls.value == [0, 0, 0])
    }

    @Test("a weak-target timer whose target is gone invalidates itself at its next fire")
    func weakTargetTimerInvalidatesItself() throws {
        let loop = try TimerLoop.manual()
        let gone = Locked(false)
        let calls = Locked(0)
        weak var weakTimer: LoopTimer<MonotonicClock>?
        do {
            let owner = Watched { gone.withLock { $0 = true } }
            owner.invalidatesTimerOnDeinit = false
            let timer = try LoopTimer(after: .seconds(1), repeating: .seconds(1), target: owner) {
                _, _, _ in calls.withLock { $0 += 1 }
            }
            owner.timer = timer
            weakTimer = timer
            try loop.add(timer)
            try loop.advance(by: .seconds(1))
            #expect(calls.value == 1)
        }
        #expect(gone.value, "the timer kept its target alive")
        #expect(weakTimer?.isValid == true, "nothing has told the timer yet")
        #expect(loop.statistics.pending == 1)
        try loop.advance(by: .seconds(1))
        #expect(calls.value == 1, "the action ran without its target")
        #expect(weakTimer == nil, "the timer was not freed after its target went away")
        #expect(loop.statistics.pending == 0)
    }

    @Test("a closure timer capturing [weak self] lets its owner go", arguments: [true, false])
    func weakSelfClosure(invalidatesOnDeinit: Bool) throws {
        let loop = try TimerLoop.manual()
        let gone = Locked(false)
        var ticker: Ticker? = try Ticker(loop: loop, invalidatesOnDeinit: invalidatesOnDeinit) {
            gone.withLock { $0 = true }
        }
        let ticks = ticker!.ticks
        weak let weakTimer = ticker!.timer
        try loop.advance(by: .milliseconds(3500))
        #expect(ticks.value == 3)
        ticker = nil
        #expect(gone.value, "the timer's closure kept its owner alive")
        if invalidatesOnDeinit {
            #expect(weakTimer == nil)
            #expect(loop.statistics.pending == 0)
        } else {
            #expect(loop.statistics.pending == 1)
            try loop.advance(by: .seconds(1))  // the next fire finds self gone
            #expect(weakTimer == nil)
            #expect(loop.statistics.pending == 0)
        }
        try loop.advance(by: .seconds(5))
        #expect(ticks.value == 3)
    }

    @Test("fire() runs a one-shot timer now, after which it is invalid")
    func fireOneShotByHand() throws {
        let loop = try TimerLoop.manual()
        let calls = Locked<[String]>([])
        let timer = try loop.schedule(after: .seconds(5)) { timer, missed in
            calls.withLock {
                $0.append("missed \(missed) at \(loop.time) valid \(timer.isValid) "
                    + "date \(String(describing: timer.fireDate))")
            }
        }
        try loop.advance(by: .seconds(1))
        timer.fire()
        // Inside its action the timer is already out of the loop.
        #expect(calls.value == ["missed 0 at 1.0 seconds valid true date nil"])
        #expect(!timer.isValid)
        #expect(timer.fireDate == nil)
        #expect(loop.statistics.pending == 0)
        #expect(loop.statistics.fired == 1)
        timer.fire()
        try loop.advance(by: .seconds(10))
        #expect(calls.value.count == 1)
        #expect(throws: TimerError.invalidated) { try loop.add(timer) }
    }

    @Test("fire() runs a repeating timer now and keeps its schedule")
    func fireRepeatingByHand() throws {
        let loop = try TimerLoop.manual()
        let calls = Locked<[String]>([])
        let timer = try loop.schedule(after: .seconds(2), repeating: .seconds(2)) { _, missed in
            calls.withLock { $0.append("\(missed)@\(loop.time)") }
        }
        try loop.advance(by: .seconds(1))
        timer.fire()
        timer.fire()
        #expect(calls.value == ["0@1.0 seconds", "0@1.0 seconds"])
        #expect(timer.isValid)
        #expect(timer.fireDate?.offset == .seconds(2))
        #expect(loop.statistics.pending == 1)
        try loop.advance(by: .seconds(3))
        #expect(calls.value == ["0@1.0 seconds", "0@1.0 seconds", "0@2.0 seconds", "0@4.0 seconds"])
        timer.invalidate()
        timer.fire()
        #expect(calls.value.count == 4)
    }

    @Test("fire() on a timer not added to any loop runs its action")
    func fireUnscheduled() throws {
        let loop = try TimerLoop.manual()
        let calls = Locked(0)
        let oneShot = try LoopTimer(after: .seconds(1)) { _, _ in calls.withLock { $0 += 1 } }
        oneShot.fire()
        #expect(calls.value == 1)
        #expect(!oneShot.isValid)
        #expect(throws: TimerError.invalidated) { try loop.add(oneShot) }

        let repeating = try LoopTimer(after: .seconds(1), repeating: .seconds(1)) { _, _ in
            calls.withLock { $0 += 1 }
        }
        repeating.fire()
        #expect(calls.value == 2)
        #expect(repeating.isValid)
        try loop.add(repeating)
        try loop.advance(by: .seconds(2))
        #expect(calls.value == 4)
        repeating.invalidate()
    }

    @Test("fire() on a one-shot on no loop ends it as the call begins: an add from its action is refused, and the loop never runs it too")
    func fireUnscheduledOneShotEndsFirst() throws {
        let loop = try TimerLoop.manual()
        let log = Locked<[String]>([])
        let oneShot = try LoopTimer(after: .zero) { timer, _ in
            log.withLock { $0.append("runs, valid: \(timer.isValid)") }
            do throws(TimerError) {
                try loop.add(timer)
                log.withLock { $0.append("added") }
            } catch {
                log.withLock { $0.append("add: \(error == .invalidated ? "invalidated" : "\(error)")") }
            }
            #expect(throws: TimerError.invalidated) { try timer.setFireDate(.now) }
        }
        oneShot.fire()
        try loop.advance(by: .seconds(1))
        #expect(log.value == ["runs, valid: false", "add: invalidated"])
        #expect(loop.statistics.pending == 0)

        // Two calls at once on another one-shot: one runs the action.
        let runs = Locked(0)
        let busy = try LoopTimer(after: .zero) { _, _ in
            runs.withLock { $0 += 1 }
            usleep(20_000)
        }
        DispatchQueue.concurrentPerform(iterations: 4) { _ in busy.fire() }
        #expect(runs.value == 1)
    }

    @Test("a timer fires its delay after being added, not after being created")
    func neverFiresAtCreationOnManualLoop() throws {
        let loop = try TimerLoop.manual()
        let fired = Locked<[Duration]>([])
        let timer = try LoopTimer(after: .milliseconds(5), repeating: .milliseconds(5)) { _, _ in
            fired.withLock { $0.append(loop.time) }
        }
        #expect(timer.fireDate == nil)
        try loop.advance(by: .milliseconds(100))
        #expect(fired.value.isEmpty)
        try loop.add(timer)
        #expect(timer.fireDate?.offset == .milliseconds(105))
        #expect(fired.value.isEmpty)
        try loop.advance(by: .milliseconds(4))
        #expect(fired.value.isEmpty)
        try loop.advance(by: .milliseconds(6))
        #expect(fired.value == [.milliseconds(105), .milliseconds(110)])
        timer.invalidate()

        // Zero and negative delays fire on the next advance, never inside schedule.
        let immediate = Locked(0)
        try loop.schedule(after: .zero) { _, _ in immediate.withLock { $0 += 1 } }
        try loop.schedule(after: .seconds(-3)) { _, _ in immediate.withLock { $0 += 1 } }
        #expect(immediate.value == 0)
        #expect(try loop.advance(by: .zero) == 2)
        #expect(immediate.value == 2)
    }

    @Test("on a real loop a 5 ms timer never fires before 5 ms, nor at creation")
    func neverFiresEarlyOnRealLoop() throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let delay = Duration.milliseconds(5)
        let fires = Locked<[String: [Duration]]>([:])
        func record(_ name: String) -> LoopTimer<MonotonicClock>.Action {
            { _, _ in fires.withLock { $0[name, default: []].append(loop.time) } }
        }

        // Created, then added 20 ms later: the delay counts from the add.
        let late = try LoopTimer(after: delay, record("late"))
        sleepThread(.milliseconds(20))
        let lateAdded = loop.time
        try loop.add(late)

        var starts: [String: Duration] = ["late": lateAdded]
        for round in 0..<20 {
            starts["once\(round)"] = loop.time
            try loop.schedule(after: delay, record("once\(round)"))
        }
        starts["repeat"] = loop.time
        let repeating = try loop.schedule(after: delay, repeating: delay, record("repeat"))

        let allFired = waitUntil {
            fires.withLock { fires in
                starts.keys.allSatisfy { fires[$0] != nil } && fires["repeat"]!.count >= 3
            }
        }
        repeating.invalidate()
        #expect(allFired, "not every timer fired within 30 s")
        for (name, times) in fires.value {
            let start = starts[name]!
            for (index, time) in times.enumerated() {
                let earliest = start + delay * (index + 1)
                #expect(time >= earliest, "\(name) fire \(index) at \(time - start) after adding")
            }
        }
    }

    @Test("on a real loop timers with tolerance never fire before their fire date")
    func toleranceNeverEarlyOnRealLoop() throws {
        let seed = testSeed()
        var rng = SeededGenerator(seed: seed)
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let count = 200
        let fires = Locked([[(time: Duration, missed: UInt64)]](repeating: [], count: count))
        var earliest: [Duration] = []
        var intervals: [Duration?] = []
        var timers: [LoopTimer<MonotonicClock>] = []
        for n in 0..<count {
            let delay = Duration.microseconds(rng.within(0...30_000))
            let tolerance = rng.chance(20) ? .zero : Duration.microseconds(rng.within(0...10_000))
            let interval = rng.chance(25) ? Duration.microseconds(rng.within(2_000...10_000)) : nil
            intervals.append(interval)
            earliest.append(loop.time + delay)
            timers.append(try loop.schedule(
                after: delay, repeating: interval, tolerance: tolerance, in: .common
            ) { _, missed in
                fires.withLock { $0[n].append((loop.time, missed)) }
            })
        }
        let allFired = waitUntil {
            fires.withLock { fires in
                fires.indices.allSatisfy { fires[$0].count >= (intervals[$0] == nil ? 1 : 3) }
            }
        }
        for timer in timers { timer.invalidate() }
        #expect(allFired, "not every timer fired within 30 s (seed \(seed))")
        for (n, times) in fires.value.enumerated() {
            if intervals[n] == nil { #expect(times.count == 1, "one-shot \(n) fired \(times.count) times") }
            // The k-th grid point is first + k * interval; a fire that skipped
            // `missed` points comes no earlier than the grid point it stands for.
            var point: Int64 = 0
            for (time, missed) in times {
                point += Int64(missed)
                let due = earliest[n] + (intervals[n] ?? .zero) * point
                #expect(time >= due, "timer \(n) fired \(due - time) early (seed \(seed))")
                point += 1
            }
        }
        #expect(loop.statistics.pending == 0)
    }

    @Test("setTolerance and setInterval keep the fire date; setInterval moves the grid after it")
    func settersKeepFireDate() throws {
        let loop = try TimerLoop.manual()
        let times = Locked<[Duration]>([])
        let timer = try loop.schedule(after: .seconds(1), repeating: .seconds(1)) { _, _ in
            times.withLock { $0.append(loop.time) }
        }
        try loop.advance(by: .milliseconds(1500))
        #expect(timer.fireDate?.offset == .seconds(2))
        try timer.setTolerance(.milliseconds(300))
        #expect(timer.tolerance == .milliseconds(300))
        #expect(timer.fireDate?.offset == .seconds(2))
        try timer.setInterval(.seconds(3))
        #expect(timer.interval == .seconds(3))
        #expect(timer.fireDate?.offset == .seconds(2))
        try loop.advance(by: .milliseconds(4000))  // to 5.5 s
        // Fires at fire date + tolerance (alone, nothing to share a wake-up with).
        #expect(times.value == [.seconds(1), .milliseconds(2300), .milliseconds(5300)])
        #expect(timer.fireDate?.offset == .seconds(8))
        timer.invalidate()
    }

    @Test("setFireDate moves the next fire; from a one-shot's own action it schedules it again")
    func setFireDate() throws {
        let loop = try TimerLoop.manual()
        let times = Locked<[Duration]>([])
        let rounds = Locked(0)
        let oneShot = try loop.schedule(after: .seconds(1)) { timer, _ in
            times.withLock { $0.append(loop.time) }
            let again = rounds.withLock { $0 += 1; return $0 < 3 }
            if again { try? timer.setFireDate(loop.now(.monotonic) + .seconds(2)) }
        }
        try loop.advance(by: .seconds(20))
        #expect(times.value == [.seconds(1), .seconds(3), .seconds(5)])
        #expect(!oneShot.isValid)
        #expect(loop.statistics.pending == 0)

        let repeating = try loop.schedule(after: .seconds(1), repeating: .seconds(1)) { _, _ in
            times.withLock { $0.append(loop.time) }
        }
        try repeating.setFireDate(at(.milliseconds(20_500)))
        #expect(repeating.fireDate?.offset == .milliseconds(20_500))
        try loop.advance(by: .seconds(2))
        #expect(times.value.suffix(2) == [.milliseconds(20_500), .milliseconds(21_500)])
        repeating.invalidate()
        #expect(throws: TimerError.invalidated) { try repeating.setFireDate(at(.seconds(30))) }
    }

    @Test("a timer its action makes due at once again lets an advance or a run move time on")
    func dueAgainAtOnce() throws {
        for running in [false, true] {
            let loop = try TimerLoop.manual()
            let busyTimes = Locked<[Duration]>([])
            let otherTimes = Locked<[Duration]>([])
            try loop.schedule(after: .zero) { timer, _ in
                busyTimes.withLock { $0.append(loop.time) }
                try? timer.setFireDate(loop.now(.monotonic))
            }
            try loop.schedule(after: .seconds(1)) { _, _ in
                otherTimes.withLock { $0.append(loop.time) }
            }
            if running {
                try loop.run(for: .seconds(3))
            } else {
                try loop.advance(by: .seconds(3))
            }
            // 65 passes at 0 and at 1 s; then the run's last pass at 3 s.
            let busy = busyTimes.value
            #expect(busy.count(where: { $0 == .zero }) == 65)
            #expect(busy.count(where: { $0 == .seconds(1) }) == 65)
            #expect(busy.count(where: { $0 == .seconds(3) }) == (running ? 1 : 0))
            #expect(busy.count == 130 + (running ? 1 : 0))
            #expect(otherTimes.value == [.seconds(1)])
            #expect(loop.time == .seconds(3))
        }
    }

    @Test("a repeating timer's tolerance is used up to half its interval")
    func repeatingToleranceIsClamped() throws {
        let loop = try TimerLoop.manual()
        let times = Locked<[Duration]>([])
        let timer = try loop.schedule(
            after: .seconds(1), repeating: .seconds(1), tolerance: .seconds(10)
        ) { _, missed in
            #expect(missed == 0)
            times.withLock { $0.append(loop.time) }
        }
        #expect(timer.tolerance == .seconds(10))
        try loop.advance(by: .seconds(3))
        #expect(times.value == [.milliseconds(1500), .milliseconds(2500)])
        timer.invalidate()
    }

    @Test("a repeating timer that falls behind fires once and reports the skipped fires")
    func missedFires() throws {
        let loop = try TimerLoop.manual()
        let calls = Locked<[String]>([])
        let timer = try loop.schedule(after: .seconds(1), repeating: .seconds(1)) { _, missed in
            calls.withLock { $0.append("\(missed)@\(loop.time)") }
        }
        try timer.setFireDate(at(.milliseconds(-3500)))  // 3.5 s in the past: 3 whole periods
        try loop.advance(by: .zero)
        #expect(calls.value == ["3@0.0 seconds"])
        #expect(timer.fireDate?.offset == .milliseconds(500))
        timer.invalidate()
    }

    @Test("a deadline, delay or interval with a part of a nanosecond is due at the next whole nanosecond, never before")
    func partOfANanosecond() async throws {
        let loop = try TimerLoop.manual()
        let oneAndAHalf = Duration.nanoseconds(3) / 2
        let fired = Locked<[String: Duration]>([:])
        func record(_ name: String) -> LoopTimer<MonotonicClock>.Action {
            { _, _ in fired.withLock { $0[name] = loop.time } }
        }
        try loop.add(try LoopTimer(fireAt: at(oneAndAHalf), record("fire date")))
        try loop.schedule(after: oneAndAHalf, record("delay"))
        let moved = try loop.schedule(after: .seconds(1), record("moved"))
        try moved.setFireDate(at(oneAndAHalf))
        let ticks = Locked<[Duration]>([])
        let repeating = try loop.schedule(after: .nanoseconds(10), repeating: oneAndAHalf) { _, _ in
            ticks.withLock { $0.append(loop.time) }
        }
        #expect(repeating.interval == .nanoseconds(2))
        #expect(throws: TimerError.invalidInterval(.nanoseconds(1) / 2)) {
            try LoopTimer(after: .zero, repeating: .nanoseconds(1) / 2) { _, _ in }
        }

        let clock = try ManualClock()
        let sleeper = Task { try await clock.sleep(until: clock.now + oneAndAHalf); return clock.now }
        await clock.waitForSleepers(1)

        try loop.advance(by: .nanoseconds(1))
        try clock.advance(by: .nanoseconds(1))
        #expect(fired.value.isEmpty, "fired at 1 ns, before its deadline of 1.5 ns")
        #expect(clock.pendingSleeps == 1, "woke at 1 ns, before its deadline of 1.5 ns")
        try loop.advance(by: .nanoseconds(1))
        try clock.advance(by: .nanoseconds(1))
        #expect(fired.value == ["fire date": .nanoseconds(2), "delay": .nanoseconds(2), "moved": .nanoseconds(2)])
        #expect(try await sleeper.value == ManualClock.Instant(offset: .nanoseconds(2)))
        try loop.advance(by: .nanoseconds(12))
        #expect(ticks.value == [.nanoseconds(10), .nanoseconds(12), .nanoseconds(14)])
        repeating.invalidate()
        // A manual run moves time to its deadline, as an advance, never past it.
        try loop.run(until: at(loop.time + oneAndAHalf))
        #expect(loop.time == .nanoseconds(15))
    }
}
