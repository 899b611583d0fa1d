import Glibc
import Synchronization
import Testing
import TimerKit

// Threads against a real loop running on its own thread: timers scheduled and
// invalidated from several threads at once. Meant to run clean under
// `swift test --sanitize=thread` as well.
//
// The oracle for invalidation: an action must never start after invalidate()
// on its timer has returned ("its action will not run again"). An action that
// was already starting when invalidate() was called may still run; a timer
// nobody invalidated fires exactly once; no timer fires twice.

/// What happened to one timer.
private struct Record: Sendable {
    var fired = 0
    var invalidateCalled = false
    var invalidateReturned = false
    /// Calls of the action that got to their first statement after
    /// invalidate() had returned. invalidate() does not wait for a call the
    /// loop's thread is already making (it may be past its last check and
    /// preempted), so one such call can happen; a second would mean a call
    /// started after invalidate() returned.
    var callsAfterInvalidate = 0
}

@Suite("TimerLoop under threads")
struct TimerLoopStressTests {
    /// What a thread does to a repeating timer while another advances its
    /// loop: each keeps the next fire date where it is.
    enum Change: CaseIterable, Sendable { case tolerance, interval, precise, mode }

    @Test(
        "a repeating timer changed from another thread while its loop fires it fires each grid point once",
        arguments: Change.allCases)
    func changesKeepTheGrid(_ change: Change) throws {
        // A loop takes some thirty modes, so a change of modes races the
        // fires only while those last: many short rounds for it.
        let (rounds, advances) = change == .mode ? (1_000, 40) : (20, 2_000)
        for _ in 0..<rounds {
            let loop = try TimerLoop.manual()
            let fires = Locked<[(at: MonotonicClock.Instant, missed: UInt64)]>([])
            let timer = try loop.schedule(after: .milliseconds(1), repeating: .milliseconds(1)) { _, missed in
                let now = loop.now(.monotonic)
                fires.withLock { $0.append((now, missed)) }
            }
            let advancing = Atomic<Bool>(true)
            runThreads(2) { thread in
                if thread == 0 {
                    for _ in 0..<advances { _ = try? loop.advance(by: .milliseconds(1)) }
                    advancing.store(false, ordering: .releasing)
                    return
                }
                var mode = 2
                while advancing.load(ordering: .acquiring) {
                    switch change {
                    case .tolerance: try? timer.setTolerance(.zero)
                    case .interval: try? timer.setInterval(.milliseconds(1))
                    case .precise: try? timer.setPrecise(false)
                    case .mode:
                        // New modes until the loop has no more (then the
                        // same one again, which changes nothing).
                        try? loop.add(timer, forMode: LoopMode("m\(mode)"))
                        mode = min(mode + 1, 30)
                    }
                }
            }
            timer.invalidate()
            let seen = fires.withLock { $0 }
            // Each grid point fired for once: by a fire of its own,
            // or counted as missed by a later one; instants only go forward.
            #expect(seen.reduce(0) { $0 + $1.missed + 1 } == UInt64(advances))
            for (earlier, later) in zip(seen, seen.dropFirst()) where later.at <= earlier.at {
                Issue.record("fired at \(earlier.at) and again at \(later.at)")
                break
            }
        }
    }

    @Test("one-shot timers from several threads fire exactly once unless invalidated first")
    func oneShotTimersFromThreads() throws {
        let seed = testSeed()
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let threadCount = 4
        let perThread = 2_500
        let total = threadCount * perThread
        let records = Locked([Record](repeating: Record(), count: total))
        let timers = Locked([LoopTimer<MonotonicClock>?](repeating: nil, count: total))
        let errors = Locked<[TimerError]>([])

        runThreads(threadCount) { thread in
            var rng = SeededGenerator(seed: seed &+ UInt64(thread))
            for index in 0..<perThread {
                let n = thread * perThread + index
                let delay = Duration.microseconds(rng.within(0...2_000))
                let tolerance = rng.chance(50) ? .zero : Duration.microseconds(rng.within(0...500))
                do throws(TimerError) {
                    let timer = try loop.schedule(after: delay, tolerance: tolerance) { _, _ in
                        records.withLock { records in
                            if records[n].invalidateReturned { records[n].callsAfterInvalidate += 1 }
                            records[n].fired += 1
                        }
                    }
                    timers.withLock { $0[n] = timer }
                } catch {
                    errors.withLock { $0.append(error) }
                }
                guard rng.chance(30) else { continue }
                // Invalidate one of this thread's timers (often the newest) or anyone's.
                let victim = rng.chance(60)
                    ? thread * perThread + max(0, index - rng.below(4))
                    : rng.below(total)
                guard let timer = timers.withLock({ $0[victim] }) else { continue }
                records.withLock { $0[victim].invalidateCalled = true }
                timer.invalidate()
                if rng.chance(20) { timer.invalidate() }
                records.withLock { $0[victim].invalidateReturned = true }
                if rng.chance(2) { sleepThread(.microseconds(50)) }
            }
        }
        #expect(errors.value.isEmpty, "scheduling failed: \(errors.value)")

        let settled = waitUntil {
            records.withLock { $0.allSatisfy { $0.fired > 0 || $0.invalidateCalled } }
        }
        #expect(settled, "timers nobody invalidated did not all fire within 30 s (seed \(seed))")
        // Once a timer scheduled now has fired, no earlier action is running.
        let sentinel = Locked(false)
        try loop.schedule(after: .zero) { _, _ in sentinel.withLock { $0 = true } }
        #expect(waitUntil { sentinel.value })

        let final = records.value
        let twice = final.indices.filter { final[$0].fired > 1 }
        let missing = final.indices.filter { !final[$0].invalidateCalled && final[$0].fired != 1 }
        let late = final.indices.filter { final[$0].callsAfterInvalidate > 1 }
        let cancelled = final.filter { $0.invalidateCalled && $0.fired == 0 }.count
        #expect(twice.isEmpty, "fired more than once: \(twice.prefix(10)) (seed \(seed))")
        #expect(missing.isEmpty, "not invalidated, yet did not fire once: \(missing.prefix(10)) (seed \(seed))")
        #expect(late.isEmpty, "more than the one call under way after invalidate() returned: \(late.prefix(10)) (seed \(seed))")
        #expect(cancelled > 0, "no timer was invalidated before it fired: the test exercised nothing")
        #expect(loop.statistics.pending == 0)
        #expect(timers.value.allSatisfy { $0?.isValid == false })
    }

