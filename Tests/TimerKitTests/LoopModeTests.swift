import Testing
import TimerKit

// Run-loop modes: the carousel (a .common timer keeps firing while the loop
// runs .tracking; a .default one waits and fires once back in .default),
// custom modes and the loop's common modes.

@Suite("LoopMode")
struct LoopModeTests {
    @Test("carousel: a .common timer ticks in .tracking; a .default one waits and fires once")
    func carousel() throws {
        let loop = try TimerLoop.manual()
        let carousel = Locked<[String]>([])
        let plain = Locked<[String]>([])
        let common = try loop.schedule(after: .seconds(1), repeating: .seconds(1), in: .common) {
            _, missed in carousel.withLock { $0.append("\(missed)@\(loop.time)") }
        }
        let standard = try loop.schedule(after: .seconds(1), repeating: .seconds(1)) { _, missed in
            plain.withLock { $0.append("\(missed)@\(loop.time)") }
        }

        // The user scrolls for 5 seconds.
        #expect(try loop.advance(by: .seconds(5), mode: .tracking) == 5)
        #expect(carousel.value == (1...5).map { "0@\(Duration.seconds($0))" })
        #expect(plain.value.isEmpty)
        #expect(standard.isWaitingForMode)
        #expect(!common.isWaitingForMode)
        #expect(standard.fireDate?.offset == .seconds(1))

        // Back in .default: it fires once, at once, with the skipped fires counted.
        #expect(try loop.advance(by: .zero, mode: .default) == 1)
        #expect(plain.value == ["4@5.0 seconds"])
        #expect(!standard.isWaitingForMode)
        #expect(standard.fireDate?.offset == .seconds(6))
        try loop.advance(by: .seconds(1))
        #expect(plain.value == ["4@5.0 seconds", "0@6.0 seconds"])
        #expect(carousel.value.count == 6)
        common.invalidate()
        standard.invalidate()
        #expect(loop.statistics.pending == 0)
    }

    @Test("carousel on a real loop run in .tracking")
    func carouselOnRealLoop() throws {
        let loop = try TimerLoop()
        let carouselTicks = Locked(0)
        let plain = Locked<[UInt64]>([])
        let interval = Duration.milliseconds(5)
        let common = try loop.schedule(after: interval, repeating: interval, in: .common) { _, _ in
            carouselTicks.withLock { $0 += 1 }
        }
        let standard = try loop.schedule(after: interval, repeating: interval) { _, missed in
            plain.withLock { $0.append(missed) }
        }
        let result = try loop.run(mode: .tracking, until: MonotonicClock().now + .milliseconds(200))
        #expect(result == .timedOut)
        #expect(carouselTicks.value >= 1)
        #expect(plain.value.isEmpty, "a .default timer fired while the loop ran .tracking")

        // 200 ms after scheduling, at least 39 whole periods have passed since
        // the first fire date: it fires once, reporting them.
        #expect(try loop.runOnce(mode: .default, waiting: false) == .passed)
        #expect(plain.value.count == 1)
        #expect((plain.value.first ?? 0) >= 39)
        common.invalidate()
        standard.invalidate()
    }

    @Test("a timer in a custom mode fires only when the loop runs that mode")
    func customMode() throws {
        let loop = try TimerLoop.manual()
        let modal: LoopMode = "modal"
        let fired = Locked<[String]>([])
        try loop.schedule(after: .seconds(1), in: modal) { _, _ in
            fired.withLock { $0.append("modal@\(loop.time)") }
        }
        try loop.schedule(after: .seconds(1), in: .common) { _, _ in
            fired.withLock { $0.append("common@\(loop.time)") }
        }
        try loop.advance(by: .seconds(2), mode: .default)
        try loop.advance(by: .seconds(2), mode: .tracking)
        #expect(fired.value == ["common@1.0 seconds"])
        try loop.advance(by: .seconds(1), mode: modal)
        #expect(fired.value == ["common@1.0 seconds", "modal@4.0 seconds"])
        #expect(loop.statistics.pending == 0)
    }

    @Test("addCommonMode: timers in .common, added before or after, fire in the new mode; others wait")
    func addCommonMode() throws {
        let loop = try TimerLoop.manual()
        let modal = LoopMode("modal")
        let fired = Locked<[String]>([])
        let before = try loop.schedule(after: .seconds(1), in: .common) { _, _ in
            fired.withLock { $0.append("before") }
        }
        let plain = try loop.schedule(after: .seconds(1), in: .tracking) { _, _ in
            fired.withLock { $0.append("plain") }
        }
        try loop.addCommonMode(modal)
        #expect(before.fireDate?.offset == .seconds(1))
        try loop.schedule(after: .seconds(1), in: .common) { _, _ in
            fired.withLock { $0.append("after") }
        }
        try loop.advance(by: .seconds(2), mode: modal)
        #expect(fired.value == ["before", "after"])
        #expect(!before.isValid)
        #expect(plain.isWaitingForMode)
        try loop.advance(by: .zero, mode: .tracking)
        #expect(fired.value == ["before", "after", "plain"])
    }

