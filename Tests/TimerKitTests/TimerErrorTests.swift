import Testing
import TimerKit

// Every TimerError the API documents, and that a refused call changes nothing:
// timers already scheduled stay scheduled, with the same fire dates.

/// Timers scheduled before a refused call, to check that the call left them alone.
private struct Bystanders {
    let loop: TimerLoop
    let timers: [LoopTimer<MonotonicClock>]
    let fireDates: [MonotonicClock.Instant?]
    let pending: UInt64
    let start: Duration
    let fired = Locked<[String]>([])

    init(on loop: TimerLoop) throws {
        self.loop = loop
        start = loop.time
        let fired = fired
        timers = [
            try loop.schedule(after: .seconds(5)) { _, _ in fired.withLock { $0.append("one-shot") } },
            try loop.schedule(after: .seconds(2), repeating: .seconds(2), tolerance: .milliseconds(10),
                              in: .common) { _, _ in fired.withLock { $0.append("repeating") } },
            try loop.schedule(after: .seconds(3), in: .tracking) { _, _ in
                fired.withLock { $0.append("tracking") }
            },
        ]
        fireDates = timers.map(\.fireDate)
        pending = loop.statistics.pending
    }

    /// Checks that nothing changed.
    func expectUntouched(after call: String, sourceLocation: SourceLocation = #_sourceLocation) {
        #expect(timers.map(\.fireDate) == fireDates, "after \(call)", sourceLocation: sourceLocation)
        #expect(timers.allSatisfy { $0.isValid }, "after \(call)", sourceLocation: sourceLocation)
        #expect(loop.statistics.pending == pending, "after \(call)", sourceLocation: sourceLocation)
        #expect(fired.value.isEmpty, "after \(call)", sourceLocation: sourceLocation)
    }

    /// On a manual loop: checks that they still fire as scheduled.
    func expectStillFire() throws {
        try loop.advance(by: start + .milliseconds(5500) - loop.time)
        #expect(fired.value == ["repeating", "repeating", "one-shot"])
        try loop.advance(by: .zero, mode: .tracking)
        #expect(fired.value == ["repeating", "repeating", "one-shot", "tracking"])
        for timer in timers { timer.invalidate() }
    }
}

