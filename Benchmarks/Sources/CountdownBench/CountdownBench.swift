import CBenchSupport
import Countdowns
import Foundation
import TimerBench
import TimerKit

/// Many countdowns, three ways, side by side in one run: TimerKit's
/// ``CountdownCenter``, one `LoopTimer` per countdown, and one ticker that
/// walks every countdown each second (the OYCountDownManager approach).
///
/// For each side, with `countdowns` countdowns of which `observed` have a
/// display:
///   - memory: the allocator's bytes in use per countdown added;
///   - adding and removing one countdown, nanoseconds (`pairs` adds, then
///     their removal in random order, timed in a second round, after a
///     first that grew each side's storage);
///   - one tick's work: a manual loop advanced by one second, timed;
///   - CPU and loop wake-ups per second on a real loop, run for `realSeconds`;
///   - drift: a simulated hour on a manual loop (`observed` displayed
///     countdowns among ten times as many) in which the ticker is blocked at
///     random moments; at the end, how far each display is from the true
///     remaining time, and how late (or early) each end was reported.
/// Then, for CountdownCenter alone, the cost of dispatching one end with
/// 10,000 and with `countdowns` countdowns pending (O(log n)).
public enum CountdownBench {
    /// How big and how long.
    public struct Config: Sendable {
        public var countdowns: Int
        public var observed: Int
        /// Ticks timed for the tick work (fewer for a side that does a lot each).
        public var ticks: Int
        public var heavyTicks: Int
        public var pairs: Int
        public var realSeconds: Double
        public var simulatedSeconds: Int64
        /// The chance, each simulated second, that the ticker is blocked, and
        /// the longest block, seconds.
        public var blockChance: Double
        public var longestBlock: Int64
        public var dispatchSizes: [Int]

        public static let quick = Config(
            countdowns: 20_000, observed: 100, ticks: 5, heavyTicks: 3, pairs: 5_000, realSeconds: 2,
            simulatedSeconds: 600, blockChance: 0.02, longestBlock: 30, dispatchSizes: [2_000, 20_000])
        public static let standard = Config(
            countdowns: 1_000_000, observed: 1_000, ticks: 30, heavyTicks: 5, pairs: 100_000,
            realSeconds: 5, simulatedSeconds: 3_600, blockChance: 0.02, longestBlock: 30,
            dispatchSizes: [10_000, 1_000_000])

        public init(
            countdowns: Int, observed: Int, ticks: Int, heavyTicks: Int, pairs: Int, realSeconds: Double,
            simulatedSeconds: Int64, blockChance: Double, longestBlock: Int64, dispatchSizes: [Int]
        ) {
            self.countdowns = countdowns
            self.observed = observed
            self.ticks = ticks
            self.heavyTicks = heavyTicks
            self.pairs = pairs
            self.realSeconds = realSeconds
            self.simulatedSeconds = simulatedSeconds
            self.blockChance = blockChance
            self.longestBlock = longestBlock
            self.dispatchSizes = dispatchSizes
        }
    }

    /// One side's figures.
    public struct Row: Sendable {
        public var name: String
        public var bytesPerCountdown = Double.nan
        public var addNs = Double.nan
        public var removeNs = Double.nan
        public var tickP50Ns: Int64 = 0
        public var tickMaxNs: Int64 = 0
        public var cpuPerSecond = Double.nan
        public var wakeupsPerSecond = Double.nan
        public var drift = Drift()
        public var failed: String?

        public init(name: String) { self.name = name }
    }

    /// What a simulated hour with a blocked ticker left behind.
    public struct Drift: Sendable {
        /// Displays compared at the end, and how far off they were, seconds.
        public var displays = 0
        public var meanDisplayError = 0.0
        public var maxDisplayError: Int64 = 0
        /// Ends reported, and how late: mean and max seconds; those reported
        /// before the countdown's true end.
        public var ends = 0
        public var meanEndLateness = 0.0
        public var maxEndLateness = 0.0
        public var earlyEnds = 0
        /// Observed countdowns whose end had passed but was not reported.
        public var missedEnds = 0
        /// Ends reported twice for one countdown.
        public var repeatedEnds = 0
        /// Simulated seconds in which the ticker was blocked.
        public var blockedSeconds: Int64 = 0

        public init() {}
    }

    /// The cost of one end on a center with `size` countdowns pending.
    public struct Dispatch: Sendable {
        public var size: Int
        public var nsPerEnd: Double
    }

