// The ordo-one/benchmark suite: `swift package benchmark` from Benchmarks/.
//
// Every benchmark runs in a process of its own (the benchmark tool starts one
// per benchmark), which is what makes the memory figures clean. The peers are
// the ones `timer-peers` measures (TimerBench plus SwiftNIO, NIOPeers):
//
//   Churn/<side>/<n>          schedule a timer and cancel a random pending one,
//                             n pending; 1,000 operations per iteration
//   Pair/<side>               schedule a timer and cancel it, 1,000 pending
//   Memory/<side>             resident bytes per pending timer at 1M (RSS
//                             delta), and the allocations of filling them
//   Lateness/<side>/<period>  fire time - grid time of a repeating timer, one
//                             sample per fire (custom metric, ns)
//   Coalescing/<side>/<tol>   10,000 repeating timers with random periods:
//                             wake-ups and voluntary context switches per second
//   Clock/<clock>             one clock read, 1,000 per iteration
//
// Sides capped by an O(n) cancel (Foundation) are left out above their cap.
import Benchmark
import NIOPeers
import TimerBench

/// The operations of one iteration.
private let opsPerIteration = 1_000

/// A side filled with `size` pending timers, and random operands drawn up front.
final class ScheduleFixture {
    let side: any ScheduleSide
    let size: Int
    private let delays: [Int64]
    private let victims: [Int]
    private var offset = 0
    private static let pool = 1 << 16

    init(_ maker: ScheduleSideMaker, size: Int, seed: UInt64) throws {
        var rng = SeededGenerator(seed: seed)
        let minDelay: Int64 = 100_000_000_000
        let maxDelay: Int64 = 1_000_000_000_000
        side = try maker.make()
        self.size = size
        try side.fill((0..<size).map { _ in rng.next(in: minDelay, maxDelay) })
        side.settle()
        delays = (0..<Self.pool).map { _ in rng.next(in: minDelay, maxDelay) }
        victims = (0..<Self.pool).map { _ in rng.index(below: size) }
    }

    /// The next `count` operands (count <= pool).
    private func window(_ count: Int) -> Range<Int> {
        if offset + count > Self.pool { offset = 0 }
        defer { offset += count }
        return offset..<(offset + count)
    }

    func churn(_ count: Int) throws {
        let range = window(count)
        try delays.withUnsafeBufferPointer { d in
            try victims.withUnsafeBufferPointer { v in
                try side.churn(UnsafeBufferPointer(rebasing: d[range]), UnsafeBufferPointer(rebasing: v[range]))
            }
        }
        side.settle()
    }

    func pairs(_ count: Int) throws {
        let range = window(count)
        try delays.withUnsafeBufferPointer { d in
            try side.pairs(UnsafeBufferPointer(rebasing: d[range]))
        }
        side.settle()
    }
}

private func scheduleMakers() -> [ScheduleSideMaker] {
    ScheduleSideMaker.standard(quick: false) + NIOPeers.scheduleSides()
}

private func latenessPeers() throws -> [any LatenessPeer] {
    try LatenessBench.standardPeers() + [NIOPeers.latenessPeer()]
}

private let latenessMetric = BenchmarkMetric.custom("lateness (ns)", polarity: .prefersSmaller, useScalingFactor: false)
private let bytesPerTimerMetric = BenchmarkMetric.custom("RSS bytes per timer", polarity: .prefersSmaller, useScalingFactor: false)
private let wakeupsMetric = BenchmarkMetric.custom("loop wake-ups per s", polarity: .prefersSmaller, useScalingFactor: false)
private let switchesMetric = BenchmarkMetric.custom("voluntary ctx switches per s", polarity: .prefersSmaller, useScalingFactor: false)
private let firesMetric = BenchmarkMetric.custom("fires per s", polarity: .prefersLarger, useScalingFactor: false)
private let coalescedLatenessMetric = BenchmarkMetric.custom("lateness p99 (ns)", polarity: .prefersSmaller, useScalingFactor: false)

