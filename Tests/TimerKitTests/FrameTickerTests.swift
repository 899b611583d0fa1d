import Testing
import TimerKit

// FrameTicker: exact frame sequences on a manual loop (grid, drops, pause,
// rates, modes, weak targets, invalidation), and "never early" and "fired"
// on a real loop.

private let ms = Duration.milliseconds(1)

/// The frames a ticker delivered, with optional work per frame on a manual loop.
private final class FrameLog: Sendable {
    let frames = Locked<[FrameTicker.Frame]>([])
    let work = Locked<Duration>(.zero)

    /// An action that records each frame and, on a manual loop, makes it
    /// take `work` of manual time.
    func action(_ loop: TimerLoop) -> FrameTicker.Action {
        { _, frame in
            self.frames.withLock { $0.append(frame) }
            let work = self.work.value
            if work > .zero { try? loop.setManualTime(to: loop.now(.monotonic) + work) }
        }
    }

    /// Frame times after the start, in ms, and their drops.
    func offsets(from start: Duration) -> [(Int, UInt64)] {
        frames.value.map { (Int((($0.timestamp.offset - start) / ms).rounded()), $0.droppedFrames) }
    }
}

private func times(_ log: FrameLog, _ start: Duration) -> [Int] {
    log.offsets(from: start).map(\.0)
}

private func drops(_ log: FrameLog) -> [UInt64] {
    log.frames.value.map(\.droppedFrames)
}

@Suite("FrameTicker")
struct FrameTickerTests {
    let start = Duration.seconds(1000)