    public struct Report: Sendable {
        public var config: Config
        public var seed: UInt64
        public var rows: [Row]
        public var dispatch: [Dispatch]
        public var failures: [String]
        public var elapsedSeconds: Double
    }

    /// The sides, in report order (the first is the reference of the ratios).
    static var sides: [any CountdownSide.Type] { [
        CenterSide.self, PerCountdownTimerSide.self, TickWalkerSide.self,
    ] }

    /// Runs every part for every side.
    public static func run(_ config: Config, seed: UInt64) -> Report {
        let started = monotonicNanoseconds()
        var rng = SeededGenerator(seed: seed)
        var failures: [String] = []
        var rows: [Row] = []
        for side in sides {
            var row = Row(name: side.name)
            do {
                progress("countdowns: \(side.name): memory, add and remove, tick work")
                try measureManual(side, config, &rng, into: &row)
                progress("countdowns: \(side.name): \(config.realSeconds) s on a real loop")
                try measureReal(side, config, &rng, into: &row)
                progress("countdowns: \(side.name): a simulated \(config.simulatedSeconds) s with a blocked ticker")
                row.drift = try simulateDrift(side, config, seed: seed)
            } catch {
                row.failed = "\(error)"
                failures.append("\(side.name): \(error)")
            }
            rows.append(row)
        }
        var dispatch: [Dispatch] = []
        for size in config.dispatchSizes {
            progress("countdowns: dispatching ends with \(size) pending")
            do {
                dispatch.append(Dispatch(size: size, nsPerEnd: try endDispatch(size: size, &rng)))
            } catch {
                failures.append("dispatch at \(size): \(error)")
            }
        }
        return Report(
            config: config, seed: seed, rows: rows, dispatch: dispatch, failures: failures,
            elapsedSeconds: Double(monotonicNanoseconds() - started) / 1e9)
    }

    // MARK: Memory, add and remove, tick work (manual loop)

    static func measureManual(
        _ kind: any CountdownSide.Type, _ config: Config, _ rng: inout SeededGenerator, into row: inout Row
    ) throws {
        let loop = try TimerLoop.manual()
        let side = try kind.init(loop: loop, capacity: config.countdowns + config.pairs)
        defer { side.stop() }
        // Observed countdowns outlive the ticks; the others end in one to
        // three hours, so that the ticks time the displays.
        _ = tkb_release_free_memory()
        let before = tkb_heap_bytes_in_use()
        for index in 0..<config.countdowns {
            let observed = index < config.observed
            _ = try side.add(remaining: rng.next(in: 3_600, 10_800) * 1_000_000_000, observed: observed)
        }
        let after = tkb_heap_bytes_in_use()
        if before >= 0, after >= 0 {
            row.bytesPerCountdown = Double(after - before) / Double(config.countdowns)
        }

        let durations = (0..<config.pairs).map { _ in rng.next(in: 3_600, 10_800) * 1_000_000_000 }
        let order = Array(0..<config.pairs).shuffled(using: &rng)
        // A first round grows every side's storage; the second is timed as
        // the steady state.
        _ = try side.timeAddsAndRemoves(durations, order: order)
        let (adds, removes) = try side.timeAddsAndRemoves(durations, order: order)
        row.addNs = Double(adds) / Double(config.pairs)
        row.removeNs = Double(removes) / Double(config.pairs)

        let ticks = kind == PerCountdownTimerSide.self ? config.heavyTicks : config.ticks
        var samples: [Int64] = []
        try loop.advance(by: .seconds(1))  // warm
        for _ in 0..<ticks {
            let start = monotonicNanoseconds()
            try loop.advance(by: .seconds(1))
            samples.append(monotonicNanoseconds() - start)
        }
        let summary = Summary(samples)
        row.tickP50Ns = summary.p50
        row.tickMaxNs = summary.max
    }

    // MARK: CPU and wake-ups (real loop)

    static func measureReal(
        _ kind: any CountdownSide.Type, _ config: Config, _ rng: inout SeededGenerator, into row: inout Row
    ) throws {
        let loop = try TimerLoop()
        let side = try kind.init(loop: loop, capacity: config.countdowns)
        defer { side.stop() }
        for index in 0..<config.countdowns {
            let observed = index < config.observed
            _ = try side.add(remaining: rng.next(in: 3_600, 10_800) * 1_000_000_000, observed: observed)
        }
        // One second first, so that every side is in its steady state.
        try loop.run(for: .seconds(1))
        let statistics = loop.statistics
        let cpu = processCPUNanoseconds()
        let start = monotonicNanoseconds()
        try loop.run(for: .nanoseconds(Int64(config.realSeconds * 1e9)))
        let seconds = Double(monotonicNanoseconds() - start) / 1e9
        row.cpuPerSecond = Double(processCPUNanoseconds() - cpu) / 1e9 / seconds
        row.wakeupsPerSecond = Double(loop.statistics.wakeups - statistics.wakeups) / seconds
    }