let benchmarks: @Sendable () -> Void = {
    let operationMetrics: [BenchmarkMetric] = [.wallClock, .cpuTotal, .throughput, .mallocCountTotal]

    // Churn and pairs.
    for maker in scheduleMakers() {
        for size in [1_000, 100_000, 1_000_000] where size <= (maker.maxPending ?? .max) {
            Benchmark(
                "Churn/\(maker.name)/\(size)",
                configuration: .init(
                    metrics: operationMetrics, scalingFactor: .kilo, maxDuration: .seconds(2), maxIterations: 200),
                closure: { benchmark, fixture in
                    do { try fixture.churn(opsPerIteration) } catch { benchmark.error("\(error)") }
                },
                setup: { try ScheduleFixture(maker, size: size, seed: 7) })
        }
        Benchmark(
            "Pair/\(maker.name)",
            configuration: .init(
                metrics: operationMetrics, scalingFactor: .kilo, maxDuration: .seconds(2), maxIterations: 200),
            closure: { benchmark, fixture in
                do { try fixture.pairs(opsPerIteration) } catch { benchmark.error("\(error)") }
            },
            setup: { try ScheduleFixture(maker, size: 1_000, seed: 7) })

        // One fill per process: a second one would reuse the first one's pages.
        let pending = min(1_000_000, maker.maxPending ?? .max)
        Benchmark(
            "Memory/\(maker.name)/\(pending)",
            configuration: .init(
                metrics: [bytesPerTimerMetric, .mallocCountTotal, .wallClock], warmupIterations: 0,
                maxIterations: 1)
        ) { benchmark in
            do {
                var rng = SeededGenerator(seed: 7)
                let delays = (0..<pending).map { _ in rng.next(in: 100_000_000_000, 1_000_000_000_000) }
                let side = try maker.make()
                benchmark.startMeasurement()
                let before = ResidentMemory.bytes() ?? 0
                try side.fill(delays)
                side.settle()
                let after = ResidentMemory.bytes() ?? 0
                benchmark.stopMeasurement()
                benchmark.measurement(bytesPerTimerMetric, (after - before) / pending)
                // Not drained: the process ends with the benchmark.
            } catch {
                benchmark.error("\(error)")
            }
        }
    }

    // Lateness: every fire is one sample.
    let names = (try? latenessPeers().map(\.name)) ?? []
    for (index, name) in names.enumerated() {
        for (period, fires, rounds) in [(1_000_000 as Int64, 26, 20), (5_000_000, 26, 8), (100_000_000, 11, 2)] {
            Benchmark(
                "Lateness/\(name)/\(period / 1_000_000) ms",
                configuration: .init(
                    metrics: [latenessMetric], warmupIterations: 1, maxDuration: .seconds(60),
                    maxIterations: rounds),
                closure: { benchmark, peer in
                    do {
                        let round = try peer.round(RoundSpec(period: period, fires: fires, discard: 1))
                        for sample in round.samples { benchmark.measurement(latenessMetric, Int(sample)) }
                    } catch {
                        benchmark.error("\(error)")
                    }
                },
                setup: { try latenessPeers()[index] })
        }
    }

    // Coalescing.
    for side in CoalescingSide.allCases {
        for fraction in [0.0, 0.1] {
            Benchmark(
                "Coalescing/\(side.rawValue)/\(Int(fraction * 100))%",
                configuration: .init(
                    metrics: [wakeupsMetric, switchesMetric, firesMetric, coalescedLatenessMetric],
                    warmupIterations: 0, maxDuration: .seconds(30), maxIterations: 3)
            ) { benchmark in
                var rng = SeededGenerator(seed: 7)
                do {
                    let figure = try CoalescingBench.measure(
                        side, timers: 10_000, periods: 100_000_000...1_000_000_000, fraction: fraction,
                        duration: 3_000_000_000, rng: &rng)
                    if let wakeups = figure.wakeupsPerSecond {
                        benchmark.measurement(wakeupsMetric, Int(wakeups.rounded()))
                    }
                    benchmark.measurement(switchesMetric, Int(figure.switchesPerSecond.rounded()))
                    benchmark.measurement(firesMetric, Int(figure.firesPerSecond.rounded()))
                    benchmark.measurement(coalescedLatenessMetric, Int(figure.lateness.p99))
                } catch {
                    benchmark.error("\(error)")
                }
            }
        }
    }

    // Clock reads.
    for reader in ClockReader.standard + [NIOPeers.clockReader] {
        Benchmark(
            "Clock/\(reader.name)",
            configuration: .init(metrics: [.wallClock, .throughput], scalingFactor: .kilo, maxDuration: .seconds(1))
        ) { benchmark in
            for _ in benchmark.scaledIterations { blackHole(reader.read()) }
        }
    }
}
