import CBenchSupport
import Glibc
import Testing

@testable import TimerBench

// The benchmark harness's own logic: the lateness grid, the floor's C loop,
// option parsing, the schedule runner's caps, failures and counters, and the
// coalescing log. Figures are never asserted; only what must hold whatever
// the machine's speed (order, "never early", counts).

@Suite struct RoundTests {
    @Test func firesOnTheGridAreMeasuredAgainstTheirOwnDeadline() {
        let round = Round(first: 1_000, period: 100, target: 4, discard: 1)
        #expect(!round.fire(at: 1_010))  // discarded
        #expect(!round.fire(at: 1_105))
        #expect(!round.fire(at: 1_200))
        #expect(round.fire(at: 1_330))
        #expect(round.samples == [5, 0, 30])
        #expect(round.skipped == 0)
        #expect(round.early == 0)
        #expect(round.firstFireAt == 1_010)
        #expect(round.done)
    }

    @Test func aLateFireSkipsTheGridPointsThatPassed() {
        // Without a count from the timer: the next deadline is the first
        // grid point after the fire.
        let round = Round(first: 0, period: 100, target: 3, discard: 0)
        _ = round.fire(at: 350)  // for deadline 0; 100, 200 and 300 passed
        _ = round.fire(at: 401)
        #expect(round.samples == [350, 1])
        #expect(round.skipped == 3)
    }

    @Test func aTimerSaysHowManyGridPointsAFireStandsFor() {
        let round = Round(first: 0, period: 100, target: 3, discard: 0)
        _ = round.fire(at: 250, consumed: 3)  // deadlines 0, 100, 200
        _ = round.fire(at: 300, consumed: 1)
        #expect(round.samples == [250, 0])
        #expect(round.skipped == 2)
    }

    @Test func earlyFiresAreCountedAndFiresAfterTheTargetIgnored() {
        let round = Round(first: 1_000, period: 100, target: 1, discard: 0)
        #expect(round.fire(at: 990))
        #expect(round.early == 1)
        #expect(round.fire(at: 2_000))
        #expect(round.fires == 1)
        #expect(round.samples == [-10])
    }

    @Test func roundSpecLimitLeavesRoomForEveryFire() {
        let spec = RoundSpec(period: 1_000_000, fires: 10, discard: 1)
        #expect(spec.limit(from: 0) > 10 * 1_000_000)
        let round = spec.makeRound(first: 42)
        #expect(round.first == 42 && round.period == 1_000_000 && round.target == 10 && round.discard == 1)
    }
}

@Suite struct FloorTests {
    @Test func badInputIsRefusedWithEINVAL() {
        var times = [Int64](repeating: 0, count: 1)
        var counts = [UInt64](repeating: 0, count: 1)
        #expect(tkb_floor_run(1, 0, 1, 1, &times, &counts) == -EINVAL)
        #expect(tkb_floor_run(1, -5, 1, 1, &times, &counts) == -EINVAL)
        #expect(tkb_floor_run(1, 1_000, 0, 1, &times, &counts) == -EINVAL)
        // A zero first deadline would disarm the timerfd.
        #expect(tkb_floor_run(0, 1_000, 1, 1, &times, &counts) == -EINVAL)
        #expect(tkb_floor_run(-1, 1_000, 1, 1, &times, &counts) == -EINVAL)
        #expect(tkb_floor_run(1, 1_000, 1, 1, nil, &counts) == -EINVAL)
        #expect(tkb_floor_run(1, 1_000, 1, 1, &times, nil) == -EINVAL)
    }