    @Test("repeating timers invalidated by other threads while they fire make at most the call under way afterwards")
    func repeatingTimersInvalidatedFromThreads() throws {
        let seed = testSeed()
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let threadCount = 3
        let perThread = 1_000
        let total = threadCount * perThread
        let records = Locked([Record](repeating: Record(), count: total))
        // Every timer stays referenced here, so that only the ordering is tested
        // (the next test lets go of them).
        let timers = Locked([LoopTimer<MonotonicClock>?](repeating: nil, count: total))

        runThreads(threadCount) { thread in
            var rng = SeededGenerator(seed: seed &+ 1_000 &+ UInt64(thread))
            for index in 0..<perThread {
                let n = thread * perThread + index
                let interval = Duration.microseconds(rng.within(20...200))
                let timer = try? loop.schedule(after: .zero, repeating: interval) { _, _ in
                    records.withLock { records in
                        if records[n].invalidateReturned { records[n].callsAfterInvalidate += 1 }
                        records[n].fired += 1
                    }
                }
                timers.withLock { $0[n] = timer }
                // Let it fire a few times, then invalidate it.
                sleepThread(.microseconds(rng.within(0...400)))
                records.withLock { $0[n].invalidateCalled = true }
                timer?.invalidate()
                records.withLock { $0[n].invalidateReturned = true }
            }
        }
        let sentinel = Locked(false)
        try loop.schedule(after: .zero) { _, _ in sentinel.withLock { $0 = true } }
        #expect(waitUntil { sentinel.value })

        let final = records.value
        let late = final.indices.filter { final[$0].callsAfterInvalidate > 1 }
        #expect(late.isEmpty,
                "\(late.count) of \(total) repeating timers made more than the one call under way after invalidate() returned, e.g. \(late.prefix(5)) (seed \(seed))")
        #expect(final.contains { $0.fired > 0 })
        #expect(loop.statistics.pending == 0)
        #expect(timers.value.allSatisfy { $0?.isValid == false })
    }

    @Test("timers invalidated and released by other threads while they fire", .serialized,
          arguments: [false, true])
    func timersReleasedFromThreads(repeating: Bool) async {
        // In a child process: freeing a timer whose action the loop is about
        // to run would crash, and must not take the other tests down with it.
        let seed = testSeed()
        await #expect(processExitsWith: .success, "seed \(seed)") { [seed = seed as UInt64, repeating = repeating as Bool] in
            let loop = try TimerLoop.startThread()
            runThreads(3) { thread in
                var rng = SeededGenerator(seed: seed &+ 2_000 &+ UInt64(thread))
                for _ in 0..<2_000 {
                    let interval = Duration.microseconds(rng.within(5...50))
                    var timer: LoopTimer<MonotonicClock>? = try? loop.schedule(
                        after: repeating ? .zero : interval, repeating: repeating ? interval : nil
                    ) { _, _ in }
                    sleepThread(.microseconds(rng.within(0...100)))
                    timer?.invalidate()
                    timer = nil  // the last reference outside the loop
                }
            }
            let done = Locked(false)
            try loop.schedule(after: .zero) { _, _ in done.withLock { $0 = true } }
            guard waitUntil(.seconds(30), { done.value }), loop.statistics.pending == 0 else { exit(1) }
            loop.stop()
        }
    }
}
