import Testing
@testable import TimerKit

// FrameRateMonitor: exact readings from given frame times, the drop and
// hitch formulas, restarts, bad settings; and the histogram's precision
// against exact percentiles.

private func instant(_ milliseconds: Int64) -> MonotonicClock.Instant {
    MonotonicClock.Instant(offset: .milliseconds(milliseconds))
}

@Suite("FrameRateMonitor")
struct FrameRateMonitorTests {
    @Test("a steady stream reads its rate and frame time exactly")
    func steady() throws {
        var monitor = try FrameRateMonitor(frameInterval: .milliseconds(10))
        var readings: [FrameRateMonitor.Reading] = []
        for frame in 0...250 {
            if let reading = monitor.record(instant(Int64(frame) * 10)) { readings.append(reading) }
        }
        #expect(readings.count == 2)  // at 1 s and 2 s; 2.5 s is not a window yet
        for reading in readings {
            #expect(reading.frames == 100)
            #expect(reading.elapsed == .seconds(1))
            #expect(reading.framesPerSecond == 100)
            #expect(reading.frameTimeP50 == .milliseconds(10))
            #expect(reading.frameTimeP99 == .milliseconds(10))
            #expect(reading.droppedFrames == 0)
            #expect(reading.hitchMillisecondsPerSecond == 0)
            #expect(reading.grade == .good)
        }
        #expect(monitor.latest == readings.last)
        #expect(readings[0].description == "100.0 fps, p99 10.0 ms, 0 dropped, hitch 0.0 ms/s (good)")
        let summary = try #require(monitor.summary)
        #expect(summary.frames == 250)
        #expect(summary.elapsed == .milliseconds(2500))
    }

    @Test("the documented reading: 60 Hz with one frame of 25 ms")
    func documentedReading() throws {
        // The docs' example: at 60 Hz one dropped frame takes 1.5 intervals
        // at least (25 ms), which p99 of a second's frames shows, and whose
        // 8.3 ms beyond the interval grade as a warning.
        var monitor = try FrameRateMonitor(frameInterval: .seconds(1) / 60)
        var time = Duration.zero
        var reading: FrameRateMonitor.Reading?
        for frame in 0...60 {
            if frame > 0 { time += frame == 30 ? .milliseconds(25) : .seconds(1) / 60 }
            reading = monitor.record(MonotonicClock.Instant(offset: time)) ?? reading
        }
        #expect(reading?.description == "59.5 fps, p99 25.0 ms, 1 dropped, hitch 8.3 ms/s (warning)")
    }

    @Test("a hitch: dropped frames, hitch time per second, grade and percentiles")
    func hitch() throws {
        var monitor = try FrameRateMonitor(frameInterval: .milliseconds(10))
        // 10 ms frames with one of 40 ms: 96 × 10 + 40 = 1000 ms in 97 frames.
        var times: [Int64] = [0]
        for index in 1...97 { times.append(times.last! + (index == 50 ? 40 : 10)) }
        var reading: FrameRateMonitor.Reading?
        for time in times { reading = monitor.record(instant(time)) ?? reading }
        let window = try #require(reading)
        #expect(window.frames == 97)
        #expect(window.framesPerSecond == 97)
        #expect(window.droppedFrames == 3)  // round(40 / 10) - 1
        #expect(window.hitchMillisecondsPerSecond == 30)
        #expect(window.grade == .critical)
        #expect(window.frameTimeP50 == .milliseconds(10))
        #expect(window.frameTimeP95 == .milliseconds(10))
        #expect(window.frameTimeP99 == .milliseconds(40))
        #expect(window.frameTimeMax == .milliseconds(40))
    }

    @Test("grades follow the thresholds", arguments: [
        (4.0, FrameRateMonitor.Grade.good), (5.0, .good), (5.5, .warning),
        (10.0, .warning), (10.5, .critical),
    ])
    func grades(_ hitchPerSecond: Double, _ grade: FrameRateMonitor.Grade) {
        #expect(FrameRateMonitor.Thresholds.standard.grade(hitchPerSecond) == grade)
        #expect(FrameRateMonitor.Thresholds(warning: 50, critical: 100).grade(hitchPerSecond) == .good)
    }

