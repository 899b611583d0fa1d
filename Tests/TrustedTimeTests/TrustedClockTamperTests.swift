import Synchronization
import Testing

import TimerKit
@testable import TrustedTime

/// Wall-clock change detection: the "user changed the device
/// clock" case, with scripted readings and with a manual TimerLoop standing in
/// for the kernel's TFD_TIMER_CANCEL_ON_SET report.
@Suite("TrustedClock wall-clock changes")
struct TrustedClockTamperTests {
    /// Collects what a clock reports.
    final class Recorder: Sendable {
        let changes = Mutex<[WallClockChange]>([])
        var all: [WallClockChange] { changes.withLock { $0 } }
        func attach(to clock: TrustedClock) {
            clock.onWallClockChange { change in self.changes.withLock { $0.append(change) } }
        }
    }

    @Test("the first sync reports a wall clock an hour behind the server")
    func firstSyncReportsOffset() throws {
        let readings = ScriptedReadings(wallError: .seconds(-3600))
        let clock = TrustedClock(readings: readings)
        let recorder = Recorder()
        recorder.attach(to: clock)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(2), inbound: .milliseconds(2)))
        let changes = recorder.all
        try #require(changes.count == 1)
        #expect(changes[0].cause == .sync)
        #expect(changes[0].change == .seconds(-3600))
        #expect(changes[0].offset == .seconds(-3600))
        #expect(changes[0].detectedAt.sinceEpoch == readings.truth)
        // Found by a sync: no refresh is asked for because of it.
        #expect(clock.refreshReason == nil)
        // Reported once: later checks and syncs see nothing new.
        readings.advance(by: .seconds(5))
        #expect(clock.checkWallClock() == nil)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(3), inbound: .milliseconds(3)))
        #expect(recorder.all.count == 1)
    }

    @Test("a wall clock that agrees within the threshold is not reported")
    func agreeingWallClock() throws {
        let readings = ScriptedReadings(wallError: .milliseconds(700))
        let clock = TrustedClock(readings: readings)
        let recorder = Recorder()
        recorder.attach(to: clock)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(2), inbound: .milliseconds(2)))
        #expect(clock.checkWallClock() == nil)
        #expect(recorder.all.isEmpty)
    }

    @Test("thresholds at the ends: a negative one is taken as 0, the longest one reports nothing and does not trap")
    func extremeThresholds() throws {
        let negative = TrustedClock(
            configuration: .init(wallClockChangeThreshold: .seconds(-5)), readings: ScriptedReadings())
        #expect(negative.configuration.wallClockChangeThreshold == .zero)

        let readings = ScriptedReadings(wallError: .seconds(-3600))
        let clock = TrustedClock(
            configuration: .init(wallClockChangeThreshold: Duration(attoseconds: .max)), readings: readings)
        #expect(clock.checkWallClock() == nil)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(2), inbound: .milliseconds(2)))
        readings.stepWall(by: .seconds(-86_400))
        #expect(clock.checkWallClock() == nil)
    }

    @Test("the wall clock set back an hour after the sync: a check reports it, and a refresh is due")
    func wallSetBackAfterSync() throws {
        let readings = ScriptedReadings()
        let clock = TrustedClock(readings: readings)
        let recorder = Recorder()
        recorder.attach(to: clock)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(2), inbound: .milliseconds(2)))
        #expect(recorder.all.isEmpty)
        readings.advance(by: .seconds(60))
        readings.stepWall(by: .seconds(-3600))
        readings.advance(by: .seconds(60))
        let change = try #require(clock.checkWallClock())
        #expect(change.cause == .check)
        #expect(change.change == .seconds(-3600))
        #expect(change.offset == .seconds(-3600))
        #expect(change.detectedAt.sinceEpoch == readings.truth)
        #expect(recorder.all == [change])
        #expect(clock.refreshReason == .wallClockChanged(change))
        // Trusted time did not move.
        #expect(clock.now.sinceEpoch == readings.truth)
        // Not reported twice; a sync clears the refresh.
        #expect(clock.checkWallClock() == nil)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(2), inbound: .milliseconds(2)))
        #expect(clock.refreshReason == nil)
        #expect(recorder.all.count == 1)
        // Set forward again by 90 minutes: +5400 s.
        readings.stepWall(by: .seconds(5400))
        #expect(clock.checkWallClock()?.change == .seconds(5400))
        #expect(clock.wallClockOffset == .seconds(1800))
    }

    @Test("small steps add up: the change is measured from the last accepted offset")
    func creepingSteps() throws {
        let readings = ScriptedReadings()
        let clock = TrustedClock(readings: readings)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(1), inbound: .milliseconds(1)))
        for _ in 0..<3 {
            readings.stepWall(by: .milliseconds(-300))
            #expect(clock.checkWallClock() == nil)
        }
        readings.stepWall(by: .milliseconds(-300))
        let change = try #require(clock.checkWallClock())
        #expect(change.change == .milliseconds(-1200))
    }

    @Test("a better sample moving server time is not a wall-clock change")
    func reanchoringIsNotAChange() throws {
        let readings = ScriptedReadings()
        let clock = TrustedClock(
            configuration: .init(wallClockChangeThreshold: .milliseconds(100)), readings: readings)
        let recorder = Recorder()
        recorder.attach(to: clock)
        // A poor first sample that is 300 ms off (asymmetric 600 ms path).
        try clock.sync(with: readings.exchange(outbound: .milliseconds(600), inbound: .zero))
        #expect(recorder.all.isEmpty)  // 300 ms < 100 ms + 300 ms of error bound
        // A good sample moves trusted time by 300 ms; the wall did not move.
        try clock.sync(with: readings.exchange(outbound: .milliseconds(1), inbound: .milliseconds(1)))
        #expect(recorder.all.isEmpty)
        #expect(clock.checkWallClock() == nil)
        readings.stepWall(by: .milliseconds(150))
        #expect(clock.checkWallClock()?.change == .milliseconds(150))
    }

    @Test("before any sync, a step is seen against the boot clock")
    func unsyncedStep() {
        let readings = ScriptedReadings()
        let clock = TrustedClock(readings: readings)
        #expect(clock.checkWallClock() == nil)  // records the baseline
        readings.advance(by: .seconds(10))
        readings.suspend(for: .seconds(100))  // a suspend is not a step
        #expect(clock.checkWallClock() == nil)
        readings.stepWall(by: .seconds(-3600))
        let change = clock.checkWallClock()
        #expect(change?.change == .seconds(-3600))
        #expect(change?.offset == nil)
        #expect(change?.detectedAt.source == .wallClockFallback)
        #expect(clock.refreshReason == .neverSynced)
    }

    @Test("every stream gets every change")
    func streams() async throws {
        let readings = ScriptedReadings(wallError: .seconds(-3600))
        let clock = TrustedClock(readings: readings)
        let first = clock.wallClockChanges()
        let second = clock.wallClockChanges()
        try clock.sync(with: readings.exchange(outbound: .milliseconds(1), inbound: .milliseconds(1)))
        readings.stepWall(by: .seconds(3600))
        clock.checkWallClock()
        var iterator1 = first.makeAsyncIterator()
        var iterator2 = second.makeAsyncIterator()
        let a1 = await iterator1.next(), a2 = await iterator1.next()
        let b1 = await iterator2.next(), b2 = await iterator2.next()
        #expect(a1?.cause == .sync && a1?.change == .seconds(-3600))
        #expect(a2?.cause == .check && a2?.change == .seconds(3600))
        #expect(a1 == b1 && a2 == b2)
    }

    @Test("a stream that ends leaves the clock")
    func streamEnds() async {
        let readings = ScriptedReadings()
        let clock = TrustedClock(readings: readings)
        let task = Task {
            for await _ in clock.wallClockChanges() {}
        }
        // Wait until the stream is registered, then cancel its consumer.
        while clock.state.withLock({ $0.streams.isEmpty }) { await Task.yield() }
        task.cancel()
        await task.value
        #expect(clock.state.withLock { $0.streams.isEmpty })
    }

    @Test("a monitored loop reports a wall-clock step at once (manual loop)")
    func monitorOnManualLoop() throws {
        let readings = ScriptedReadings()
        let clock = TrustedClock(readings: readings)
        let recorder = Recorder()
        recorder.attach(to: clock)
        try clock.sync(with: readings.exchange(outbound: .milliseconds(1), inbound: .milliseconds(1)))
        let loop = try TimerLoop.manual(startingAt: .seconds(100_000))
        let monitor = try clock.monitorWallClock(on: loop, checkingEvery: .seconds(60))
        // The "user" sets the clock back an hour; the kernel reports a step.
        readings.stepWall(by: .seconds(-3600))
        try loop.setManualTime(to: WallClock.Instant(offset: .seconds(100_000 - 3600)))
        try loop.advance(by: .zero)
        try #require(recorder.all.count == 1)
        #expect(recorder.all[0].cause == .clockStep)
        #expect(recorder.all[0].change == .seconds(-3600))
        // The periodic check sees the next step without a kernel report.
        readings.stepWall(by: .seconds(30))
        try loop.advance(by: .seconds(70))  // the timer's deadline plus its tolerance
        #expect(recorder.all.count == 2)
        #expect(recorder.all.last?.cause == .check)
        #expect(recorder.all.last?.change == .seconds(30))
        monitor.stop()
        readings.stepWall(by: .seconds(30))
        try loop.setManualTime(to: WallClock.Instant(offset: .seconds(200_000)))
        try loop.advance(by: .seconds(600))
        #expect(recorder.all.count == 2)
        #expect(loop.statistics.pending == 0)
    }

    /// Counts the calls of a loop's own wall-clock-change handler.
    final class StepCounter: Sendable {
        let count = Mutex(0)
        var calls: Int { count.withLock { $0 } }
        func install(on loop: TimerLoop) throws {
            try loop.onWallClockChange { self.count.withLock { $0 += 1 } }
        }
    }

    /// Steps a manual loop's wall clock by `step` and makes a pass, which
    /// calls its wall-clock-change handler.
    func stepWall(of loop: TimerLoop, by step: Duration) throws {
        try loop.setManualTime(to: loop.now(.wall) + step)
        try loop.advance(by: .zero)
    }

    @Test(
        "a monitor refused for its interval leaves the loop's own handler in place, and no timer",
        arguments: [Duration.zero, .nanoseconds(-1), .seconds(-60), Duration(attoseconds: 999_999_999)])
    func refusedMonitorKeepsHandler(interval: Duration) throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(100_000))
        let own = StepCounter()
        try own.install(on: loop)
        let clock = TrustedClock(readings: ScriptedReadings())
        #expect(throws: TimerError.invalidInterval(interval)) {
            try clock.monitorWallClock(on: loop, checkingEvery: interval)
        }
        try stepWall(of: loop, by: .seconds(3600))
        #expect(own.calls == 1)
        #expect(loop.statistics.pending == 0)
    }

    @Test("a stopped monitor leaves a handler set after it in place; stopping twice does nothing more")
    func stopKeepsALaterHandler() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(100_000))
        let readings = ScriptedReadings()
        let clock = TrustedClock(readings: readings)
        let recorder = Recorder()
        recorder.attach(to: clock)
        let monitor = try clock.monitorWallClock(on: loop, checkingEvery: .seconds(60))
        let own = StepCounter()
        try own.install(on: loop)  // replaces the monitor's handler
        monitor.stop()
        monitor.stop()
        try stepWall(of: loop, by: .seconds(3600))
        #expect(own.calls == 1)
        #expect(loop.statistics.pending == 0)

        // Its own handler, still in place at stop, is removed.
        let second = try clock.monitorWallClock(on: loop)
        readings.stepWall(by: .seconds(-3600))
        try stepWall(of: loop, by: .seconds(-3600))
        #expect(own.calls == 1)
        #expect(recorder.all.last?.cause == .clockStep)
        let reported = recorder.all.count
        second.stop()
        readings.stepWall(by: .seconds(-3600))
        try stepWall(of: loop, by: .seconds(-3600))
        #expect(recorder.all.count == reported)
        #expect(own.calls == 1)
    }

    @Test("the monitor holds the clock weakly")
    func monitorDoesNotRetainClock() throws {
        let loop = try TimerLoop.manual()
        weak var weakClock: TrustedClock?
        do {
            let clock = TrustedClock(readings: ScriptedReadings())
            weakClock = clock
            try clock.monitorWallClock(on: loop, checkingEvery: .seconds(1))
        }
        #expect(weakClock == nil)
        try loop.advance(by: .seconds(2))  // the timer finds the clock gone and stops
        #expect(loop.statistics.pending == 0)
    }
}