    // MARK: Drift (a simulated hour, manual loop)

    /// `observed` displayed countdowns among ten times as many, ending in a
    /// minute to twice the simulated span (about half end within it); each simulated second, the
    /// ticker is blocked with `blockChance` for 2 to `longestBlock` seconds
    /// (both clocks jump; due timers then fire once, as on a thread that
    /// was stuck). The same seed gives every side the same hour.
    static func simulateDrift(
        _ kind: any CountdownSide.Type, _ config: Config, seed: UInt64
    ) throws -> Drift {
        var rng = SeededGenerator(seed: seed ^ 0x5EED_D81F)
        let loop = try TimerLoop.manual()
        let total = config.observed * 10
        let side = try kind.init(loop: loop, capacity: total)
        defer { side.stop() }
        var observed: [Int] = []
        var ends: [Int: Int64] = [:]
        let start = loop.now(.boot).offset.nanoseconds
        for index in 0..<total {
            let seconds = rng.next(in: 60, 2 * config.simulatedSeconds)
            let handle = try side.add(remaining: seconds * 1_000_000_000, observed: index % 10 == 0)
            if index % 10 == 0 {
                observed.append(handle)
                ends[handle] = start + seconds * 1_000_000_000
            }
        }
        var drift = Drift()
        var elapsed: Int64 = 0
        while elapsed < config.simulatedSeconds {
            if Double(rng.next() % 1_000_000) / 1e6 < config.blockChance {
                let block = min(rng.next(in: 2, config.longestBlock + 1), config.simulatedSeconds - elapsed)
                try loop.setManualTime(to: loop.now(.monotonic) + .seconds(block))
                try loop.setManualTime(to: loop.now(.boot) + .seconds(block))
                try loop.advance(by: .zero)
                elapsed += block
                drift.blockedSeconds += block
            } else {
                try loop.advance(by: .seconds(1))
                elapsed += 1
            }
        }
        let now = loop.now(.boot).offset.nanoseconds
        let record = side.record
        var errors: [Int64] = []
        var lateness: [Int64] = []
        for handle in observed {
            guard let end = ends[handle] else { continue }
            let reported = record.endLateness[handle]
            if end > now {
                let truth = (end - now + 999_999_999) / 1_000_000_000
                errors.append(abs(side.displayed(handle) - truth))
                if reported != nil { drift.earlyEnds += 1 }
            } else if reported == nil {
                drift.missedEnds += 1
            }
            if let reported { lateness.append(reported) }
        }
        drift.repeatedEnds = record.repeatedEnds
        drift.ends = lateness.count
        if !lateness.isEmpty {
            drift.meanEndLateness = Double(lateness.reduce(0, +)) / Double(lateness.count) / 1e9
            drift.maxEndLateness = Double(lateness.max() ?? 0) / 1e9
        }
        drift.displays = errors.count
        drift.meanDisplayError = errors.isEmpty ? 0 : Double(errors.reduce(0, +)) / Double(errors.count)
        drift.maxDisplayError = errors.max() ?? 0
        return drift
    }

    // MARK: End dispatch (CountdownCenter)

    /// Nanoseconds per end for a center with `size` countdowns ending at
    /// distinct moments within ten seconds, each dispatched by its own pass.
    static func endDispatch(size: Int, _ rng: inout SeededGenerator) throws -> Double {
        let loop = try TimerLoop.manual()
        let center = try CountdownCenter(loop: loop)
        let counter = EndCounter()
        center.onEnd { _ in counter.count += 1 }
        for _ in 0..<size {
            center.add(remaining: .nanoseconds(rng.next(in: 10_000_000_000, 20_000_000_000)))
        }
        try loop.advance(by: .seconds(10))
        let start = monotonicNanoseconds()
        try loop.advance(by: .seconds(10))
        let elapsed = monotonicNanoseconds() - start
        guard counter.count == size else {
            throw BenchError("\(counter.count) of \(size) ends dispatched")
        }
        return Double(elapsed) / Double(size)
    }

    private final class EndCounter: @unchecked Sendable {
        var count = 0
    }

    struct BenchError: Error, CustomStringConvertible {
        var description: String
        init(_ description: String) { self.description = description }
    }
}
