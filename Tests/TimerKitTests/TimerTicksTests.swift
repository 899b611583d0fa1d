import Testing
import TimerKit

// TimerTicks: an AsyncSequence of ticks from a repeating timer per iterator,
// which merges ticks a slow consumer missed, stamps each tick with its grid
// instant, and ends when the iterating task is cancelled.

@Suite("TimerTicks", .timeLimit(.minutes(5)))
struct TimerTicksTests {
    @Test("ticks on a real loop, and the timer goes when the iteration does")
    func ticksOnRealLoop() async throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        var count = 0
        var previous: MonotonicClock.Instant?
        do {
            for try await tick in try TimerTicks(every: .milliseconds(5), on: loop) {
                // (How many were missed depends on how busy the machine is:
                // only its agreement with the stamps is checked.)
                // Never stamped ahead of the clock; stamps move by whole intervals.
                #expect(tick.timestamp <= MonotonicClock.now)
                if let previous {
                    #expect(tick.timestamp - previous == .milliseconds(5) * Int(tick.missed + 1))
                }
                previous = tick.timestamp
                count += 1
                if count == 3 { break }
            }
        }
        #expect(count == 3)
        // The iterator is gone, so is its timer (a tick being delivered right
        // now may hold it a moment longer).
        #expect(await waitUntilAsync { loop.statistics.pending == 0 })
    }

    @Test("on a manual loop each interval gives one tick, stamped with its grid instant")
    func ticksOnManualLoop() async throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(100))
        let ticks = try TimerTicks(every: .seconds(1), on: loop)
        let received = Locked<[MonotonicClock.Instant]>([])
        let consumer = Task {
            for try await tick in ticks {
                #expect(tick.missed == 0)
                let count = received.withLock { $0.append(tick.timestamp); return $0.count }
                if count == 3 { break }
            }
        }
        #expect(await waitUntilAsync { loop.statistics.pending == 1 }, "the iterator's timer")
        for round in 1...3 {
            // Whether the consumer already waits or not, one fire is one tick.
            #expect(try loop.advance(by: .seconds(1)) == 1)
            #expect(await waitUntilAsync { received.value.count == round })
        }
        try await consumer.value
        #expect(received.value.map(\.offset) == [.seconds(101), .seconds(102), .seconds(103)])
    }

    @Test("ticks held for a slow consumer across the whole range of time count every period once")
    func missedOverTheWholeRange() async throws {
        let loop = try TimerLoop.manual(startingAt: .nanoseconds(Int64.min))
        let ticks = try TimerTicks(every: .nanoseconds(1), on: loop)
        var iterator = ticks.makeAsyncIterator()
        // One fire held, then one that stands for every period to the end
        // of time: 2^64 - 1 periods from Int64.min + 1 to Int64.max, one
        // tick for them all.
        #expect(try loop.advance(by: .nanoseconds(1)) == 1)
        try loop.setManualTime(to: MonotonicClock.Instant(offset: .nanoseconds(Int64.max)))
        #expect(try loop.advance(by: .zero) == 1)
        let tick = try await iterator.next()
        #expect(tick?.missed == UInt64.max - 1)
        // The last grid point, though the timer's next would be past the end.
        #expect(tick?.timestamp.offset == .nanoseconds(Int64.max))
    }

    @Test("a tick whose next grid point lies past the clock's end is stamped with its own grid point")
    func stampNearTheEnd() async throws {
        let clock = try ManualClock()
        let start = clock.now
        let ticks = try TimerTicks(every: .seconds(6_000_000_000), clock: clock)
        var iterator = ticks.makeAsyncIterator()
        try clock.advance(by: .seconds(7_000_000_000))
        let tick = try await iterator.next()
        #expect(tick?.missed == 0)
        #expect(tick?.timestamp == start + .seconds(6_000_000_000))
    }

    @Test("a slow consumer gets one tick with the ticks it missed counted")
    func coalescesForSlowConsumer() async throws {
        let loop = try TimerLoop.manual()
        let ticks = try TimerTicks(every: .seconds(1), on: loop)
        var iterator = ticks.makeAsyncIterator()
        #expect(loop.statistics.pending == 1, "the iterator schedules its timer when made")

        // Five fires while nobody consumes: one tick, four missed, stamped 5 s.
        #expect(try loop.advance(by: .seconds(5)) == 5)
        let first = try await iterator.next()
        #expect(first?.missed == 4)
        #expect(first?.timestamp == at(.seconds(5)))

        // Fires the loop skipped (the timer waited for its mode) add up too:
        // ticks at 6 s and 7 s held, then one fire at 10 s standing for 8, 9, 10 s.
        try loop.advance(by: .seconds(2))
        try loop.advance(by: .seconds(3), mode: .tracking)
        try loop.advance(by: .zero)
        let second = try await iterator.next()
        #expect(second?.missed == 4)
        #expect(second?.timestamp == at(.seconds(10)))
    }

    @Test("two tasks iterating one sequence each get every tick of a timer of their own")
    func twoIterators() async throws {
        let loop = try TimerLoop.manual()
        let ticks = try TimerTicks(every: .seconds(1), on: loop)
        let received = Locked<[Int: [Duration]]>([:])
        let consumers = (0..<2).map { index in
            Task {
                for try await tick in ticks {
                    #expect(tick.missed == 0)
                    let count = received.withLock { received in
                        received[index, default: []].append(tick.timestamp.offset)
                        return received[index]!.count
                    }
                    if count == 3 { break }
                }
            }
        }
        #expect(await waitUntilAsync { loop.statistics.pending == 2 }, "one timer per iterator")
        for round in 1...3 {
            #expect(try loop.advance(by: .seconds(1)) == 2)
            #expect(await waitUntilAsync {
                received.value.values.allSatisfy { $0.count == round } && received.value.count == 2
            })
        }
        for consumer in consumers { try await consumer.value }
        #expect(received.value[0] == [.seconds(1), .seconds(2), .seconds(3)])
        #expect(received.value[1] == [.seconds(1), .seconds(2), .seconds(3)])
        #expect(await waitUntilAsync { loop.statistics.pending == 0 })
    }

    @Test("the sequence ends when the iterating task is cancelled, and the timer goes")
    func endsOnCancellation() async throws {
        let loop = try TimerLoop.manual()
        let ticks = try TimerTicks(every: .seconds(1), on: loop, in: .common)
        let received = Locked(0)
        let consumer = Task {
            for try await _ in ticks { received.withLock { $0 += 1 } }
            return received.value
        }
        #expect(await waitUntilAsync { loop.statistics.pending == 1 })
        try loop.advance(by: .seconds(1))
        #expect(await waitUntilAsync { received.value == 1 })
        consumer.cancel()
        #expect(try await consumer.value == 1)
        #expect(loop.statistics.pending == 0)
        #expect(try loop.advance(by: .seconds(5)) == 0)
    }

    @Test("a tick held for the iterator is not handed out once its task is cancelled")
    func heldTickAfterCancellation() async throws {
        let clock = try ManualClock()
        let ticks = try TimerTicks(every: .seconds(1), clock: clock)
        let next = try await Task { () throws -> TimerTicks<ManualClock>.Tick? in
            var iterator = ticks.makeAsyncIterator()
            try clock.advance(by: .seconds(1))  // a tick is held: nobody waits yet
            withUnsafeCurrentTask { $0?.cancel() }
            return try await iterator.next()
        }.value
        #expect(next == nil)
        #expect(clock.loop.statistics.pending == 0, "the timer goes with the iteration")
    }

    @Test("a copy of an iterator used by a second task while one waits is refused, and the wait goes on")
    @MainActor func copiedIterator() async throws {
        let clock = try ManualClock()
        let holder = IteratorHolder(try TimerTicks(every: .seconds(1), clock: clock).makeAsyncIterator())
        let outcomes = Locked<[String]>([])
        // Two tasks on the main actor, each with a copy: copies share a timer.
        let tasks = (0..<2).map { _ in
            Task { @MainActor in
                var copy = holder.iterator
                do {
                    let tick = try await copy.next()
                    outcomes.withLock { $0.append("tick \(tick.map { "\($0.timestamp.offset)" } ?? "nil")") }
                } catch {
                    outcomes.withLock { $0.append("\(error)") }
                }
            }
        }
        // Whichever came second is turned away at once.
        #expect(await waitUntilAsync { @Sendable in outcomes.value.count == 1 })
        #expect(outcomes.value == [TimerError.iteratorInUse.description])
        try clock.advance(by: .seconds(1))
        for task in tasks { await task.value }
        #expect(outcomes.value.last == "tick \(Duration.seconds(1))")
        // The iterator goes on, and its timer with it.
        try clock.advance(by: .seconds(1))
        var iterator = holder.iterator
        #expect(try await iterator.next()?.timestamp.offset == .seconds(2))
    }

    @Test("ticks on a boot-clock timer and on a ManualClock's loop")
    func otherClocks() async throws {
        let loop = try TimerLoop.manual(startingAt: .seconds(50))
        var boot = try TimerTicks(every: .seconds(2), clock: .boot, on: loop).makeAsyncIterator()
        try loop.setManualTime(to: loop.now(.boot) + .seconds(7))  // a suspend: boot moves alone
        try loop.advance(by: .zero)
        let tick = try await boot.next()
        #expect(tick?.timestamp == BootClock.Instant(offset: .seconds(56)))
        #expect(tick?.missed == 2)

        let clock = try ManualClock()
        var manual = try TimerTicks(every: .seconds(1), clock: clock).makeAsyncIterator()
        try clock.advance(by: .seconds(1))
        #expect(try await manual.next()?.timestamp == ManualClock.Instant(offset: .seconds(1)))
    }

    @Test("an interval with a part of a nanosecond: stamps on the timer's grid of whole nanoseconds, never after the clock")
    func partOfANanosecond() async throws {
        let clock = try ManualClock()
        var ticks = try TimerTicks(every: .seconds(1) / 60, clock: clock).makeAsyncIterator()
        for index in 1...3 {
            try clock.advance(by: .nanoseconds(16_666_667))  // 1/60 s, rounded up
            let tick = try #require(try await ticks.next())
            #expect(tick.timestamp == ManualClock.Instant(offset: .nanoseconds(16_666_667 * index)))
            #expect(tick.timestamp <= clock.now)
        }
    }

    @Test("invalid intervals, tolerances and modes are refused")
    func errors() async throws {
        let loop = try TimerLoop.manual()
        #expect(throws: TimerError.invalidInterval(.zero)) {
            _ = try TimerTicks(every: .zero, on: loop)
        }
        #expect(throws: TimerError.invalidInterval(.seconds(-1))) {
            _ = try TimerTicks(every: .seconds(-1), on: loop)
        }
        #expect(throws: TimerError.negativeTolerance(.milliseconds(-1))) {
            _ = try TimerTicks(every: .seconds(1), tolerance: .milliseconds(-1), on: loop)
        }
        // A mode error surfaces when the iterator's timer is scheduled.
        for index in 2..<31 { try loop.addCommonMode(LoopMode("mode \(index)")) }  // 31 modes in all
        let extra = LoopMode("one too many")
        var refused = try TimerTicks(every: .seconds(1), on: loop, in: extra).makeAsyncIterator()
        await #expect(throws: TimerError.tooManyModes(extra)) { _ = try await refused.next() }
        #expect(loop.statistics.pending == 0)
    }
}

extension SharedLoopTests {
    @Suite("TimerTicks on the background loop")
    struct BackgroundTicks {
        @Test("ticks on TimerKit's background loop when no loop is given")
        func ticksOnBackgroundLoop() async throws {
            var count = 0
            do {
                for try await _ in try TimerTicks(every: .milliseconds(5)) {
                    count += 1
                    if count == 3 { break }
                }
            }
            #expect(count == 3)
        }
    }
}

/// Holds an iterator on the main actor, where two tasks can take copies.
@MainActor final class IteratorHolder {
    var iterator: TimerTicks<ManualClock>.Iterator
    init(_ iterator: TimerTicks<ManualClock>.Iterator) { self.iterator = iterator }
}
