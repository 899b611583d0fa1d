import Testing
import TimerKit

@testable import CountdownBench

/// The countdown benchmark's own checks: each side keeps its displays and
/// ends the way the report says it does, on a manual clock.
@Suite struct CountdownBenchTests {
    static let small = CountdownBench.Config(
        countdowns: 300, observed: 20, ticks: 2, heavyTicks: 2, pairs: 50, realSeconds: 0.05,
        simulatedSeconds: 900, blockChance: 0.05, longestBlock: 20, dispatchSizes: [100, 400])

    @Test func centerDoesNotDriftWhenTheTickerIsBlocked() throws {
        let drift = try CountdownBench.simulateDrift(CenterSide.self, Self.small, seed: 11)
        #expect(drift.blockedSeconds > 0)
        #expect(drift.displays > 0)
        #expect(drift.maxDisplayError <= 1)  // the display shows the value of the last tick, at most one behind
        #expect(drift.ends > 0)
        #expect(drift.earlyEnds == 0)
        #expect(drift.missedEnds == 0)
        #expect(drift.repeatedEnds == 0)
    }

    @Test(arguments: [1, 2])
    func tickCountersDriftByTheBlockedTime(_ index: Int) throws {
        let side = CountdownBench.sides[index]
        let drift = try CountdownBench.simulateDrift(side, Self.small, seed: 11)
        #expect(drift.blockedSeconds > 0)
        // Every block of b seconds costs a tick counter b - 1 seconds.
        #expect(drift.maxDisplayError > 1)
        #expect(drift.meanEndLateness > 0 || drift.missedEnds > 0)
        #expect(drift.earlyEnds == 0)
        #expect(drift.repeatedEnds == 0)
    }

    @Test func withoutBlocksNoSideDrifts() throws {
        var config = Self.small
        config.blockChance = 0
        for side in CountdownBench.sides {
            let drift = try CountdownBench.simulateDrift(side, config, seed: 5)
            #expect(drift.blockedSeconds == 0)
            #expect(drift.maxDisplayError == 0, "\(side.name)")
            #expect(drift.missedEnds == 0, "\(side.name)")
            #expect(drift.ends > 0, "\(side.name)")
            #expect(drift.maxEndLateness == 0, "\(side.name)")
        }
    }

    @Test func sidesAddAndRemove() throws {
        for kind in CountdownBench.sides {
            let loop = try TimerLoop.manual()
            let side = try kind.init(loop: loop, capacity: 10)
            let kept = try side.add(remaining: 5_000_000_000, observed: true)
            let removed = try side.add(remaining: 2_000_000_000, observed: true)
            side.remove(removed)
            try loop.advance(by: .seconds(3))
            #expect(side.displayed(kept) == 2, "\(kind.name)")
            #expect(side.record.endLateness[removed] == nil, "\(kind.name): a removed countdown ended")
            try loop.advance(by: .seconds(2))
            #expect(side.record.endLateness[kept] == 0, "\(kind.name)")
            side.stop()
        }
    }

    @Test func quickRunReportsEverySide() throws {
        let report = CountdownBench.run(Self.small, seed: 3)
        #expect(report.failures.isEmpty, "\(report.failures)")
        #expect(report.rows.count == 3)
        for row in report.rows {
            #expect(row.addNs > 0 && row.removeNs > 0, "\(row.name)")
            #expect(row.tickP50Ns > 0, "\(row.name)")
            #expect(row.cpuPerSecond >= 0, "\(row.name)")
        }
        #expect(report.dispatch.map(\.size) == [100, 400])
        let text = report.text(machine: .describe(), load: "-")
        #expect(text.contains("CountdownCenter"))
        #expect(text.contains("Targets for CountdownCenter"))
    }
}