    @Test("the carousel: a repeating timer in .common keeps turning in a mode made common after it")
    func carouselInLaterCommonMode() throws {
        let loop = try TimerLoop.manual()
        let turns = Locked(0)
        let skipped = Locked<[UInt64]>([])
        let carousel = try loop.schedule(after: .seconds(1), repeating: .seconds(1), in: .common) { _, missed in
            turns.withLock { $0 += 1 }
            skipped.withLock { $0.append(missed) }
        }
        try loop.advance(by: .seconds(2), mode: .default)
        #expect(turns.value == 2)
        let modal: LoopMode = "modal"
        try loop.addCommonMode(modal)
        try loop.advance(by: .seconds(3), mode: modal)
        #expect(turns.value == 5)
        #expect(skipped.value == [0, 0, 0, 0, 0])
        // Due while the loop ran a mode that is not common, it waits; made
        // common, the mode's next pass fires it once, with the turn it
        // skipped counted, and a one-shot beside it too.
        let sheet: LoopMode = "sheet"
        let waiting = try loop.schedule(after: .seconds(1), in: .common) { _, _ in }
        try loop.advance(by: .milliseconds(2500), mode: sheet)
        try loop.advance(by: .zero, mode: sheet)
        #expect(turns.value == 5)
        #expect(waiting.isWaitingForMode && carousel.isWaitingForMode)
        try loop.addCommonMode(sheet)
        try loop.advance(by: .zero, mode: sheet)
        #expect(turns.value == 6)
        #expect(skipped.value == [0, 0, 0, 0, 0, 1])
        #expect(!waiting.isValid)
        carousel.invalidate()
    }