@Suite("TimerError")
struct TimerErrorTests {
    @Test("invalidInterval: a repeating interval must be at least 1 ns, and one-shots have none")
    func invalidInterval() throws {
        let loop = try TimerLoop.manual()
        let bystanders = try Bystanders(on: loop)
        // Below a nanosecond the core would see 0, which means "one-shot".
        let intervals = [
            Duration.zero, .nanoseconds(-1), .seconds(-5), .nanoseconds(1) / 2,
            Duration(secondsComponent: 0, attosecondsComponent: 1),
            Duration(secondsComponent: 0, attosecondsComponent: 999_999_999),
        ]
        for interval in intervals {
            #expect(throws: TimerError.invalidInterval(interval)) {
                try LoopTimer(after: .seconds(1), repeating: interval) { _, _ in }
            }
            #expect(throws: TimerError.invalidInterval(interval)) {
                try LoopTimer(fireAt: at(.seconds(1)), repeating: interval) { _, _ in }
            }
            #expect(throws: TimerError.invalidInterval(interval)) {
                try TimerTicks(every: interval, on: loop)
            }
            #expect(throws: TimerError.invalidInterval(interval)) {
                try loop.schedule(after: .seconds(1), repeating: interval) { _, _ in }
            }
            #expect(throws: TimerError.invalidInterval(interval)) {
                try bystanders.timers[1].setInterval(interval)
            }
            bystanders.expectUntouched(after: "interval \(interval)")
        }
        #expect(throws: TimerError.notRepeating) {
            try bystanders.timers[0].setInterval(.seconds(1))
        }
        #expect(bystanders.timers[0].interval == nil)
        #expect(bystanders.timers[1].interval == .seconds(2))
        bystanders.expectUntouched(after: "setInterval on a one-shot")
        try bystanders.expectStillFire()
    }

    @Test("negativeTolerance: a tolerance must not be negative")
    func negativeTolerance() throws {
        let loop = try TimerLoop.manual()
        let bystanders = try Bystanders(on: loop)
        let tolerance = Duration.milliseconds(-1)
        #expect(throws: TimerError.negativeTolerance(tolerance)) {
            try LoopTimer(after: .seconds(1), tolerance: tolerance) { _, _ in }
        }
        #expect(throws: TimerError.negativeTolerance(tolerance)) {
            try loop.schedule(after: .seconds(1), repeating: .seconds(1), tolerance: tolerance) { _, _ in }
        }
        for timer in bystanders.timers {
            #expect(throws: TimerError.negativeTolerance(tolerance)) { try timer.setTolerance(tolerance) }
        }
        #expect(bystanders.timers[1].tolerance == .milliseconds(10))
        bystanders.expectUntouched(after: "negative tolerances")
        try bystanders.expectStillFire()
    }

    @Test("invalidated: an invalidated or finished timer cannot be scheduled or changed")
    func invalidated() throws {
        let loop = try TimerLoop.manual()
        let bystanders = try Bystanders(on: loop)
        let unscheduled = try LoopTimer(after: .seconds(1), repeating: .seconds(1)) { _, _ in }
        unscheduled.invalidate()
        let cancelled = try loop.schedule(after: .seconds(1), repeating: .seconds(1)) { _, _ in }
        cancelled.invalidate()
        let pending = loop.statistics.pending
        for timer in [unscheduled, cancelled] {
            #expect(throws: TimerError.invalidated) { try loop.add(timer) }
            #expect(throws: TimerError.invalidated) { try loop.add(timer, in: [.tracking, .common]) }
            #expect(throws: TimerError.invalidated) { try timer.setFireDate(at(.seconds(3))) }
            #expect(throws: TimerError.invalidated) { try timer.setTolerance(.seconds(1)) }
            #expect(throws: TimerError.invalidated) { try timer.setInterval(.seconds(1)) }
            #expect(!timer.isValid)
            #expect(timer.fireDate == nil)
        }
        #expect(loop.statistics.pending == pending)
        bystanders.expectUntouched(after: "calls on invalidated timers")

        let other = try TimerLoop.manual()
        let oneShot = try other.schedule(after: .seconds(1)) { _, _ in }
        try other.advance(by: .seconds(1))
        #expect(throws: TimerError.invalidated) { try other.add(oneShot) }
        #expect(throws: TimerError.invalidated) { try oneShot.setFireDate(at(.seconds(9))) }
        #expect(other.statistics.pending == 0)
        try bystanders.expectStillFire()
    }

    @Test("scheduledOnAnotherLoop: a timer belongs to one loop")
    func scheduledOnAnotherLoop() throws {
        let loop = try TimerLoop.manual()
        let other = try TimerLoop.manual()
        let bystanders = try Bystanders(on: loop)
        for timer in bystanders.timers {
            #expect(throws: TimerError.scheduledOnAnotherLoop) { try other.add(timer) }
            #expect(throws: TimerError.scheduledOnAnotherLoop) { try other.add(timer, forMode: .tracking) }
        }
        #expect(other.statistics.pending == 0)
        bystanders.expectUntouched(after: "adding to another loop")
        // Nothing was added on the other loop either.
        try other.advance(by: .seconds(10), mode: .tracking)
        try other.advance(by: .seconds(10))
        #expect(other.statistics.fired == 0)
        try bystanders.expectStillFire()
    }

    @Test("busy: running a loop another thread runs")
    func busyFromTwoThreads() throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let running = Locked(false)
        try loop.schedule(after: .zero) { _, _ in running.withLock { $0 = true } }
        #expect(waitUntil { running.value })
        // The loop's thread is inside run now, and stays there until stop().
        let bystander = try loop.schedule(after: .seconds(3600)) { _, _ in }
        let fireDate = bystander.fireDate
        #expect(throws: TimerError.busy) { try loop.runOnce(waiting: false) }
        #expect(throws: TimerError.busy) {
            try loop.run(mode: .tracking, until: MonotonicClock().now + .milliseconds(1))
        }
        #expect(bystander.isValid)
        #expect(bystander.fireDate == fireDate)
        // Scheduling from another thread is not refused.
        let fired = Locked(false)
        try loop.schedule(after: .milliseconds(1)) { _, _ in fired.withLock { $0 = true } }
        #expect(waitUntil { fired.value })
        bystander.invalidate()
    }

    @Test("busy: advancing a manual loop from inside one of its actions")
    func busyFromAction() throws {
        let loop = try TimerLoop.manual()
        let bystanders = try Bystanders(on: loop)
        let results = Locked<[String]>([])
        let probe: LoopTimer<MonotonicClock>.Action = { _, _ in
            do throws(TimerError) {
                try loop.advance(by: .seconds(1))
                results.withLock { $0.append("advanced") }
            } catch {
                results.withLock { $0.append("\(error == .busy ? "busy" : "\(error)")@\(loop.time)") }
            }
        }
        try loop.schedule(after: .seconds(1), probe)
        // Also from an action run by fire().
        let byHand = try loop.schedule(after: .seconds(100), repeating: .seconds(100), probe)
        byHand.fire()
        #expect(results.value == ["busy@0.0 seconds"])
        #expect(try loop.advance(by: .seconds(1)) == 1)
        #expect(results.value == ["busy@0.0 seconds", "busy@1.0 seconds"])
        #expect(loop.time == .seconds(1))
        byHand.invalidate()
        try bystanders.expectStillFire()
    }

    @Test("a text shows a string it carries quoted, escaped and cut: a newline or a long name cannot break it")
    func quotedStrings() {
        #expect(ErrorText.quoted("") == #""""#)
        #expect(ErrorText.quoted("a\n\"b\"\u{7}") == #""a\n\"b\"\u{07}""#)
        // Beyond ASCII's controls, what String(reflecting:) leaves as it is:
        // NEL, a C1 CSI, the line and paragraph separators, a bidirectional
        // override; what shows is left as it is.
        #expect(ErrorText.quoted("a\u{85}\u{9B}2J\u{2028}\u{2029}\u{202E}é中") == #""a\u{85}\u{9B}2J\u{2028}\u{2029}\u{202E}é中""#)
        #expect(ErrorText.quoted(String(repeating: "x", count: 40)) == "\"" + String(repeating: "x", count: 40) + "\"")
        #expect(ErrorText.quoted(String(repeating: "x", count: 41)) == "\"" + String(repeating: "x", count: 40) + "\"…")
        // Cut in Unicode scalars: one character of 100,001 of them.
        let accented = ErrorText.quoted("e" + String(repeating: "\u{301}", count: 100_000), limit: 3)
        #expect(accented == "\"e\u{301}\u{301}\"…")
        let newline = TimerError.tooManyModes(LoopMode("mode\nname")).description
        #expect(newline.hasSuffix(#"cannot add mode "mode\nname""#), "\(newline)")
        let long = TimerError.notARunMode(LoopMode(String(repeating: "\n", count: 1_000_000))).description
        #expect(long.utf8.count < 200 && long.hasPrefix(#""\n\n"#) && !long.contains("\n"), "\(long.utf8.count) bytes")
    }

    @Test("tooManyModes: a loop tells apart 31 modes")
    func tooManyModes() throws {
        let loop = try TimerLoop.manual()
        let bystanders = try Bystanders(on: loop)
        // .default and .tracking are two; twenty-nine more fit.
        let modes = (0..<29).map { LoopMode("mode \($0)") }
        for (index, mode) in modes.enumerated() {
            if index % 2 == 0 {
                try loop.advance(by: .zero, mode: mode)
            } else {
                try loop.addCommonMode(mode)
            }
        }
        let extra = LoopMode("one too many")
        let unscheduled = try LoopTimer(after: .seconds(1)) { _, _ in }
        #expect(throws: TimerError.tooManyModes(extra)) { try loop.advance(by: .zero, mode: extra) }
        #expect(throws: TimerError.tooManyModes(extra)) { try loop.addCommonMode(extra) }
        #expect(throws: TimerError.tooManyModes(extra)) { try loop.runOnce(mode: extra, waiting: false) }
        #expect(throws: TimerError.tooManyModes(extra)) {
            try loop.schedule(after: .seconds(1), in: extra) { _, _ in }
        }
        #expect(throws: TimerError.tooManyModes(extra)) { try loop.add(unscheduled, in: [.default, extra]) }
        #expect(throws: TimerError.tooManyModes(extra)) { try loop.add(unscheduled, forMode: extra) }
        #expect(throws: TimerError.tooManyModes(extra)) { try loop.add(bystanders.timers[0], forMode: extra) }
        #expect(unscheduled.isValid)
        #expect(unscheduled.fireDate == nil)
        #expect(loop.time == .zero)
        bystanders.expectUntouched(after: "a 32nd mode")
        // The 31 known modes still work, and so does the refused timer.
        try loop.advance(by: .zero, mode: modes[28])
        try loop.add(unscheduled, forMode: modes[28])
        #expect(unscheduled.fireDate?.offset == .seconds(1))
        unscheduled.invalidate()
        try bystanders.expectStillFire()
    }

    @Test("a refused add names no mode: the loop's last free mode stays free")
    func refusedAddNamesNoMode() throws {
        let loop = try TimerLoop.manual()
        let other = try TimerLoop.manual()
        // .default, .tracking and 28 named: one mode is left.
        for index in 0..<28 { try loop.advance(by: .zero, mode: LoopMode("mode \(index)")) }
        let dead = try LoopTimer(after: .seconds(1)) { _, _ in }
        dead.invalidate()
        let elsewhere = try other.schedule(after: .seconds(1)) { _, _ in }
        let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 60)) { _, _ in }
        ticker.invalidate()
        #expect(throws: TimerError.invalidated) { try loop.add(dead, forMode: "refused 1") }
        #expect(throws: TimerError.invalidated) { try loop.add(dead, in: [.default, "refused 2"]) }
        #expect(throws: TimerError.scheduledOnAnotherLoop) { try loop.add(elsewhere, forMode: "refused 3") }
        #expect(throws: TimerError.invalidated) { try ticker.add("refused 4") }
        // A list refused for its second new mode names neither; an advance
        // refused for a negative span names its mode no more.
        let fresh = try LoopTimer(after: .seconds(1)) { _, _ in }
        #expect(throws: TimerError.tooManyModes("refused 6")) { try loop.add(fresh, in: ["refused 5", "refused 6"]) }
        #expect(fresh.fireDate == nil)
        #expect(throws: TimerError.system(SystemError(errno: .invalidArgument, function: "tk_loop_advance"))) {
            try loop.advance(by: .nanoseconds(-1), mode: "refused 7")
        }
        // The last mode is still there for a timer that can take it.
        let last = LoopMode("the last one")
        let taken = try loop.schedule(after: .seconds(1), in: last) { _, _ in }
        #expect(throws: TimerError.tooManyModes("one too many")) { try loop.advance(by: .zero, mode: "one too many") }
        #expect(try loop.advance(by: .seconds(1), mode: last) == 1)
        #expect(!taken.isValid)
        elsewhere.invalidate()
    }

    @Test("a refused add on a real loop names no mode")
    func refusedAddOnARealLoopNamesNoMode() throws {
        let loop = try TimerLoop()
        for index in 0..<28 { try loop.addCommonMode(LoopMode("mode \(index)")) }
        let manualClock = try ManualClock()
        let manual = try LoopTimer(after: .seconds(1), clock: manualClock) { _, _ in }
        #expect(throws: TimerError.notManual) { try loop.add(manual, forMode: "refused") }
        #expect(throws: TimerError.notManual) {
            try loop.schedule(after: .seconds(1), clock: manualClock, in: "refused 2") { _, _ in }
        }
        try loop.addCommonMode("the last one")
        #expect(throws: TimerError.tooManyModes("one too many")) { try loop.addCommonMode("one too many") }
    }

    @Test("notARunMode: a loop cannot run in .common")
    func notARunMode() throws {
        let loop = try TimerLoop.manual()
        let bystanders = try Bystanders(on: loop)
        #expect(throws: TimerError.notARunMode(.common)) { try loop.advance(by: .seconds(9), mode: .common) }
        #expect(throws: TimerError.notARunMode(.common)) { try loop.run(mode: .common) }
        #expect(throws: TimerError.notARunMode(.common)) { try loop.runOnce(mode: .common, waiting: false) }
        #expect(throws: TimerError.notARunMode(.common)) { try loop.addCommonMode(.common) }
        #expect(loop.time == .zero)
        bystanders.expectUntouched(after: "running .common")
        try bystanders.expectStillFire()

        let real = try TimerLoop()
        #expect(throws: TimerError.notARunMode(.common)) {
            try real.run(mode: .common, until: MonotonicClock().now + .milliseconds(1))
        }
    }

    @Test("notManual: only a manual loop's time can be moved")
    func notManual() throws {
        let loop = try TimerLoop()
        #expect(!loop.isManual)
        let timer = try loop.schedule(after: .seconds(3600)) { _, _ in }
        let fireDate = timer.fireDate
        #expect(throws: TimerError.notManual) { try loop.advance(by: .seconds(1)) }
        #expect(throws: TimerError.notManual) { try loop.setManualTime(to: at(.seconds(1))) }
        #expect(throws: TimerError.notManual) { try loop.setManualTime(to: BootClock.Instant(offset: .seconds(1))) }
        #expect(throws: TimerError.notManual) { try loop.setManualTime(to: WallClock.Instant(offset: .seconds(1))) }
        #expect(timer.fireDate == fireDate)
        #expect(loop.statistics.pending == 1)
        #expect(try TimerLoop.manual().isManual)
        timer.invalidate()
    }

    @Test("system: a negative advance and a manual clock moved backwards are EINVAL")
    func systemErrors() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(10))
        let bystanders = try Bystanders(on: loop)
        let advance = TimerError.system(SystemError(errno: .invalidArgument, function: "tk_loop_advance"))
        #expect(throws: advance) { try loop.advance(by: .nanoseconds(-1)) }
        // Less than a nanosecond below zero is negative too, not 0.
        #expect(throws: advance) { try loop.advance(by: Duration(secondsComponent: 0, attosecondsComponent: -1)) }
        #expect(throws: advance) { try loop.advance(by: .nanoseconds(-1) + Duration(secondsComponent: 0, attosecondsComponent: 1)) }
        let clock = try ManualClock()
        #expect(throws: advance) { try clock.advance(by: Duration(secondsComponent: 0, attosecondsComponent: -1)) }
        #expect(clock.now.offset == .zero)
        let setTime = TimerError.system(SystemError(errno: .invalidArgument, function: "tk_loop_set_manual_time"))
        #expect(throws: setTime) { try loop.setManualTime(to: at(.seconds(9))) }
        #expect(throws: setTime) { try loop.setManualTime(to: BootClock.Instant(offset: .seconds(9))) }
        #expect(loop.time == .seconds(10))
        bystanders.expectUntouched(after: "EINVAL")
        try bystanders.expectStillFire()
    }

    @Test("noModes: an empty list of modes has its own error, and changes nothing")
    func noModes() throws {
        let loop = try TimerLoop.manual()
        let bystanders = try Bystanders(on: loop)
        let unscheduled = try LoopTimer(after: .seconds(1)) { _, _ in }
        #expect(throws: TimerError.noModes) { try loop.add(unscheduled, in: []) }
        #expect(throws: TimerError.noModes) { try loop.add(bystanders.timers[0], in: []) }
        #expect(unscheduled.isValid)
        #expect(unscheduled.fireDate == nil)
        bystanders.expectUntouched(after: "an empty mode list")
        try loop.add(unscheduled, in: [.default])
        #expect(unscheduled.fireDate?.offset == .seconds(1))
        unscheduled.invalidate()
        try bystanders.expectStillFire()
    }

    @Test("every error says what went wrong")
    func descriptions() {
        let errors: [TimerError] = [
            .invalidInterval(.seconds(-2)), .negativeTolerance(.milliseconds(-3)), .invalidated,
            .scheduledOnAnotherLoop, .busy, .tooManyModes("modal"), .notARunMode(.common), .notManual,
            .system(SystemError(errno: .noMemory, function: "tk_loop_schedule")), .noModes,
            .notRepeating, .iteratorInUse, .unbalancedResume, .cancelled,
            .realtimePriorityNotPermitted, .invalidMonitorSetting(.zero),
            .invalidFrameRate(FrameRateRange(fixed: 0)), .invalidPrecision(LoopPrecision(realtimePriority: 100)),
            .fakedClock(.boot),
        ]
        let descriptions = errors.map(\.description)
        #expect(Set(descriptions).count == errors.count)
        #expect(descriptions[0].contains("-2.0 seconds"))
        #expect(descriptions[5].contains("modal"))
        #expect(descriptions[6].contains("common"))
        #expect(descriptions[8] == "tk_loop_schedule failed: Cannot allocate memory (ENOMEM)")
        #expect(descriptions[18].hasPrefix("the boot clock this process reads is not the kernel's"))
        #expect(descriptions[18].hasSuffix("run it with FAKETIME_DONT_FAKE_MONOTONIC=1, which fakes only the wall clock"))
    }
}