    @Test("a window with a 7 ms hitch grades as a warning")
    func warning() throws {
        var monitor = try FrameRateMonitor(frameInterval: .milliseconds(10))
        monitor.record(instant(0))
        monitor.record(instant(17))
        var time: Int64 = 17
        var reading: FrameRateMonitor.Reading?
        while reading == nil {
            time += 10
            reading = monitor.record(instant(time))
        }
        #expect(time == 1007)
        #expect(reading!.hitchMillisecondsPerSecond == 7 / 1.007)
        #expect(reading!.grade == .warning)
        #expect(reading!.droppedFrames == 1)  // round(17 / 10) - 1
    }

    @Test("dropped frames are round(Δ ÷ interval) − 1", arguments: [
        (Int64(10), UInt64(0)), (14, 0), (15, 1), (24, 1), (25, 2), (40, 3), (5, 0),
    ])
    func droppedFormula(_ delta: Int64, _ dropped: UInt64) throws {
        var monitor = try FrameRateMonitor(frameInterval: .milliseconds(10), window: .milliseconds(1))
        monitor.record(instant(100))
        let recorded = monitor.record(instant(100 + delta))
        let reading = try #require(recorded)
        #expect(reading.droppedFrames == dropped)
        #expect(reading.hitchMillisecondsPerSecond == Double(max(0, delta - 10)) / (Double(delta) / 1000))
    }