    @Test func theFloorNeverWakesEarlyAndCountsExpirations() throws {
        let period: Int64 = 2_000_000
        let first = monotonicNanoseconds() + period
        var times = [Int64](repeating: 0, count: 5)
        var counts = [UInt64](repeating: 0, count: 5)
        let recorded = tkb_floor_run(first, period, 5, first + 30_000_000_000, &times, &counts)
        #expect(recorded == 5)
        var k: Int64 = 0
        for i in 0..<Int(recorded) {
            #expect(counts[i] >= 1)
            k += Int64(counts[i])
            // The fire read after expiration k - 1 of the grid: never before it.
            #expect(times[i] >= first + (k - 1) * period)
            if i > 0 { #expect(times[i] >= times[i - 1]) }
        }
    }

    @Test func aPassedLimitEndsTheRunWithFewerFires() {
        let now = monotonicNanoseconds()
        var times = [Int64](repeating: 0, count: 3)
        var counts = [UInt64](repeating: 0, count: 3)
        // First deadline an hour away, limit already passed: nothing recorded.
        #expect(tkb_floor_run(now + 3_600_000_000_000, 1_000_000, 3, now, &times, &counts) == 0)
    }
}

@Suite struct OptionsTests {
    @Test func parsesEveryOption() {
        let (options, problem) = BenchCommand.Options.parse(
            ["--full", "--json", "--seed", "12", "--charts", "build/charts"])
        #expect(problem == nil)
        #expect(options?.length == .full)
        #expect(options?.json == true)
        #expect(options?.seed == 12)
        #expect(options?.charts == "build/charts")
        #expect(BenchCommand.Options.parse([]).0?.charts == nil)
        #expect(BenchCommand.Options.parse(["--quick"]).0?.length == .quick)
        #expect(BenchCommand.Options.parse([]).0?.length == .standard)
    }

    @Test func refusesWhatItDoesNotKnow() {
        #expect(BenchCommand.Options.parse(["--seed"]).0 == nil)
        #expect(BenchCommand.Options.parse(["--seed", "x"]).1 == "--seed needs a number")
        // Digits alone, as the usage shows a number.
        for seed in ["+12", "-12", " 12", "12 ", "0x12", "", "18446744073709551616"] {
            #expect(BenchCommand.Options.parse(["--seed", seed]).1 == "--seed needs a number", "\(seed)")
        }
        #expect(BenchCommand.Options.parse(["--seed", "18446744073709551615"]).0?.seed == .max)
        #expect(BenchCommand.Options.parse(["--fast"]).1 == "unknown option --fast")
        #expect(BenchCommand.Options.parse(["--charts"]).1 == "--charts needs a directory")
        #expect(BenchCommand.Options.parse(["--charts", "--quick"]).1 == "--charts needs a directory")
    }
}

/// A side that counts what it was asked to do; optionally fails.
final class RecordingSide: ScheduleSide {
    let name: String
    private let failOnChurn: Bool
    private(set) var pending: [Int64] = []
    private(set) var pairs = 0
    private(set) var churns = 0
    private(set) var drained = false

    init(name: String, failOnChurn: Bool = false) {
        self.name = name
        self.failOnChurn = failOnChurn
    }

    func fill(_ delays: [Int64]) throws { pending += delays }
    func pairs(_ delays: UnsafeBufferPointer<Int64>) throws { pairs += delays.count }
    func churn(_ delays: UnsafeBufferPointer<Int64>, _ victims: UnsafeBufferPointer<Int>) throws {
        if failOnChurn { throw SideFailure("refused") }
        for i in 0..<delays.count {
            #expect(victims[i] >= 0 && victims[i] < pending.count)
            pending[victims[i]] = delays[i]
        }
        churns += delays.count
    }
    func settle() {}
    func drain() { drained = true }
}

/// Counts the calls of a MallocCounter; every window reports `perWindow`
/// allocations and no frees.
final class CountingMallocs: @unchecked Sendable {
    var starts = 0
    var stops = 0

    func counter(perWindow: Int, headerBytes: Int = 0) -> MallocCounter {
        MallocCounter(
            headerBytes: headerBytes, start: { self.starts += 1 },
            stop: { self.stops += 1; return (perWindow, 0) })
    }
}

@Suite struct ScheduleBenchTests {
    @Test func everySideIsFilledMeasuredAndDrained() {
        let sides = [RecordingSide(name: "TimerKit fake"), RecordingSide(name: "peer fake")]
        let makers = sides.map { side in ScheduleSideMaker(name: side.name) { side } }
        let config = ScheduleConfig(sizes: [100], reps: 2, repTargetNs: 100_000)
        var rng = SeededGenerator(seed: 1)
        var failures: [String] = []
        let mallocs = CountingMallocs()
        let rows = ScheduleBench.run(
            config, makers: makers, mallocs: mallocs.counter(perWindow: 512), rng: &rng, failures: &failures)
        #expect(failures.isEmpty)
        #expect(rows.map(\.side) == ["TimerKit fake", "peer fake"])
        for (row, side) in zip(rows, sides) {
            #expect(row.pending == 100 && row.failed == nil && row.skipped == nil)
            #expect(side.pending.count == 100)
            #expect(side.pairs > 0 && side.churns > 0)
            #expect(side.drained)
            #expect(row.pair.reps == 2 && row.churn.reps == 2)
            #expect(row.pair.wallNs.isFinite && row.churn.wallNs.isFinite)
            // One window while filling (512 / 100 timers) and one of 256 pairs.
            #expect(row.mallocsPerFill == 5.12)
            #expect(row.mallocsPerPair == 2)
        }
        #expect(mallocs.starts == 4 && mallocs.stops == 4)
    }