    @Test("frames come on the grid, one per period, with their times")
    func grid() throws {
        let loop = try TimerLoop.manual(startingAt: start)
        let log = FrameLog()
        let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 100), log.action(loop))
        #expect(try loop.advance(by: .milliseconds(35)) == 3)
        #expect(times(log, start) == [10, 20, 30])
        let frames = log.frames.value
        #expect(frames.map(\.index) == [0, 1, 2])
        for frame in frames {
            #expect(frame.duration == .milliseconds(10))
            #expect(frame.targetTimestamp == frame.timestamp + .milliseconds(10))
            #expect(frame.deliveredAt == frame.timestamp)
            #expect(frame.droppedFrames == 0)
        }
        #expect(ticker.frameCount == 3)
        #expect(ticker.framesPerSecond == 100)
        #expect(ticker.frameDuration == .milliseconds(10))
        #expect(ticker.nextTimestamp == MonotonicClock.Instant(offset: start + .milliseconds(40)))
        #expect(loop.statistics.pending == 1)
        ticker.invalidate()
        #expect(loop.statistics.pending == 0)
        #expect(try loop.advance(by: .milliseconds(100)) == 0)
        #expect(log.frames.value.count == 3)
    }

    @Test("an action that runs past grid points drops them, and the next frame waits for the grid")
    func longAction() throws {
        let loop = try TimerLoop.manual(startingAt: start)
        let log = FrameLog()
        let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 100), log.action(loop))
        try loop.advance(by: .milliseconds(15))
        log.work.withLock { $0 = .milliseconds(25) }  // the frame at 20 runs until 45
        try loop.advance(by: .milliseconds(6))
        log.work.withLock { $0 = .zero }
        try loop.advance(by: .milliseconds(15))  // the action moved time to 45; on to 60
        #expect(times(log, start) == [10, 20, 50, 60])
        #expect(drops(log) == [0, 0, 2, 0])
        #expect(log.frames.value[2].deliveredAt == MonotonicClock.Instant(offset: start + .milliseconds(50)))
        #expect(ticker.droppedFrameCount == 2)
        ticker.invalidate()
    }

    @Test("a late loop delivers the latest grid point that passed")
    func lateLoop() throws {
        let loop = try TimerLoop.manual(startingAt: start)
        let log = FrameLog()
        let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 100), log.action(loop))
        try loop.setManualTime(to: MonotonicClock.Instant(offset: start + .milliseconds(37)))
        #expect(try loop.advance(by: .zero) == 1)
        #expect(times(log, start) == [30])
        #expect(drops(log) == [2])
        #expect(log.frames.value[0].deliveredAt.offset == start + .milliseconds(37))
        ticker.invalidate()
    }

    @Test("pausing costs nothing, and resuming keeps the grid without counting drops")
    func pause() throws {
        let loop = try TimerLoop.manual(startingAt: start)
        let log = FrameLog()
        let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 100), log.action(loop))
        try loop.advance(by: .milliseconds(25))
        ticker.isPaused = true
        #expect(ticker.isPaused)
        #expect(ticker.nextTimestamp == nil)
        let wakeups = loop.statistics.wakeups
        #expect(try loop.advance(by: .milliseconds(78)) == 0)  // to 103
        #expect(loop.statistics.wakeups == wakeups)
        ticker.isPaused = false
        #expect(!ticker.isPaused)
        #expect(ticker.nextTimestamp?.offset == start + .milliseconds(110))
        try loop.advance(by: .milliseconds(17))
        #expect(times(log, start) == [10, 20, 110, 120])
        #expect(drops(log) == [0, 0, 0, 0])
        ticker.invalidate()
    }

    @Test("a ticker made paused starts on its grid when resumed")
    func createdPaused() throws {
        let loop = try TimerLoop.manual(startingAt: start)
        let log = FrameLog()
        let ticker = try FrameTicker(
            on: loop, rate: FrameRateRange(fixed: 100), paused: true, log.action(loop))
        #expect(try loop.advance(by: .milliseconds(55)) == 0)
        try ticker.setPaused(false)
        try loop.advance(by: .milliseconds(10))
        #expect(times(log, start) == [60])
        ticker.invalidate()
    }

    @Test("a new rate re-aligns the grid at the latest frame; a bad one changes nothing")
    func rateChange() throws {
        let loop = try TimerLoop.manual(startingAt: start)
        let log = FrameLog()
        let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 100), log.action(loop))
        try loop.advance(by: .milliseconds(23))
        try ticker.setRate(FrameRateRange(fixed: 50))
        #expect(ticker.nextTimestamp?.offset == start + .milliseconds(40))
        try loop.advance(by: .milliseconds(42))  // to 65
        #expect(times(log, start) == [10, 20, 40, 60])
        #expect(log.frames.value.last?.duration == .milliseconds(20))
        let bad = FrameRateRange(minimum: 60, maximum: 30)
        #expect(throws: TimerError.invalidFrameRate(bad)) { try ticker.setRate(bad) }
        #expect(ticker.framesPerSecond == 50)
        #expect(ticker.nextTimestamp?.offset == start + .milliseconds(80))
        ticker.invalidate()
    }

    @Test("a range steps down while frames drop and back up when the work allows")
    func adaptiveRange() throws {
        let loop = try TimerLoop.manual(startingAt: start)
        let log = FrameLog()
        let ticker = try FrameTicker(
            on: loop, rate: FrameRateRange(minimum: 30, maximum: 120, preferred: 120), log.action(loop))
        log.work.withLock { $0 = .milliseconds(12) }
        try loop.advance(by: .milliseconds(1100))
        #expect(ticker.framesPerSecond == 60)
        let count = log.frames.value.count
        try loop.advance(by: .seconds(1))
        let after = log.frames.value[count...]
        #expect(after.allSatisfy { $0.droppedFrames == 0 && $0.duration == .nanoseconds(16_666_666) })
        log.work.withLock { $0 = .milliseconds(3) }
        try loop.advance(by: .milliseconds(2100))
        #expect(ticker.framesPerSecond == 120)
        log.work.withLock { $0 = .milliseconds(100) }
        try loop.advance(by: .seconds(10))
        #expect(ticker.framesPerSecond == 30)
        ticker.invalidate()
    }

    @Test("bad rates are refused and nothing is scheduled", arguments: [
        FrameRateRange(minimum: 0, maximum: 60),
        FrameRateRange(minimum: -1, maximum: 60),
        FrameRateRange(minimum: .nan, maximum: 60),
        FrameRateRange(minimum: 30, maximum: .infinity),
        FrameRateRange(minimum: 60, maximum: 30),
        FrameRateRange(minimum: 30, maximum: 60, preferred: 61),
        FrameRateRange(minimum: 30, maximum: 60, preferred: 0),
        FrameRateRange(minimum: 30, maximum: 2e9),
    ])
    func badRates(_ range: FrameRateRange) throws {
        let loop = try TimerLoop.manual()
        let error = #expect(throws: TimerError.self) {
            _ = try FrameTicker(on: loop, rate: range) { _, _ in }
        }
        // (Compared by case: a NaN range is not equal to itself.)
        guard case .invalidFrameRate = error else {
            Issue.record("expected invalidFrameRate, got \(String(describing: error))")
            return
        }
        #expect(loop.statistics.pending == 0)
        #expect(throws: TimerError.noModes) {
            _ = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 60), in: []) { _, _ in }
        }
        #expect(throws: TimerError.notARunMode(.common)) { try loop.run(mode: .common) }
        #expect(loop.statistics.pending == 0)
    }

    @Test("frames come only in the ticker's modes; common keeps them coming while tracking")
    func modes() throws {
        let loop = try TimerLoop.manual(startingAt: start)
        let log = FrameLog()
        let ticker = try FrameTicker(
            on: loop, rate: FrameRateRange(fixed: 100), in: [.tracking], log.action(loop))
        #expect(try loop.advance(by: .milliseconds(35)) == 0)
        #expect(try loop.advance(by: .zero, mode: .tracking) == 1)
        #expect(times(log, start) == [30])
        try ticker.add(.default)
        #expect(try loop.advance(by: .milliseconds(10)) == 1)
        ticker.invalidate()

        let common = FrameLog()
        let carousel = try FrameTicker(
            on: loop, rate: FrameRateRange(fixed: 100), in: [.common], common.action(loop))
        #expect(try loop.advance(by: .milliseconds(20), mode: .tracking) == 2)
        #expect(try loop.advance(by: .milliseconds(20)) == 2)
        carousel.invalidate()
    }

    @Test("invalidate is final and idempotent, and the loop lets go of the ticker")
    func invalidate() throws {
        let loop = try TimerLoop.manual(startingAt: start)
        weak var weakTicker: FrameTicker?
        do {
            let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 100)) { _, _ in }
            weakTicker = ticker
            try loop.advance(by: .milliseconds(25))
            ticker.invalidate()
            ticker.invalidate()
            #expect(!ticker.isValid)
            #expect(throws: TimerError.invalidated) { try ticker.setPaused(true) }
            #expect(throws: TimerError.invalidated) { try ticker.setRate(FrameRateRange(fixed: 30)) }
            #expect(throws: TimerError.invalidated) { try ticker.add(.tracking) }
            ticker.isPaused = false  // a documented no-op
            #expect(ticker.frameCount == 0 && ticker.framesPerSecond == nil)
            #expect(loop.statistics.pending == 0)
        }
        #expect(weakTicker == nil)
    }

    @Test("a ticker invalidated from its own action delivers nothing more")
    func invalidateFromAction() throws {
        let loop = try TimerLoop.manual(startingAt: start)
        let count = Locked(0)
        weak var weakTicker: FrameTicker?
        do {
            let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 100)) { ticker, frame in
                count.withLock { $0 += 1 }
                if frame.index == 2 { ticker.invalidate() }
            }
            weakTicker = ticker
        }
        #expect(weakTicker != nil)  // the loop keeps it
        #expect(try loop.advance(by: .milliseconds(100)) == 3)
        #expect(count.value == 3)
        #expect(weakTicker == nil)
    }

    @Test("a weak target: the ticker never keeps it alive, and stops once it is gone")
    func weakTarget() throws {
        final class Scene: Sendable {
            let drawn = Locked(0)
        }
        let loop = try TimerLoop.manual(startingAt: start)
        var scene: Scene? = Scene()
        weak let weakScene = scene
        let drawn = scene!.drawn
        let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 100), target: scene!) {
            scene, _, _ in scene.drawn.withLock { $0 += 1 }
        }
        try loop.advance(by: .milliseconds(20))
        #expect(drawn.value == 2)
        scene = nil
        #expect(weakScene == nil)
        try loop.advance(by: .milliseconds(20))
        #expect(drawn.value == 2)
        #expect(!ticker.isValid)
        #expect(loop.statistics.pending == 0)
    }

    @Test("on the real clock: frames are never early, stay on the grid, and come")
    func realClock() throws {
        let loop = try TimerLoop()
        let log = FrameLog()
        let done = Locked(false)
        let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 200)) { ticker, frame in
            log.frames.withLock { $0.append(frame) }
            if frame.index == 39 {
                ticker.invalidate()
                done.withLock { $0 = true }
                loop.stop()
            }
        }
        try loop.run(until: MonotonicClock.now + .seconds(60))
        #expect(done.value)
        #expect(!ticker.isValid)
        let frames = log.frames.value
        #expect(frames.count == 40)
        for (previous, frame) in zip(frames, frames.dropFirst()) {
            // Never early: not before the target the previous frame announced.
            #expect(frame.deliveredAt >= previous.targetTimestamp)
            let step = frame.timestamp - previous.timestamp
            #expect(step > .zero)
            #expect(step.saturatingNanosecondsForTests % 5_000_000 == 0)
            #expect(UInt64(step.saturatingNanosecondsForTests / 5_000_000) - 1 == frame.droppedFrames)
        }
    }

    @Test("changed from other threads while frames come: never early, in order, nothing after invalidate")
    func otherThreads() async throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let log = FrameLog()
        let invalidated = Locked(false)
        let late = Locked(0)
        let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 200)) { _, frame in
            if invalidated.value { late.withLock { $0 += 1 } }
            log.frames.withLock { $0.append(frame) }
        }
        await withTaskGroup(of: Void.self) { group in
            for worker in 0..<3 {
                group.addTask {
                    for step in 0..<200 {
                        switch (worker + step) % 4 {
                        case 0: ticker.isPaused = step % 3 == 0
                        case 1: try? ticker.setRate(FrameRateRange(fixed: step % 2 == 0 ? 100 : 200))
                        case 2: _ = ticker.frameCount + ticker.droppedFrameCount
                        default: _ = ticker.nextTimestamp
                        }
                        if step % 20 == 0 { try? await Task.sleep(for: .milliseconds(1)) }
                    }
                }
            }
        }
        ticker.isPaused = false
        #expect(waitUntil { log.frames.value.count >= 5 })
        // A frame that starts after invalidate() returns sees the mark; one
        // that had begun before may still see it as it finishes: at most one.
        ticker.invalidate()
        invalidated.withLock { $0 = true }
        try await Task.sleep(for: .milliseconds(20))
        #expect(late.value <= 1)
        let frames = log.frames.value
        for (previous, frame) in zip(frames, frames.dropFirst()) {
            #expect(frame.timestamp > previous.timestamp)
            #expect(frame.deliveredAt >= frame.timestamp)
        }
    }

    @Test("a monitor fed by a ticker reads exact figures on the manual clock")
    func monitorFromTicker() throws {
        let loop = try TimerLoop.manual(startingAt: start)
        let monitor = Locked(try FrameRateMonitor(framesPerSecond: 100))
        let readings = Locked<[FrameRateMonitor.Reading]>([])
        let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 100)) { _, frame in
            if let reading = monitor.withLock({ $0.record(frame) }) {
                readings.withLock { $0.append(reading) }
            }
            // The frame at 510 ms works until 535: 520 and 530 are dropped.
            if frame.index == 50 { try? loop.setManualTime(to: loop.now(.monotonic) + .milliseconds(25)) }
        }
        try loop.advance(by: .milliseconds(1015))
        ticker.invalidate()
        // Frame times of 10 ms from the frame at 10 ms, one of them 30 ms:
        // the window closes with the frame at 1010 ms, 1 s of frame time.
        let reading = try #require(readings.value.first)
        #expect(reading.droppedFrames == 2)
        #expect(reading.elapsed == .seconds(1))
        #expect(reading.frames == 98)
        #expect(reading.framesPerSecond == 98)
        #expect(reading.frameTimeP50 == .milliseconds(10))
        #expect(reading.frameTimeMax == .milliseconds(30))
        #expect(reading.hitchMillisecondsPerSecond == 20)
        #expect(reading.grade == .critical)
    }
}

extension Duration {
    /// Whole nanoseconds (tests only deal in spans far from overflowing).
    var saturatingNanosecondsForTests: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}