    @Test("a ticker frame's own duration is the interval, so a rate change is not a drop")
    func tickerDuration() throws {
        let loop = try TimerLoop.manual()
        let monitor = Locked(try FrameRateMonitor(framesPerSecond: 100, window: .milliseconds(50)))
        let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 100)) { ticker, frame in
            monitor.withLock { _ = $0.record(frame) }
            if frame.index == 4 { try? ticker.setRate(FrameRateRange(fixed: 50)) }
        }
        try loop.advance(by: .milliseconds(300))
        ticker.invalidate()
        let summary = try #require(monitor.value.summary)
        #expect(summary.droppedFrames == 0)
        #expect(summary.hitchMillisecondsPerSecond == 0)
        #expect(summary.frameTimeMax == .milliseconds(20))
    }

    @Test("an adaptive ticker's frames: the monitor's drops are the ticker's, across its steps down and up")
    func adaptiveTickerDrops() throws {
        let loop = try TimerLoop.manual()
        struct Record {
            var monitor: FrameRateMonitor
            var late: FrameRateMonitor  // from 1.6 s, after the heavy work
            var tickerDrops: UInt64 = 0  // of the frames after the first
            var lateTickerDrops: UInt64 = 0
            var frames = 0
            var lateFrames = 0
            var durations: Set<Duration> = []
        }
        let record = Locked(Record(
            monitor: try FrameRateMonitor(framesPerSecond: 60, window: .seconds(100)),
            late: try FrameRateMonitor(framesPerSecond: 60, window: .seconds(100))))
        let range = FrameRateRange(minimum: 30, maximum: 60, preferred: 60)
        let ticker = try FrameTicker(on: loop, rate: range) { _, frame in
            record.withLock { record in
                record.monitor.record(frame)
                if record.frames > 0 { record.tickerDrops += frame.droppedFrames }
                record.frames += 1
                record.durations.insert(frame.duration)
                if frame.timestamp >= MonotonicClock.Instant(offset: .milliseconds(1600)) {
                    record.late.record(frame)
                    if record.lateFrames > 0 { record.lateTickerDrops += frame.droppedFrames }
                    record.lateFrames += 1
                }
            }
            // 20 ms of work a frame for the first 1.5 s, then 1 ms: the
            // ticker steps down to 30 Hz, then back up to 60.
            let work: Duration = frame.timestamp < MonotonicClock.Instant(offset: .milliseconds(1500))
                ? .milliseconds(20) : .milliseconds(1)
            try? loop.setManualTime(to: loop.now(.monotonic) + work)
        }
        try loop.advance(by: .seconds(8))
        ticker.invalidate()
        let result = record.value
        // Both rates ran (30 Hz on the 60 Hz grid: two of its periods).
        #expect(result.durations == [.nanoseconds(16_666_667), .nanoseconds(33_333_334)])
        #expect(result.tickerDrops > 0)
        #expect(try #require(result.monitor.summary).droppedFrames == result.tickerDrops)
        // From 1.6 s no frame was dropped; the step up is not a drop or a hitch.
        #expect(result.lateTickerDrops == 0)
        let late = try #require(result.late.summary)
        #expect(late.droppedFrames == 0)
        #expect(late.hitchMillisecondsPerSecond == 0)
    }

    @Test("a ticker frame's hitch is its time beyond one of the grid steps it spans")
    func tickerFrameHitch() throws {
        let loop = try TimerLoop.manual()
        let monitor = Locked(try FrameRateMonitor(framesPerSecond: 100, window: .seconds(100)))
        let ticker = try FrameTicker(on: loop, rate: FrameRateRange(fixed: 100)) { _, frame in
            monitor.withLock { _ = $0.record(frame) }
            // The third frame's action runs 25 ms: two grid points pass.
            if frame.index == 2 { try? loop.setManualTime(to: loop.now(.monotonic) + .milliseconds(25)) }
        }
        try loop.advance(by: .milliseconds(100))
        ticker.invalidate()
        let summary = try #require(monitor.value.summary)
        // Frames at 10, 20, 30, then 60 (40 and 50 dropped), 70, 80, 90, 100 ms.
        #expect(summary.frames == 7)
        #expect(summary.elapsed == .milliseconds(90))
        #expect(summary.droppedFrames == 2)
        #expect(summary.frameTimeMax == .milliseconds(30))
        // 20 ms beyond one 10 ms step, over 90 ms.
        #expect(summary.hitchMillisecondsPerSecond == 20.0 / 0.09)
    }

    @Test("going back in time, or restart(), starts a new window without a hitch")
    func restarts() throws {
        var monitor = try FrameRateMonitor(frameInterval: .milliseconds(10), window: .milliseconds(100))
        for time in stride(from: Int64(0), through: 50, by: 10) { monitor.record(instant(time)) }
        monitor.restart()
        for time in stride(from: Int64(5000), through: 5100, by: 10) { monitor.record(instant(time)) }
        #expect(monitor.latest?.frames == 10)
        #expect(monitor.latest?.hitchMillisecondsPerSecond == 0)
        monitor.record(instant(20))  // earlier than the last: a restart, not a frame
        monitor.record(instant(30))
        let summary = try #require(monitor.summary)
        #expect(summary.frames == 5 + 10 + 1)
        #expect(summary.elapsed == .milliseconds(160))
        #expect(summary.droppedFrames == 0)
    }

    @Test("extreme instants and intervals never trap")
    func extremes() throws {
        var monitor = try FrameRateMonitor(frameInterval: .nanoseconds(Int64.max / 2 + 1), window: .nanoseconds(1))
        for offset in [Int64.min / 2, -1, 0, Int64.max / 2, Int64.max / 2, Int64.max / 4 * 3] {
            monitor.record(MonotonicClock.Instant(offset: .nanoseconds(offset)))
        }
        var wide = try FrameRateMonitor(frameInterval: .milliseconds(10), window: .seconds(1))
        wide.record(MonotonicClock.Instant(offset: .nanoseconds(Int64.min / 2)))
        let reading = wide.record(MonotonicClock.Instant(offset: .nanoseconds(Int64.max / 2)))
        #expect(reading?.frames == 1)
        #expect(reading?.elapsed == .nanoseconds(Int64.max))  // saturated
        for _ in 0..<3 {
            wide.record(MonotonicClock.Instant(offset: .nanoseconds(Int64.min / 2)))  // a restart
            wide.record(MonotonicClock.Instant(offset: .nanoseconds(Int64.max / 2)))
        }
        #expect(wide.summary?.elapsed == .nanoseconds(Int64.max))
        #expect(throws: TimerError.self) { try FrameRateMonitor(framesPerSecond: 1e-7) }
        #expect(try FrameRateMonitor(framesPerSecond: 1e-6).frameInterval == .seconds(1_000_000))
    }

    @Test("frames whose timestamps repeat took no time: elapsed is zero, the rate infinite, no hitch")
    func repeatedTimestamps() throws {
        var monitor = try FrameRateMonitor(frameInterval: .seconds(1) / 60)
        let instant = MonotonicClock.Instant(offset: .seconds(100))
        for _ in 0..<10 { monitor.record(instant) }
        let summary = try #require(monitor.summary)
        #expect(summary.frames == 9)
        #expect(summary.elapsed == .zero)
        #expect(summary.framesPerSecond == .infinity)
        #expect(summary.hitchMillisecondsPerSecond == 0)
        #expect(summary.grade == .good)
        #expect(summary.droppedFrames == 0)
    }

    @Test("no reading before two frames")
    func empty() throws {
        var monitor = try FrameRateMonitor(framesPerSecond: 60)
        #expect(monitor.summary == nil)
        #expect(monitor.latest == nil)
        #expect(monitor.record(instant(5)) == nil)
        #expect(monitor.summary == nil)
    }

    @Test("bad settings are refused")
    func badSettings() {
        #expect(throws: TimerError.invalidMonitorSetting(.zero)) { try FrameRateMonitor(frameInterval: .zero) }
        #expect(throws: TimerError.invalidMonitorSetting(.milliseconds(-1))) {
            try FrameRateMonitor(frameInterval: .milliseconds(-1))
        }
        #expect(throws: TimerError.invalidMonitorSetting(.zero)) {
            try FrameRateMonitor(frameInterval: .milliseconds(10), window: .zero)
        }
        #expect(throws: TimerError.invalidMonitorSetting(.nanoseconds(1) / 2)) {
            try FrameRateMonitor(frameInterval: .nanoseconds(1) / 2)
        }
        // Past what Int64 nanoseconds hold: refused, not cut short.
        let past = Duration.nanoseconds(Int64.max) + .nanoseconds(1)
        #expect(throws: TimerError.invalidMonitorSetting(past)) { try FrameRateMonitor(frameInterval: past) }
        #expect(throws: TimerError.invalidMonitorSetting(.seconds(Int64.max))) {
            try FrameRateMonitor(frameInterval: .milliseconds(10), window: .seconds(Int64.max))
        }
        #expect((try? FrameRateMonitor(frameInterval: .nanoseconds(Int64.max)))?.frameInterval == .nanoseconds(Int64.max))
        for rate in [0, -60, Double.infinity] {
            #expect(throws: TimerError.invalidFrameRate(FrameRateRange(fixed: rate))) {
                try FrameRateMonitor(framesPerSecond: rate)
            }
        }
        #expect(throws: TimerError.self) { try FrameRateMonitor(framesPerSecond: .nan) }
    }

    @Test("percentiles of frame times past 36 minutes are within a bucket too")
    func longFrameTimes() {
        var histogram = FrameTimeHistogram()
        let big = Int64(255) << 33
        let values = [big - 1, big, big + 1_000_000_000, 2 * big, 3 * big]
        for value in values { histogram.record(value) }
        for (p, exact) in [(0.2, values[0]), (0.4, values[1]), (0.6, values[2]), (0.8, values[3]), (1.0, values[4])] {
            let reported = histogram.percentile(p)!
            #expect(abs(reported - exact) <= exact / 128, "p\(p): exact \(exact), reported \(reported)")
        }
    }

    @Test("percentiles stay right past 2^32 frames of one time")
    func billionsOfFrames() {
        // 4.4e9 steady frames of 16 ms and one of 33 ms: every percentile
        // below the top is 16 ms (a bucket that stopped counting at 2^32 - 1
        // put p99 at 33 ms, and past 8.6e9 frames p50 too).
        var histogram = FrameTimeHistogram()
        histogram.record(16_000_000, times: 4_400_000_000)
        histogram.record(33_000_000)
        #expect(histogram.count == 4_400_000_001)
        for p in [0.5, 0.95, 0.99, 0.999_999_999] {
            #expect(histogram.percentile(p) == 16_000_000, "p\(p)")
        }
        #expect(histogram.percentile(1) == 33_000_000)
        histogram.record(16_000_000, times: 9_000_000_000)
        #expect(histogram.percentile(0.5) == 16_000_000)
        // The count stops at UInt64.max, and the buckets with it.
        histogram.record(1_000, times: .max)
        #expect(histogram.count == .max)
        #expect(histogram.percentile(0.5) == 1_000)
        #expect(histogram.percentile(1) == 33_000_000)
    }

    @Test("a bucket that holds both the smallest and the largest time reports the smallest below the top rank")
    func sharedExtremes() throws {
        var monitor = try FrameRateMonitor(frameInterval: .milliseconds(10), window: .seconds(100))
        var time: Int64 = 0
        monitor.record(MonotonicClock.Instant(offset: .zero))
        for frame in 0..<100 {
            time += frame == 40 ? 10_020_000 : 10_000_000  // one frame 20 µs (0.2 %) long
            monitor.record(MonotonicClock.Instant(offset: .nanoseconds(time)))
        }
        let summary = try #require(monitor.summary)
        #expect(summary.frameTimeP50 == .milliseconds(10))
        #expect(summary.frameTimeP95 == .milliseconds(10))
        #expect(summary.frameTimeP99 == .milliseconds(10))
        #expect(summary.frameTimeMax == .nanoseconds(10_020_000))
    }

    @Test("a reading's description never traps, however large its figures")
    func hugeDescription() {
        let reading = FrameRateMonitor.Reading(
            frames: 1, elapsed: .nanoseconds(1), framesPerSecond: 1e19, frameTimeP50: .zero,
            frameTimeP95: .zero, frameTimeP99: .seconds(Int64.max), frameTimeMax: .zero, droppedFrames: .max,
            hitchMillisecondsPerSecond: -1e300, grade: .critical)
        #expect(reading.description
            == "1e+19 fps, p99 9223372036854.8 ms, 18446744073709551615 dropped, hitch -1e+300 ms/s (critical)")
        #expect(FrameRateMonitor.Reading.fixed(0x1p53 / 10 - 1, 1) == "900719925474098.2")
    }

    @Test("a range describes its rates as its doc shows")
    func rangeDescription() {
        #expect(FrameRateRange(minimum: 30, maximum: 120, preferred: 60).description == "30–120 fps, preferring 60")
        #expect(FrameRateRange(fixed: 60).description == "60 fps")
        #expect(FrameRateRange(minimum: 24, maximum: 59.94).description == "24–59.94 fps")
        #expect(FrameRateRange(fixed: .nan).description == "nan fps")
    }

    @Test("histogram buckets hold their values, and percentiles are within a bucket of exact")
    func histogramPrecision() {
        var generator = SeededGenerator(seed: testSeed())
        for _ in 0..<5_000 {
            // Every time a frame can take, up to Int64.max ns.
            let value = generator.chance(50)
                ? generator.within(0...(Int64(1) << 40)) : generator.within(0...Int64.max)
            let bucket = FrameTimeHistogram.bucket(of: value)
            let low = FrameTimeHistogram.lowestValue(of: bucket)
            #expect(low <= value)
            if bucket + 1 < FrameTimeHistogram.bucketCount {
                #expect(value < FrameTimeHistogram.lowestValue(of: bucket + 1))
            }
            #expect(value - low <= max(0, value / 128))
        }
        for _ in 0..<20 {
            var histogram = FrameTimeHistogram()
            let count = 1 + generator.below(3000)
            var values: [Int64] = []
            for _ in 0..<count {
                // Frame-like times: around 16 ms with a tail.
                let value = generator.chance(5)
                    ? generator.within(20_000_000...200_000_000) : generator.within(15_000_000...18_000_000)
                values.append(value)
                histogram.record(value)
            }
            values.sort()
            for p in [0.5, 0.95, 0.99, 1.0] {
                let exact = values[max(0, Int((p * Double(count)).rounded(.up)) - 1)]
                let reported = histogram.percentile(p)!
                // Within a bucket: below it (a bucket's lowest value, or the
                // smallest time), or above it only in the largest time's bucket.
                #expect(abs(reported - exact) <= exact / 128, "p\(p): exact \(exact), reported \(reported)")
                if reported > exact { #expect(reported == values.last) }
            }
            #expect(histogram.percentile(1.0) == values.last)
            #expect(histogram.percentile(0) == values.first)
        }
    }
}
