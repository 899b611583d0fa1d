import Foundation

/// The side-by-side benchmark: TimerKit against Foundation, Dispatch, the
/// standard library and any peers a program adds (Benchmarks/ adds SwiftNIO),
/// measured in one run: `timer-peers` runs it with SwiftNIO added.
public enum BenchCommand {
    /// How long and how thorough a run is.
    public enum Length: String, Sendable {
        /// A few seconds, to keep the command working (CI runs it).
        case quick
        /// About a minute and a half.
        case standard
        /// About two and a half minutes: 1M pending timers, more rounds; the
        /// README's table.
        case full
    }

    public struct Options: Sendable {
        public var length = Length.standard
        public var json = false
        public var seed: UInt64?
        /// The directory to write the run's SVG charts into, if any.
        public var charts: String?

        public init() {}

        /// Reads `--quick`, `--full`, `--json`, `--seed N` and `--charts DIR`;
        /// nil and a message for anything else.
        public static func parse(_ arguments: some Sequence<String>) -> (Options?, String?) {
            var options = Options()
            var rest = Array(arguments)[...]
            while let argument = rest.popFirst() {
                switch argument {
                case "--quick": options.length = .quick
                case "--full": options.length = .full
                case "--json": options.json = true
                case "--seed":
                    guard let value = rest.popFirst(), let seed = wholeNumber(value) else {
                        return (nil, "--seed needs a number")
                    }
                    options.seed = seed
                case "--charts":
                    guard let directory = rest.popFirst(), !directory.isEmpty, !directory.hasPrefix("--") else {
                        return (nil, "--charts needs a directory")
                    }
                    options.charts = directory
                default:
                    return (nil, "unknown option \(argument)")
                }
            }
            return (options, nil)
        }
    }

    /// Everything measured, TimerKit's sides first.
    public struct Peers {
        public var schedule: [ScheduleSideMaker]
        /// Makes the lateness peers: the floor first, then the C loop and
        /// TimerKit's loop (the ratios are taken against them).
        public var lateness: () throws -> [any LatenessPeer]
        public var clocks: [ClockReader]
        /// Counts allocations, when the program interposes malloc.
        public var mallocs: MallocCounter?

        public init(
            schedule: [ScheduleSideMaker], lateness: @escaping () throws -> [any LatenessPeer],
            clocks: [ClockReader], mallocs: MallocCounter? = nil
        ) {
            self.schedule = schedule
            self.lateness = lateness
            self.clocks = clocks
            self.mallocs = mallocs
        }

        /// The peers that need no package.
        public static func standard(_ length: Length) -> Peers {
            Peers(
                schedule: ScheduleSideMaker.standard(quick: length == .quick),
                lateness: { try LatenessBench.standardPeers() }, clocks: ClockReader.standard)
        }
    }

    /// The goals the figures are judged against.
    static let scheduleTargetNs = 150.0
    static let scheduleTargetPending = 100_000
    static let latenessTargetRatio = 1.2
    static let latenessTargetMaxPeriod: Int64 = 5_000_000

    /// Runs the benchmark, prints the table (or JSON) on stdout and progress
    /// on stderr, and writes the charts when asked (`Options.charts`); 0 when
    /// every side ran and the charts were written, 1 otherwise, and 64,
    /// before measuring, for a `TK_SEED` (read when no seed is given) that
    /// is not a whole number.
    public static func run(_ options: Options, peers: Peers? = nil) -> Int32 {
        let length = options.length
        // A directory that cannot be made fails the run before it measures.
        if let directory = options.charts {
            do {
                try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
            } catch {
                FileHandle.standardError.write(Data("bench: FAILED: charts: cannot make \(directory): \(error)\n".utf8))
                return 1
            }
        }
        let peers = peers ?? .standard(length)
        let fromEnvironment = environmentSeed()
        if options.seed == nil, let problem = fromEnvironment.problem {
            FileHandle.standardError.write(Data("bench: \(problem)\n".utf8))
            return 64
        }
        let seed = options.seed ?? fromEnvironment.seed
            ?? UInt64(truncatingIfNeeded: monotonicNanoseconds() ^ Int64(getpid()))
        var rng = SeededGenerator(seed: seed)
        let machine = Machine.describe()
        let loadBefore = Machine.loadAverage()
        progress("bench (\(length.rawValue)), seed \(seed)")
        let started = monotonicNanoseconds()
        var failures: [String] = []

        let schedule = ScheduleConfig(
            sizes: length == .quick ? [1_000, 10_000]
                : length == .standard ? [1_000, 100_000] : [1_000, 100_000, 1_000_000],
            reps: length == .quick ? 3 : 5,
            repTargetNs: length == .quick ? 2_000_000 : 25_000_000)
        let lateness = LatenessConfig(
            periods: [1_000_000, 5_000_000, 100_000_000],
            rounds: length == .quick ? [1, 1, 1] : length == .standard ? [30, 8, 1] : [60, 20, 3],
            firesPerRound: length == .quick ? [12, 6, 3] : [26, 26, 11])
        let tolerance = ToleranceConfig(sleeps: length == .quick ? 8 : 100)
        let coalescing = CoalescingConfig(
            timers: length == .quick ? 1_000 : 10_000,
            duration: length == .quick ? 300_000_000 : length == .standard ? 2_000_000_000 : 5_000_000_000)

        // The schedule part runs last: what it leaves behind would disturb
        // the real-time parts. A cancelled Task.sleep keeps its timer queued
        // in Dispatch until the original deadline (100 s and more later),
        // when it wakes a worker thread for nothing.
        let clockFigures = ClockReadBench.run(
            peers.clocks, reads: length == .quick ? 20_000 : 1_000_000, reps: length == .quick ? 3 : 7)
        var latenessResults: [LatenessResult] = []
        do {
            latenessResults = LatenessBench.run(lateness, peers: try peers.lateness(), failures: &failures)
        } catch {
            failures.append("lateness: making the peers: \(error)")
        }
        let toleranceResult = ToleranceBench.run(tolerance, failures: &failures)
        let coalescingFigures = CoalescingBench.run(coalescing, rng: &rng, failures: &failures)
        let scheduleRows = ScheduleBench.run(
            schedule, makers: peers.schedule, mallocs: peers.mallocs, rng: &rng, failures: &failures)
        let elapsed = monotonicNanoseconds() - started
        progress("done in \(fixed(Double(elapsed) / 1e9, 1)) s")

        let report = BenchReport(
            length: length, seed: seed, machine: machine, elapsedNs: elapsed,
            load: (loadBefore, Machine.loadAverage()), countsMallocs: peers.mallocs != nil,
            schedule: schedule, scheduleRows: scheduleRows, lateness: lateness,
            latenessResults: latenessResults, tolerance: tolerance, toleranceResult: toleranceResult,
            coalescing: coalescing, coalescingFigures: coalescingFigures, clockFigures: clockFigures,
            failures: failures)
        print(options.json ? report.json.render() : report.text)
        if let directory = options.charts {
            do {
                let paths = try BenchCharts.write(report, to: directory)
                progress("charts: \(paths.joined(separator: ", "))")
            } catch {
                failures.append("charts: writing to \(directory): \(error)")
            }
        }
        for failure in failures {
            FileHandle.standardError.write(Data("bench: FAILED: \(failure)\n".utf8))
        }
        return failures.isEmpty ? 0 : 1
    }
}