    @Test func aCappedSideIsSkippedAndAFailingSideReported() {
        let makers = [
            ScheduleSideMaker(name: "TimerKit fake") { RecordingSide(name: "TimerKit fake") },
            ScheduleSideMaker(name: "capped", maxPending: 10, capReason: "O(n)") { RecordingSide(name: "capped") },
            ScheduleSideMaker(name: "failing") { RecordingSide(name: "failing", failOnChurn: true) },
            ScheduleSideMaker(name: "unmakeable") { throw SideFailure("no") },
        ]
        let config = ScheduleConfig(sizes: [10, 50], reps: 1, repTargetNs: 100_000)
        var rng = SeededGenerator(seed: 2)
        var failures: [String] = []
        let rows = ScheduleBench.run(config, makers: makers, mallocs: nil, rng: &rng, failures: &failures)
        #expect(rows.count == 8)
        let capped = rows.filter { $0.side == "capped" }
        #expect(capped[0].skipped == nil && capped[0].failed == nil)
        #expect(capped[1].skipped == "capped at 10 pending: O(n)")
        #expect(rows.filter { $0.side == "failing" }.allSatisfy { $0.failed == "refused" })
        #expect(rows.filter { $0.side == "unmakeable" }.allSatisfy { $0.failed == "no" })
        #expect(failures.count == 4)
        #expect(rows.allSatisfy { $0.mallocsPerFill.isNaN })
    }
}

@Suite struct MeasurementTests {
    @Test func mallocCounterStopsEvenWhenTheBodyThrows() {
        let mallocs = CountingMallocs()
        let counter = mallocs.counter(perWindow: 3)
        #expect(counter.count {}.mallocs == 3)
        #expect(throws: SideFailure.self) { try counter.count { throw SideFailure("x") } }
        #expect(mallocs.starts == 2 && mallocs.stops == 2)
    }

    @Test func residentMemoryGrowsWhenPagesAreTouched() throws {
        let before = try #require(ResidentMemory.bytes())
        let size = 64 << 20
        let block = try #require(malloc(size))
        defer { free(block) }
        memset(block, 1, size)
        let after = try #require(ResidentMemory.bytes())
        #expect(after - before >= size / 2)
    }

    @Test func coalescingLogFollowsEachTimersGrid() {
        let log = CoalescingLog(first: [100, 1_000], periods: [10, 500], end: 10_000)
        log.fire(0, at: 103, consumed: 1)
        log.fire(1, at: 1_000, consumed: 1)
        log.fire(0, at: 135, consumed: 3)  // deadlines 110, 120, 130
        log.fire(0, at: 139, consumed: 1)  // deadline 140: early
        #expect(log.fires == 4)
        #expect(log.early == 1)
        let summary = log.summary
        #expect(summary.min == -1 && summary.max == 25)
    }

    @Test func clockReadsAreReportedPerReader() {
        let readers = [
            ClockReader(name: "monotonic") { monotonicNanoseconds() },
            ClockReader(name: "constant") { 7 },
        ]
        let figures = ClockReadBench.run(readers, reads: 1_000, reps: 3)
        #expect(figures.map(\.name) == ["monotonic", "constant"])
        #expect(figures.allSatisfy { $0.ns > 0 && $0.reads == 1_000 })
    }

    @Test func percentilesAreNearestRank() {
        let summary = Summary((1...100).map { Int64($0) })
        #expect(summary.p50 == 50 && summary.p90 == 90 && summary.p99 == 99 && summary.max == 100)
        #expect(summary.min == 1 && summary.count == 100 && summary.mean == 50.5)
        #expect(Summary([]).count == 0)
    }
}
