import Testing
import TimerKit
import Synchronization

final class Owner: @unchecked Sendable {
    let onDeinit: @Sendable () -> Void
    var timer: LoopTimer?
    init(onDeinit: @escaping @Sendable () -> Void) { self.onDeinit = onDeinit }
    deinit { onDeinit(); timer?.invalidate() }
}

@Test func manualTimersFireInOrder() throws {
    let loop = try TimerLoop.manual()
    let log = Mutex<[String]>([])
    try loop.schedule(after: .seconds(2)) { _, _ in log.withLock { $0.append("b") } }
    try loop.schedule(after: .seconds(1)) { _, _ in log.withLock { $0.append("a") } }
    let rep = try loop.schedule(after: .seconds(1), repeating: .seconds(1)) { _, missed in log.withLock { $0.append("r\(missed)") } }
    #expect(try loop.advance(by: .milliseconds(2500)) == 4)
    #expect(log.withLock { $0 } == ["a", "r0", "b", "r0"])
    rep.invalidate()
    #expect(!rep.isValid)
    #expect(loop.statistics.pending == 0)
}

@Test func carousel() throws {
    let loop = try TimerLoop.manual()
    let common = Mutex(0), plain = Mutex(0)
    try loop.schedule(after: .seconds(1), repeating: .seconds(1), in: [.common]) { _, _ in common.withLock { $0 += 1 } }
    let d = try loop.schedule(after: .seconds(1), repeating: .seconds(1)) { _, missed in plain.withLock { $0 += 1 } }
    try loop.advance(by: .seconds(5), mode: .tracking)
    #expect(common.withLock { $0 } == 5)
    #expect(plain.withLock { $0 } == 0)
    #expect(d.isWaitingForMode)
    try loop.advance(by: .zero, mode: .default)
    #expect(plain.withLock { $0 } == 1)
}

@Test func weakTargetLetsOwnerGo() throws {
    let loop = try TimerLoop.manual()
    let gone = Mutex(false)
    var owner: Owner? = Owner { gone.withLock { $0 = true } }
    let timer = try LoopTimer(after: .seconds(1), repeating: .seconds(1), target: owner!) { _, _, _ in }
    owner!.timer = timer
    try loop.add(timer)
    try loop.advance(by: .seconds(3))
    owner = nil
    #expect(gone.withLock { $0 })
    #expect(!timer.isValid)
    #expect(loop.statistics.pending == 0)
}

@Test func manualClockSleep() async throws {
    let clock = try ManualClock()
    let task = Task { try await clock.sleep(for: .seconds(60)); return 1 }
    await clock.waitForSleepers(1)
    #expect(try clock.advance(by: .seconds(60)) == 1)
    #expect(try await task.value == 1)
}

@Test func realSleepNeverEarly() async throws {
    let clock = BootClock()
    let start = clock.now
    try await clock.sleep(for: .milliseconds(20), tolerance: .milliseconds(5))
    #expect(clock.now - start >= .milliseconds(20))
    let cancelled = Task { try await MonotonicClock().sleep(for: .seconds(100)) }
    cancelled.cancel()
    await #expect(throws: CancellationError.self) { try await cancelled.value }
}

@Test func ticks() async throws {
    var count = 0
    for await tick in try TimerTicks(every: .milliseconds(5)) {
        #expect(tick.missed < 1000)
        count += 1
        if count == 3 { break }
    }
    #expect(count == 3)
}

@Test func performRequests() throws {
    let loop = try TimerLoop.manual()
    let owner = Owner {}
    let ran = Mutex(0)
    try loop.perform(after: .seconds(1), target: owner) { _ in ran.withLock { $0 += 1 } }
    try loop.perform(after: .seconds(2), target: owner) { _ in ran.withLock { $0 += 1 } }
    #expect(loop.pendingPerformRequests(target: owner) == 2)
    try loop.advance(by: .seconds(1))
    #expect(ran.withLock { $0 } == 1)
    #expect(loop.pendingPerformRequests(target: owner) == 1)
    #expect(loop.cancelPerformRequests(target: owner) == 1)
    try loop.advance(by: .seconds(5))
    #expect(ran.withLock { $0 } == 1)
}

@Test func errors() throws {
    #expect(throws: TimerError.invalidInterval(.zero)) { try LoopTimer(after: .zero, repeating: .zero) { _, _ in } }
    #expect(throws: TimerError.negativeTolerance(.seconds(-1))) { try LoopTimer(after: .zero, tolerance: .seconds(-1)) { _, _ in } }
    let loop = try TimerLoop.manual()
    let t = try LoopTimer(after: .seconds(1)) { _, _ in }
    t.invalidate()
    #expect(throws: TimerError.invalidated) { try loop.add(t) }
    #expect(throws: TimerError.notARunMode(.common)) { try loop.run(mode: .common) }
    #expect(throws: TimerError.notManual) { try TimerLoop().advance(by: .seconds(1)) }
}
