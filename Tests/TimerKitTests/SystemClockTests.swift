import Dispatch
import Testing

@testable import TimerKit

// BootClock and MonotonicClock as Swift Clocks: conformance, sleeps that never
// end early, and cancelled sleeps that give their timer back at once.
//
// Their sleeps (and TimerTicks without a loop) share TimerKit's background
// loop. The tests here that use it are nested in SharedLoopTests, which runs
// them one at a time; other tests of the target may still use that loop at
// the same time, so its pending count is only compared with some slack.

/// The tests that use TimerKit's shared background loop, run one at a time.
@Suite("Shared background loop", .serialized)
struct SharedLoopTests {}

/// The background loop (started on first use).
func sharedLoop() throws -> TimerLoop {
    try SleepService.shared.loop()
}

/// Checks what any Clock must do, through the Clock protocol only.
private func checkClock<C: Clock>(_ clock: C) async throws where C.Duration == Duration {
    #expect(clock.minimumResolution > .zero)
    #expect(clock.minimumResolution <= .milliseconds(1))
    let start = clock.now
    let deadline = start.advanced(by: .milliseconds(3))
    #expect(start < deadline)
    #expect(start.duration(to: deadline) == .milliseconds(3))
    try await clock.sleep(until: deadline, tolerance: nil)
    #expect(clock.now >= deadline)
    let elapsed = try await clock.measure {
        try await Task.sleep(for: .milliseconds(2), tolerance: .zero, clock: clock)
    }
    #expect(elapsed >= .milliseconds(2))
    // A deadline in the past returns without waiting for anything.
    try await clock.sleep(until: start, tolerance: nil)
}

extension SharedLoopTests {
    @Suite("BootClock, MonotonicClock and WallClock")
    struct SystemClockTests {
        @Test("all three conform to Clock and sleep through it")
        func conformance() async throws {
            try await checkClock(BootClock())
            try await checkClock(MonotonicClock())
            try await checkClock(WallClock())
        }

        @Test("instants do arithmetic")
        func instantArithmetic() {
            let instant = BootClock.Instant(offset: .seconds(10))
            #expect(instant + .seconds(2) == BootClock.Instant(offset: .seconds(12)))
            #expect(instant - .seconds(2) == BootClock.Instant(offset: .seconds(8)))
            #expect(instant - BootClock.Instant(offset: .seconds(4)) == .seconds(6))
            #expect(instant.advanced(by: .milliseconds(-500)) < instant)
            let monotonic = MonotonicClock.Instant(offset: .seconds(1))
            #expect((monotonic + .seconds(1)).duration(to: monotonic) == .seconds(-1))
            #expect(monotonic - .seconds(1) == MonotonicClock.Instant(offset: .zero))
        }

        @Test("Task.sleep(for:tolerance:clock:) never returns early")
        func sleepsNeverEarly() async throws {
            let seed = testSeed()
            var rng = SeededGenerator(seed: seed)
            var plan: [(boot: Bool, duration: Duration, tolerance: Duration?)] = []
            for _ in 0..<200 {
                plan.append((
                    rng.chance(50), .microseconds(rng.within(0...20_000)),
                    rng.chance(20) ? nil : .microseconds(rng.within(0...10_000))))
            }
            let early = try await withThrowingTaskGroup(of: String?.self) { group in
                for (boot, duration, tolerance) in plan {
                    group.addTask {
                        if boot {
                            let clock = BootClock()
                            let start = clock.now
                            try await Task.sleep(for: duration, tolerance: tolerance, clock: clock)
                            let slept = clock.now - start
                            return slept < duration ? "boot \(duration) slept \(slept)" : nil
                        } else {
                            let clock = MonotonicClock()
                            let start = clock.now
                            try await Task.sleep(for: duration, tolerance: tolerance, clock: clock)
                            let slept = clock.now - start
                            return slept < duration ? "monotonic \(duration) slept \(slept)" : nil
                        }
                    }
                }
                var early: [String] = []
                for try await result in group { if let result { early.append(result) } }
                return early
            }
            #expect(early.isEmpty, "sleeps ended early (seed \(seed)): \(early.prefix(5))")
        }

        @Test("a cancelled sleep throws CancellationError, also when cancelled before it sleeps")
        func cancelledSleep() async throws {
            let task = Task { try await MonotonicClock().sleep(for: .seconds(3600)) }
            try await Task.sleep(for: .milliseconds(5))
            task.cancel()
            await #expect(throws: CancellationError.self) { try await task.value }

            let early = Task {
                withUnsafeCurrentTask { $0?.cancel() }
                try await BootClock().sleep(for: .seconds(3600))
            }
            await #expect(throws: CancellationError.self) { try await early.value }
        }

        @Test("a stop of the shared loop, which QueueTimer hands out, leaves it running: later sleeps end")
        func stopOfSharedLoop() async throws {
            let loop = try QueueTimer(queue: DispatchQueue(label: "stopOfSharedLoop")).loop
            #expect(loop === (try sharedLoop()))
            loop.stop()
            // Waited for on the standard library's clock, with a limit: a
            // loop whose thread ended would never end the sleep.
            let ended = Locked(false)
            let sleeper = Task {
                try await MonotonicClock().sleep(for: .milliseconds(5))
                ended.withLock { $0 = true }
            }
            let woke = await waitUntilAsync(.seconds(60)) { ended.value }
            sleeper.cancel()
            _ = try? await sleeper.value
            #expect(woke, "a sleep after a stop of the shared loop never ended")
            #expect(loop.failure == nil)
        }

        @Test("10,000 one-hour sleeps on BootClock, all cancelled: timers gone at once, all end quickly")
        func manyCancelledSleeps() async throws {
            let loop = try sharedLoop()
            let count = 10_000
            // Other tests may add or end a few timers on this loop meanwhile.
            let slack: UInt64 = 100
            let before = loop.statistics.pending
            let tasks = (0..<count).map { _ in
                Task { try await Task.sleep(for: .seconds(3600), clock: BootClock()) }
            }
            let asleep = await waitUntilAsync(.seconds(60)) {
                loop.statistics.pending + slack >= before + UInt64(count)
            }
            #expect(asleep, "only about \(loop.statistics.pending - before) of \(count) sleeps started")
            let start = ContinuousClock.now
            let sleeping = loop.statistics.pending
            for task in tasks { task.cancel() }
            // Each cancellation handler ran inside cancel(): the timers are gone.
            let after = loop.statistics.pending
            #expect(after + UInt64(count) <= sleeping + slack,
                    "cancelling \(count) sleeps took the pending timers only from \(sleeping) to \(after)")
            var cancelled = 0
            for task in tasks {
                do {
                    try await task.value
                } catch is CancellationError {
                    cancelled += 1
                } catch {}
            }
            let elapsed = ContinuousClock.now - start
            #expect(cancelled == count)
            #expect(elapsed < .seconds(60), "cancelled sleeps took \(elapsed) to end")
        }
    }
}
