import Testing
import TimerKit
import TrustedTime

@testable import Countdowns

// Flash sales on a manual loop: from a server's "remaining" payload (boot
// clock) and from a server start instant (trusted clock); wall-clock steps
// move neither; a re-sync that moves server time re-plans the end and tells.

/// A trusted clock on `loop`'s manual clocks, synced so that server time is
/// `serverNow` at the loop's boot time now (a 2 ms exchange).
func syncedClock(on loop: TimerLoop, serverNow: Duration) throws -> TrustedClock {
    let clock = TrustedClock(readings: LoopClockReadings(loop: loop, bootID: "test-boot"))
    let received = loop.now(.boot)
    try clock.sync(with: TimeSample(
        serverTime: serverNow - .milliseconds(1), sentAt: received - .milliseconds(2),
        receivedAt: received))
    return clock
}

@Suite("Flash sales")
struct FlashSaleTests {
    @Test("from the server's remaining seconds: ends exactly once, whatever the wall clock does")
    func fromRemaining() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(5_000))
        let center = try CountdownCenter(loop: loop)
        let received = loop.now(.boot)
        try loop.advance(by: .milliseconds(300))  // the payload is handled a little later
        let sale = FlashSale(center: center, remaining: .seconds(79_836), receivedAt: received)
        #expect(sale.remaining == .milliseconds(79_835_700))
        let ended = Locked(0)
        let observation = try sale.observe(every: .seconds(3_600)) { event in
            if case .ended = event { ended.withLock { $0 += 1 } }
        }
        // The user sets the clock a day ahead, then back a week: nothing moves.
        try loop.setManualTime(to: loop.now(.wall) + .seconds(86_400))
        try loop.advance(by: .seconds(1_000))
        try loop.setManualTime(to: loop.now(.wall) - .seconds(7 * 86_400))
        try loop.advance(by: .seconds(1_000))
        #expect(sale.remaining == .milliseconds(77_835_700))
        try loop.advance(by: .seconds(100_000))
        #expect(ended.value == 1)
        #expect(sale.hasEnded)
        #expect(sale.remaining == nil)
        observation.cancel()
    }

    @Test("a reply time after now counts as now: the sale is not lengthened, on a boot-clock center or a trusted one")
    func replyTimeInTheFuture() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(5_000))
        let center = try CountdownCenter(loop: loop)
        let trusted = try CountdownCenter(
            loop: loop, timeBase: .trusted(try syncedClock(on: loop, serverNow: .seconds(1_767_225_600))))
        for center in [center, trusted] {
            let sale = FlashSale(center: center, remaining: .seconds(60), receivedAt: loop.now(.boot) + .seconds(3_600))
            #expect(sale.remaining == .seconds(60))
            let earlier = FlashSale(center: center, remaining: .seconds(60), receivedAt: loop.now(.boot) - .seconds(10))
            #expect(earlier.remaining == .seconds(50))
        }
    }

    @Test("a sale made already over reads 0 left, and ended from the loop's next pass, which delivers its end")
    func alreadyOver() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(5_000))
        let center = try CountdownCenter(loop: loop)
        let ends = Locked(0)
        center.onEnd { _ in ends.withLock { $0 += 1 } }
        let sale = FlashSale(center: center, remaining: .seconds(-3), receivedAt: loop.now(.boot))
        #expect(sale.remaining == .zero && !sale.hasEnded && ends.value == 0)
        try loop.advance(by: .zero)
        #expect(sale.hasEnded && ends.value == 1)
    }

    @Test("from the server's start instant on a trusted clock: the wall clock moves nothing")
    func fromServerInstant() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(5_000))
        let clock = try syncedClock(on: loop, serverNow: .seconds(1_767_297_000))
        let center = try CountdownCenter(loop: loop, timeBase: .trusted(clock))
        let sale = try FlashSale(center: center, at: TrustedTime(sinceEpoch: .seconds(1_767_297_600)))
        #expect(sale.remaining == .seconds(600))
        let log = Locked<[String]>([])
        let observation = try sale.observe(every: .seconds(60)) { event in
            switch event {
            case .tick(let tick): log.withLock { $0.append("\(tick.value)") }
            case .ended(let end): log.withLock { $0.append("ended late \(end.lateness)") }
            }
        }
        try loop.setManualTime(to: loop.now(.wall) - .seconds(3_600))  // the user sets it back
        try loop.advance(by: .seconds(300))
        #expect(sale.remaining == .seconds(300))
        try loop.setManualTime(to: loop.now(.wall) + .seconds(86_400))
        try loop.advance(by: .seconds(300))
        #expect(log.value == ["9", "8", "7", "6", "5", "4", "3", "2", "1", "ended late 0.0 seconds"])
        observation.cancel()
    }

    @Test("a re-sync that moves server time re-plans the end at once, and a large move is told")
    func resyncJump() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(5_000))
        let clock = try syncedClock(on: loop, serverNow: .seconds(1_767_297_000))
        let center = try CountdownCenter(loop: loop, timeBase: .trusted(clock))
        let sale = try FlashSale(center: center, at: TrustedTime(sinceEpoch: .seconds(1_767_297_600)))
        let jumps = Locked<[Duration]>([])
        sale.onServerTimeJump(threshold: .seconds(5)) { jump in jumps.withLock { $0.append(jump.change) } }
        let ends = Locked<[Duration]>([])
        center.onEnd { _ in ends.withLock { $0.append(loop.now(.boot).offset) } }
        try loop.advance(by: .seconds(100))
        // A new, better sample says the server is 20 s ahead of what we thought.
        let received = loop.now(.boot)
        try clock.sync(with: TimeSample(
            serverTime: .seconds(1_767_297_120) - .microseconds(100),
            sentAt: received - .microseconds(200), receivedAt: received))
        try loop.advance(by: .zero)
        #expect(jumps.value.count == 1)
        #expect(abs((jumps.value.first ?? .zero) - .seconds(20)) < .milliseconds(2))
        #expect(sale.remaining! <= .seconds(480) && sale.remaining! > .milliseconds(479_990))
        // A small re-sync re-plans without telling.
        try loop.advance(by: .seconds(10))
        let again = loop.now(.boot)
        try clock.sync(with: TimeSample(
            serverTime: .seconds(1_767_297_131) - .microseconds(50), sentAt: again - .microseconds(100),
            receivedAt: again))
        try loop.advance(by: .zero)
        #expect(jumps.value.count == 1)
        try loop.advance(by: .seconds(1_000))
        #expect(ends.value.count == 1)
        // It ended when server time reached the start, about 469 s after the re-sync at 5,110 s.
        #expect(abs(ends.value[0] - .seconds(5_579)) < .milliseconds(10))
    }

    @Test(
        "before the clock's first sync: the wall clock as the center was made, which setting it moves not; the first sync moves it to server time and tells",
        arguments: [Duration.seconds(30), .zero])
    func beforeFirstSync(serverAhead: Duration) throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(5_000))
        let clock = TrustedClock(readings: LoopClockReadings(loop: loop, bootID: "test-boot"))
        let center = try CountdownCenter(loop: loop, timeBase: .trusted(clock))
        let start = loop.now(.wall).offset
        let countdown = try center.add(endingAt: TrustedTime(sinceEpoch: start + .seconds(60)))
        let jumps = Locked<[Duration]>([])
        center.onTimeBaseJump(threshold: .seconds(5)) { jump in jumps.withLock { $0.append(jump.change) } }
        let ends = Locked<[String]>([])
        center.onEnd { end in
            ends.withLock { $0.append("\(loop.now(.boot).offset - .seconds(5_000)), \(end.lateness) late") }
        }
        try loop.advance(by: .seconds(5))
        // The user sets the wall clock 30 s forward: the end does not come
        // nearer, and what remains reads what the end will keep to.
        try loop.setManualTime(to: loop.now(.wall) + .seconds(30))
        try loop.advance(by: .seconds(31))
        #expect(center.remaining(countdown) == .seconds(24))
        #expect(ends.value.isEmpty && jumps.value.isEmpty)
        // The first sync: server time is the wall clock as it reads now
        // (the step was right), or as it would read without the step.
        let received = loop.now(.boot)
        let server = start + .seconds(36) + serverAhead
        try clock.sync(with: TimeSample(serverTime: server, sentAt: received, receivedAt: received))
        try loop.advance(by: .zero)
        #expect(jumps.value == (serverAhead == .zero ? [] : [serverAhead]))
        if serverAhead == .zero {
            #expect(center.remaining(countdown) == .seconds(24))
            try loop.advance(by: .seconds(24))
            #expect(ends.value == ["60.0 seconds, 0.0 seconds late"])
        } else {
            // Server time is 66 s in: the end passed 6 s ago, and comes at once.
            #expect(ends.value == ["36.0 seconds, 6.0 seconds late"])
        }
    }

    @Test("before the clock's first sync, a restore that brings no sample, or a reset, moves nothing: a wall clock set since does not end the sale")
    func restoreWithNoSamplesBeforeFirstSync() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(5_000))
        let readings = LoopClockReadings(loop: loop, bootID: "test-boot")
        // An earlier run that could not sync saved its state.
        let path = temporaryPath("trusted.state")
        defer { removeTemporaryDirectory(of: path) }
        try TrustedClock(readings: readings).save(to: path)
        let clock = TrustedClock(readings: readings)
        let center = try CountdownCenter(loop: loop, timeBase: .trusted(clock))
        let start = loop.now(.wall).offset
        let sale = try FlashSale(center: center, at: TrustedTime(sinceEpoch: start + .seconds(3_600)))
        // The user sets the wall clock a day forward; then the state is restored.
        try loop.setManualTime(to: loop.now(.wall) + .seconds(86_400))
        try loop.advance(by: .seconds(10))
        #expect(try clock.restore(from: path) == .restored(samples: 0))
        #expect(!clock.isSynced)
        try loop.advance(by: .seconds(1))
        #expect(!sale.hasEnded)
        #expect(sale.remaining == .seconds(3_589))
        // Nor does a reset of the unsynced clock, which had no sample to drop.
        clock.reset()
        try loop.advance(by: .seconds(1))
        #expect(!sale.hasEnded)
        #expect(sale.remaining == .seconds(3_588))
    }

    @Test("a reset of a synced clock moves nothing: a wall clock set since does not end the sale, and the next sync places it")
    func resetAfterSync() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(5_000))
        let clock = TrustedClock(readings: LoopClockReadings(loop: loop, bootID: "test-boot"))
        // Server time is 100 s ahead of the wall clock.
        let serverAhead = Duration.seconds(100)
        func sync() throws {
            let boot = loop.now(.boot)
            try clock.sync(with: TimeSample(
                serverTime: loop.now(.wall).offset + serverAhead, sentAt: boot, receivedAt: boot))
        }
        try sync()
        let center = try CountdownCenter(loop: loop, timeBase: .trusted(clock))
        let jumps = Locked<[Duration]>([])
        center.onTimeBaseJump(threshold: .zero) { jump in jumps.withLock { $0.append(jump.change) } }
        let sale = try FlashSale(center: center, at: clock.now.advanced(by: .seconds(3_600)))
        // The user sets the wall clock a day forward; the app drops its
        // samples to sync again.
        try loop.setManualTime(to: loop.now(.wall) + .seconds(86_400))
        try loop.advance(by: .seconds(1))
        #expect(sale.remaining == .seconds(3_599))
        clock.reset()
        #expect(!clock.isSynced)
        try loop.advance(by: .seconds(1))
        #expect(!sale.hasEnded)
        #expect(sale.remaining == .seconds(3_598))
        #expect(jumps.withLock { $0 } == [])
        // The next sync: the server, 100 s ahead of the wall clock as it
        // was (the user's day is the wall clock's own), had moved 2 s.
        try loop.setManualTime(to: loop.now(.wall) - .seconds(86_400))
        try sync()
        try loop.advance(by: .seconds(1))
        #expect(sale.remaining == .seconds(3_597))
        #expect(!sale.hasEnded)
    }

    @Test("a sync that lands while a trusted center is made: the center counts on it, and tells no jump")
    func syncWhileMade() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(5_000))
        let readings = HookedReadings(LoopClockReadings(loop: loop, bootID: "test-boot"))
        let clock = TrustedClock(readings: readings)
        // Server time is 100 s ahead of the wall clock; the sync comes as
        // the center reads the clock.
        let serverAhead = Duration.seconds(100)
        readings.afterNextWallRead {
            let received = loop.now(.boot)
            _ = try? clock.sync(with: TimeSample(
                serverTime: loop.now(.wall).offset + serverAhead, sentAt: received, receivedAt: received))
        }
        let center = try CountdownCenter(loop: loop, timeBase: .trusted(clock))
        #expect(clock.isSynced)
        let jumps = Locked<[Duration]>([])
        center.onTimeBaseJump(threshold: .zero) { jump in jumps.withLock { $0.append(jump.change) } }
        let countdown = try center.add(endingAt: TrustedTime(sinceEpoch: clock.now.sinceEpoch + .seconds(60)))
        #expect(center.remaining(countdown) == .seconds(60))
        try loop.advance(by: .seconds(60))
        #expect(!center.contains(countdown))
        #expect(jumps.value.isEmpty)
    }

    @Test("a re-sync that moves server time forward: the display and the grid tick at once and say what they skipped")
    func resyncForwardTicksAtOnce() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(5_000))
        let clock = try syncedClock(on: loop, serverNow: .seconds(1_767_297_000))
        let center = try CountdownCenter(loop: loop, timeBase: .trusted(clock), modes: [.default])
        let countdown = try center.add(endingAt: TrustedTime(sinceEpoch: .seconds(1_767_297_600)))
        let values = Locked<[String]>([])
        let observation = try center.observe(countdown) { event in
            if case .tick(let tick) = event { values.withLock { $0.append("\(tick.value) skipped \(tick.skipped)") } }
        }
        let gridTicks = Locked<[UInt64]>([])
        let grid = try center.observeAll { tick in gridTicks.withLock { $0.append(tick.skipped) } }
        try loop.advance(by: .milliseconds(100_500))  // 499.5 s left: shows 500; the grid ticked at 100 s
        values.withLock { $0.removeAll() }
        gridTicks.withLock { $0.removeAll() }
        // Server time was 20 s behind: 479.5 s left now, shown as 480.
        let received = loop.now(.boot)
        try clock.sync(with: TimeSample(
            serverTime: .seconds(1_767_297_120) + .milliseconds(500) - .microseconds(100),
            sentAt: received - .microseconds(200), receivedAt: received))
        try loop.advance(by: .zero)
        #expect(values.value == ["480 skipped 19"], "499 to 481 went by unseen")
        #expect(gridTicks.value == [19], "the points from 101 s to 119 s went by")
        // Then on the new time, nothing skipped.
        try loop.advance(by: .seconds(1))
        #expect(values.value == ["480 skipped 19", "479 skipped 0"])
        #expect(gridTicks.value == [19, 0])
        observation.cancel()
        grid.cancel()
    }

    @Test("a re-sync that moves server time back: the display shows the new value at once, the grid keeps ticking")
    func resyncBackReplansTicks() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(5_000))
        let clock = try syncedClock(on: loop, serverNow: .seconds(1_767_297_000))
        let center = try CountdownCenter(loop: loop, timeBase: .trusted(clock), modes: [.default])
        let countdown = try center.add(endingAt: TrustedTime(sinceEpoch: .seconds(1_767_297_600)))
        let values = Locked<[Int64]>([])
        let observation = try center.observe(countdown) { event in
            if case .tick(let tick) = event { values.withLock { $0.append(tick.value) } }
        }
        let gridTicks = Locked<[Duration]>([])
        let grid = try center.observeAll { _ in gridTicks.withLock { $0.append(loop.now(.boot).offset) } }
        let jumps = Locked(0)
        center.onTimeBaseJump(threshold: .seconds(5)) { _ in jumps.withLock { $0 += 1 } }
        try loop.advance(by: .milliseconds(100_500))  // 499.5 s left: shows 500
        values.withLock { $0.removeAll() }
        gridTicks.withLock { $0.removeAll() }
        // Server time was 12.5 s ahead of the truth: 512 s left now, shown as 512.
        let received = loop.now(.boot)
        try clock.sync(with: TimeSample(
            serverTime: .seconds(1_767_297_088) - .microseconds(100),
            sentAt: received - .microseconds(200), receivedAt: received))
        // The jump is delivered in the center's mode only.
        try loop.advance(by: .zero, mode: .tracking)
        #expect(jumps.value == 0)
        try loop.advance(by: .zero)
        #expect(jumps.value == 1)
        #expect(values.value == [512], "the display is redrawn at once with the larger value")
        // The next second: 511, and the grid ticks on, with no silence for the jump.
        try loop.advance(by: .seconds(2))
        #expect(values.value == [512, 511, 510])
        #expect(gridTicks.value.count == 2)
        observation.cancel()
        grid.cancel()
    }

    @Test("a jump is told to the handler set when it is told: one replaced or removed after the re-sync hears nothing")
    func jumpGoesToTheHandlerSetNow() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(5_000))
        let clock = try syncedClock(on: loop, serverNow: .seconds(1_767_297_000))
        let center = try CountdownCenter(loop: loop, timeBase: .trusted(clock), modes: [.default])
        let heard = Locked<[String]>([])
        // Each re-sync has a shorter round trip than the ones before, so that
        // it is the clock's best sample and moves server time by `by`.
        var roundTrip = Duration.microseconds(400)
        func resync(by move: Duration) throws {
            roundTrip = roundTrip / 2
            let before = clock.now.sinceEpoch
            let received = loop.now(.boot)
            try clock.sync(with: TimeSample(
                serverTime: before + move - roundTrip / 2, sentAt: received - roundTrip, receivedAt: received))
            #expect(abs(clock.now.sinceEpoch - before - move) < .milliseconds(5), "the re-sync did not move server time")
        }
        func handler(_ name: String) -> @Sendable (TimeBaseJump) -> Void {
            { jump in heard.withLock { $0.append("\(name) \(jump.change > .seconds(19) && jump.change < .seconds(21))") } }
        }
        // 20 s forward; the handler replaced before the loop tells it.
        center.onTimeBaseJump(threshold: .seconds(5), handler("old"))
        try resync(by: .seconds(20))
        center.onTimeBaseJump(threshold: .seconds(5), handler("new"))
        try loop.advance(by: .zero)
        #expect(heard.value == ["new true"])
        // 20 s back, and the handler removed before the loop tells it.
        try resync(by: .seconds(-20))
        center.onTimeBaseJump(nil)
        try loop.advance(by: .seconds(1))
        #expect(heard.value == ["new true"])
        // With no handler at the re-sync, one set before the loop tells it
        // hears the jump if it passes that handler's threshold.
        try resync(by: .seconds(20))
        center.onTimeBaseJump(threshold: .seconds(30), handler("over 30 s"))
        try loop.advance(by: .zero)
        #expect(heard.value == ["new true"], "a 20 s jump passed a 30 s threshold")
        center.onTimeBaseJump(nil)
        try resync(by: .seconds(20))
        center.onTimeBaseJump(threshold: .seconds(5), handler("over 5 s"))
        try loop.advance(by: .zero)
        #expect(heard.value == ["new true", "over 5 s true"])
    }

    @Test("a wall-clock-change handler holding the last reference to a center on the clock is let go of outside the clock's lock")
    func wallClockHandlerReleasedOutsideTheLock() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(5_000))
        let clock = try syncedClock(on: loop, serverNow: .seconds(1_767_297_000))
        // The center's deinit removes its sample observer from the clock,
        // under the clock's lock: a clock that let go of the handler under
        // that lock would wait for itself forever.
        func holding(_ center: CountdownCenter) -> @Sendable (WallClockChange) -> Void {
            { _ in _ = center }
        }
        clock.onWallClockChange(holding(try CountdownCenter(loop: loop, timeBase: .trusted(clock))))
        #expect(returnsOnAnotherThread { clock.onWallClockChange(nil) }, "onWallClockChange(nil) did not return")
    }

    @Test("a payload sale on a trusted center needs no sync to be right")
    func payloadOnTrustedCenter() throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(100))
        let clock = try syncedClock(on: loop, serverNow: .seconds(1_767_000_000))
        let center = try CountdownCenter(loop: loop, timeBase: .trusted(clock))
        let sale = FlashSale(center: center, remaining: .seconds(30), receivedAt: loop.now(.boot))
        try loop.advance(by: .seconds(10))
        let remaining = try #require(sale.remaining)
        #expect(abs(remaining - .seconds(20)) < .milliseconds(2))
    }
}

/// A loop's readings that can run something right after the next wall-clock
/// read, before the reader gets the value: what another thread does between
/// that read and the reader's next step.
final class HookedReadings: ClockReadings, Sendable {
    let base: LoopClockReadings
    private let hook = Locked<(@Sendable () -> Void)?>(nil)

    init(_ base: LoopClockReadings) { self.base = base }

    func afterNextWallRead(_ action: @escaping @Sendable () -> Void) { hook.withLock { $0 = action } }

    var boot: BootClock.Instant { base.boot }
    var monotonic: MonotonicClock.Instant { base.monotonic }
    var wall: Duration {
        let wall = base.wall
        let action = hook.withLock { hook in
            defer { hook = nil }
            return hook
        }
        action?()
        return wall
    }
    var bootID: String? { base.bootID }

    nonisolated(nonsending)
    func sleep(until deadline: BootClock.Instant, tolerance: Duration?) async throws {
        try await base.sleep(until: deadline, tolerance: tolerance)
    }
}