    @Test("a frame ticker in .common delivers frames in a mode made common after it; one added to .common later too")
    func frameTickerInLaterCommonMode() throws {
        let loop = try TimerLoop.manual()
        let commonFrames = Locked(0)
        let laterFrames = Locked(0)
        let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 10), in: [.common]) { _, _ in
            commonFrames.withLock { $0 += 1 }
        }
        let later = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 10)) { _, _ in
            laterFrames.withLock { $0 += 1 }
        }
        let modal: LoopMode = "modal"
        try loop.addCommonMode(modal)
        try loop.advance(by: .milliseconds(300), mode: modal)
        #expect(commonFrames.value == 3)
        #expect(laterFrames.value == 0)
        try later.add(.common)
        let sheet: LoopMode = "sheet"
        try loop.addCommonMode(sheet)
        try loop.advance(by: .milliseconds(200), mode: sheet)
        #expect(commonFrames.value == 5)
        // Its frames waited: the latest of them at once, then one per period.
        #expect(laterFrames.value == 3)
        ticker.invalidate()
        later.invalidate()
    }

    @Test("adding a scheduled timer to another mode adds the mode and keeps its fire date")
    func addModeToScheduledTimer() throws {
        let loop = try TimerLoop.manual()
        let fired = Locked<[Duration]>([])
        let timer = try loop.schedule(after: .seconds(2), repeating: .seconds(2)) { _, _ in
            fired.withLock { $0.append(loop.time) }
        }
        try loop.advance(by: .seconds(3), mode: .tracking)
        // Nothing of .tracking woke the loop: only a pass finds the timer due.
        #expect(!timer.isWaitingForMode)
        try loop.advance(by: .zero, mode: .tracking)
        #expect(fired.value.isEmpty)
        #expect(timer.isWaitingForMode)
        try loop.add(timer, forMode: .tracking)
        #expect(timer.fireDate?.offset == .seconds(2))
        // Adding the mode it already has changes nothing.
        try loop.add(timer, forMode: .default)
        #expect(timer.fireDate?.offset == .seconds(2))
        try loop.advance(by: .seconds(1), mode: .tracking)
        #expect(fired.value == [.seconds(3), .seconds(4)])
        try loop.advance(by: .seconds(2), mode: .default)
        #expect(fired.value == [.seconds(3), .seconds(4), .seconds(6)])
        timer.invalidate()
    }

    @Test("add(_:forMode: .common) schedules a timer in the common modes, as LoopTimer's example does")
    func addForCommonMode() throws {
        let loop = try TimerLoop.manual()
        let fired = Locked<[String]>([])
        let timer = try LoopTimer(after: .seconds(1), repeating: .seconds(1)) { _, _ in
            fired.withLock { $0.append("\(loop.time)") }
        }
        try loop.add(timer, forMode: .common)
        #expect(timer.fireDate?.offset == .seconds(1))
        try loop.advance(by: .seconds(1), mode: .tracking)
        try loop.advance(by: .seconds(1), mode: .default)
        #expect(fired.value == ["1.0 seconds", "2.0 seconds"])
        timer.invalidate()
    }

    @Test("modes are named by strings: equal names are the same mode")
    func modeNames() {
        let literal: LoopMode = "tracking"
        #expect(literal == .tracking)
        #expect(LoopMode("x") != LoopMode("y"))
        #expect(LoopMode.default.description == "default")
        #expect(LoopMode.common.name == "common")
    }

    @Test("a mode named \"default\", however made, is .default: equal, hashed alike, and served by a .default run")
    func defaultByName() throws {
        let named = LoopMode("default")
        let literal: LoopMode = "default"
        #expect(named == .default && literal == .default)
        #expect(Set([LoopMode.default, named, literal, .tracking, "tracking"]).count == 2)
        let loop = try TimerLoop.manual()
        let fired = Locked<[String]>([])
        for (label, mode) in [("named", named), ("literal", literal), ("built-in", LoopMode.default)] {
            try loop.schedule(after: .seconds(1), in: mode) { _, _ in fired.withLock { $0.append(label) } }
        }
        try loop.advance(by: .seconds(1), mode: .tracking)
        #expect(fired.value.isEmpty)
        try loop.advance(by: .zero, mode: named)
        #expect(fired.value == ["named", "literal", "built-in"])
    }

    @Test("a drag played on a manual loop: a nested run in .tracking with a deadline moves time")
    func dragOnManualLoop() throws {
        // The sample of the RunLoopModes article, checked.
        let loop = try TimerLoop.manual()
        let log = Locked<[String]>([])
        let carousel = try loop.schedule(after: .seconds(1), repeating: .seconds(1), in: .common) {
            _, missed in log.withLock { $0.append("carousel \(missed) @\(loop.time)") }
        }
        let badge = try loop.schedule(after: .seconds(1), repeating: .seconds(1)) { _, missed in
            log.withLock { $0.append("badge \(missed) @\(loop.time)") }
        }
        let drag = Locked<TimerLoop.RunResult?>(nil)
        try loop.schedule(after: .milliseconds(500)) { _, _ in
            let result = try? loop.run(mode: .tracking, for: .seconds(3))
            drag.withLock { $0 = result }
        }
        #expect(try loop.run(for: .seconds(5)) == .timedOut)
        #expect(drag.value == .timedOut)
        #expect(loop.time == .seconds(5))
        #expect(log.value == [
            "carousel 0 @1.0 seconds", "carousel 0 @2.0 seconds", "carousel 0 @3.0 seconds",
            "badge 2 @3.5 seconds",
            "carousel 0 @4.0 seconds", "badge 0 @4.0 seconds",
            "carousel 0 @5.0 seconds", "badge 0 @5.0 seconds",
        ])
        carousel.invalidate()
        badge.invalidate()
    }

    @Test("a repeating timer whose action runs the loop in its own mode does not re-enter itself")
    func modalRunInOwnMode() throws {
        // A modal loop run from a timer's action, in the same mode: the
        // nested run fires other timers, never this one while its action
        // runs (before, each nested pass re-entered it, down to a stack
        // overflow). It fires once afterwards, with the skipped periods.
        let loop = try TimerLoop.manual()
        let depth = Locked((now: 0, most: 0))
        let log = Locked<[String]>([])
        let other = try loop.schedule(after: .milliseconds(15), repeating: .milliseconds(20)) {
            _, _ in log.withLock { $0.append("other @\(loop.time)") }
        }
        let modal = try loop.schedule(after: .milliseconds(10), repeating: .milliseconds(10)) {
            _, missed in
            depth.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
            log.withLock { $0.append("modal \(missed) @\(loop.time)") }
            if log.value.count == 1 { _ = try? loop.run(for: .milliseconds(55)) }
            depth.withLock { $0.now -= 1 }
        }
        #expect(try loop.run(for: .milliseconds(10)) == .timedOut)
        #expect(depth.value.most == 1)
        #expect(loop.time == .milliseconds(65))
        #expect(try loop.advance(by: .zero) == 1)
        #expect(log.value == [
            "modal 0 @0.01 seconds",
            "other @0.015 seconds", "other @0.035 seconds", "other @0.055 seconds",
            "modal 4 @0.065 seconds",
        ])
        #expect(depth.value.most == 1)
        modal.invalidate()
        other.invalidate()
    }

    @Test("on a manual loop a run without a deadline does not move time; stop ends it")
    func manualRunWithoutDeadline() throws {
        let loop = try TimerLoop.manual()
        try loop.schedule(after: .zero) { _, _ in loop.stop() }
        try loop.schedule(after: .seconds(1)) { _, _ in Issue.record("time moved") }
        #expect(try loop.run() == .stopped)
        #expect(loop.time == .zero)
        #expect(try loop.run(for: .zero) == .timedOut)
        #expect(loop.statistics.pending == 1)
    }
}
