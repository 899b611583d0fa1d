import Testing
import TimerKit

// TimerTicks: an AsyncSequence of ticks from a repeating timer that merges
// ticks a slow consumer missed, and ends when the iterating task is cancelled.

@Suite("TimerTicks")
struct TimerTicksTests {
    @Test("ticks on a real loop, and the timer goes when the sequence does")
    func ticksOnRealLoop() async throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        var count = 0
        do {
            for await tick in try TimerTicks(every: .milliseconds(5), on: loop) {
                #expect(tick.missed < 1_000)
                count += 1
                if count == 3 { break }
            }
        }
        #expect(count == 3)
        // The sequence and its iterator are gone, so is the timer (a tick being
        // delivered right now may hold it a moment longer).
        #expect(await waitUntilAsync { loop.statistics.pending == 0 })
    }

    @Test("on a manual loop each interval gives one tick with nothing missed")
    func ticksOnManualLoop() async throws {
        let loop = try TimerLoop.manual()
        let ticks = try TimerTicks(every: .seconds(1), on: loop)
        for _ in 0..<3 {
            // Whether the consumer already waits or not, one fire is one tick.
            let next = Task {
                var iterator = ticks.makeAsyncIterator()
                return await iterator.next()
            }
            #expect(try loop.advance(by: .seconds(1)) == 1)
            #expect(await next.value?.missed == 0)
        }
    }

    @Test("a slow consumer gets one tick with the ticks it missed counted")
    func coalescesForSlowConsumer() async throws {
        let loop = try TimerLoop.manual()
        let ticks = try TimerTicks(every: .seconds(1), on: loop)
        var iterator = ticks.makeAsyncIterator()

        // Five fires while nobody consumes: one tick, four missed.
        #expect(try loop.advance(by: .seconds(5)) == 5)
        #expect(await iterator.next()?.missed == 4)

        // Fires the loop skipped (the timer waited for its mode) add up too:
        // ticks at 6 s and 7 s held, then one fire at 10 s standing for 8, 9, 10 s.
        try loop.advance(by: .seconds(2))
        try loop.advance(by: .seconds(3), mode: .tracking)
        try loop.advance(by: .zero)
        #expect(await iterator.next()?.missed == 4)

        let next = Task {
            var iterator = ticks.makeAsyncIterator()
            return await iterator.next()
        }
        try loop.advance(by: .seconds(1))
        #expect(await next.value?.missed == 0)
    }

    @Test("the sequence ends when the iterating task is cancelled, and the timer goes")
    func endsOnCancellation() async throws {
        let loop = try TimerLoop.manual()
        let ticks = try TimerTicks(every: .seconds(1), on: loop, in: [.common])
        let consumer = Task {
            var received = 0
            for await _ in ticks { received += 1 }
            return received
        }
        try loop.advance(by: .seconds(1))
        #expect(loop.statistics.pending == 1)
        consumer.cancel()
        // The tick delivered before the cancellation is still consumed.
        #expect(await consumer.value == 1)
        #expect(loop.statistics.pending == 0)
        #expect(try loop.advance(by: .seconds(5)) == 0)
    }

    @Test("invalid intervals and tolerances are refused")
    func errors() throws {
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
                for await tick in try TimerTicks(every: .milliseconds(5)) {
                    #expect(tick.missed < 1_000)
                    count += 1
                    if count == 3 { break }
                }
            }
            #expect(count == 3)
        }
    }
}
