import Testing

@testable import TimerKit

// TimerCallbacks: timers with no object each, one handler for them all, on
// manual loops (exact times), and the lifetime of the handler.

/// Records each call as "<timer name> missed <n> @<loop time>".
private final class Recorder: TimerCallbackHandler {
    let loop: TimerLoop
    let names = Locked<[CallbackTimer: String]>([:])
    let calls = Locked<[String]>([])
    /// Called from the handler, before recording (to cancel, for example).
    let onFire = Locked<(@Sendable (CallbackTimer) -> Void)?>(nil)

    init(loop: TimerLoop) { self.loop = loop }

    func name(_ timer: CallbackTimer, _ name: String) { names.withLock { $0[timer] = name } }

    func timerFired(_ timer: CallbackTimer, missed: UInt64) {
        onFire.value?(timer)
        let name = names.value[timer] ?? "\(timer)"
        calls.withLock { $0.append("\(name) missed \(missed) @\(loop.time)") }
    }
}

@Suite("TimerCallbacks")
struct TimerCallbacksTests {
    @Test("one-shots fire in deadline order, once, never early; a fired one is no longer scheduled")
    func oneShots() throws {
        let loop = try TimerLoop.manual()
        let recorder = Recorder(loop: loop)
        let callbacks = loop.callbacks(recorder)
        for (name, seconds) in [("c", 3), ("a", 1), ("b", 2)] {
            recorder.name(try callbacks.schedule(after: .seconds(seconds)), name)
        }
        let now = try callbacks.schedule(after: .seconds(-5))
        recorder.name(now, "past")
        #expect(loop.statistics.pending == 4)
        try loop.advance(by: .zero)
        #expect(recorder.calls.value == ["past missed 0 @0.0 seconds"], "a delay of zero or less fires at once")
        try loop.advance(by: .seconds(1) - .nanoseconds(1))
        #expect(recorder.calls.value.count == 1, "fired early")
        try loop.advance(by: .seconds(5))
        #expect(recorder.calls.value.dropFirst() == [
            "a missed 0 @1.0 seconds", "b missed 0 @2.0 seconds", "c missed 0 @3.0 seconds",
        ])
        #expect(!callbacks.isScheduled(now))
        #expect(!callbacks.cancel(now), "a fired one-shot is not scheduled")
        #expect(loop.statistics.pending == 0)
    }

    @Test("a repeating timer fires on its grid, says what it skipped, and stops when cancelled")
    func repeating() throws {
        let loop = try TimerLoop.manual()
        let recorder = Recorder(loop: loop)
        let callbacks = loop.callbacks(recorder)
        let timer = try callbacks.schedule(after: .seconds(1), repeating: .seconds(1))
        recorder.name(timer, "tick")
        try loop.advance(by: .seconds(2))
        // The loop's clock jumps to 5.5 s: 3, 4 and 5 are due at once.
        try loop.setManualTime(to: MonotonicClock.Instant(offset: .milliseconds(5_500)))
        try loop.advance(by: .zero)
        #expect(recorder.calls.value == [
            "tick missed 0 @1.0 seconds", "tick missed 0 @2.0 seconds", "tick missed 2 @5.5 seconds",
        ])
        #expect(callbacks.isScheduled(timer))
        #expect(callbacks.cancel(timer))
        #expect(!callbacks.cancel(timer), "cancelled already")
        try loop.advance(by: .seconds(10))
        #expect(recorder.calls.value.count == 3)
        #expect(loop.statistics.pending == 0)
    }

    @Test("a handler that cancels a timer due in the same pass: it does not fire")
    func cancelFromTheHandler() throws {
        let loop = try TimerLoop.manual()
        let recorder = Recorder(loop: loop)
        let callbacks = loop.callbacks(recorder)
        let first = try callbacks.schedule(after: .seconds(1))
        let second = try callbacks.schedule(after: .seconds(1) + .nanoseconds(1))
        recorder.name(first, "first")
        recorder.name(second, "second")
        recorder.onFire.withLock { $0 = { timer in if timer == first { #expect(callbacks.cancel(second)) } } }
        try loop.advance(by: .seconds(2))
        #expect(recorder.calls.value == ["first missed 0 @1.0 seconds"])
    }

    @Test("timers fire only in their modes")
    func modes() throws {
        let loop = try TimerLoop.manual()
        let recorder = Recorder(loop: loop)
        let callbacks = loop.callbacks(recorder)
        recorder.name(try callbacks.schedule(after: .seconds(1), in: .tracking), "tracking")
        recorder.name(try callbacks.schedule(after: .seconds(1), in: .common), "common")
        try loop.advance(by: .seconds(2))
        #expect(recorder.calls.value == ["common missed 0 @1.0 seconds"])
        try loop.advance(by: .zero, mode: .tracking)
        #expect(recorder.calls.value.last == "tracking missed 0 @2.0 seconds")
    }

    @Test("the loop keeps the handler alive while a timer is scheduled, and lets go of it after")
    func handlerLifetime() throws {
        let loop = try TimerLoop.manual()
        final class Watch: @unchecked Sendable {
            weak var recorder: Recorder?
        }
        let watch = Watch()
        let calls: Locked<[String]>
        let repeating: CallbackTimer
        do {
            let recorder = Recorder(loop: loop)
            watch.recorder = recorder
            calls = recorder.calls
            let callbacks = loop.callbacks(recorder)
            try callbacks.schedule(after: .seconds(1))
            repeating = try callbacks.schedule(after: .seconds(1), repeating: .seconds(1))
        }
        #expect(watch.recorder != nil, "let go of while its timers were scheduled")
        try loop.advance(by: .seconds(1))
        #expect(calls.value.count == 2)
        // The one-shot is done; the repeating one still holds the handler.
        #expect(watch.recorder != nil)
        let recorder = try #require(watch.recorder)
        #expect(loop.callbacks(recorder).cancel(repeating), "any TimerCallbacks of the loop cancels it")
        #expect(watch.recorder === recorder)
        _ = consume recorder
        #expect(watch.recorder == nil, "kept after its last timer was cancelled")
    }

    @Test("on a real loop: every timer fires, never before its delay, and a cancelled one never")
    func realLoop() throws {
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let recorder = Recorder(loop: loop)
        let callbacks = loop.callbacks(recorder)
        var starts: [String: Duration] = [:]
        var delays: [String: Duration] = [:]
        for round in 0..<50 {
            let name = "t\(round)"
            let delay = Duration.milliseconds(1 + round % 7)
            starts[name] = loop.time
            delays[name] = delay
            recorder.name(try callbacks.schedule(after: delay), name)
        }
        let cancelled = try callbacks.schedule(after: .milliseconds(20))
        recorder.name(cancelled, "cancelled")
        #expect(callbacks.cancel(cancelled))
        #expect(waitUntil { recorder.calls.value.count >= 50 }, "not every timer fired within 30 s")
        sleepThread(.milliseconds(40))
        let calls = recorder.calls.value
        #expect(calls.count == 50)
        #expect(!calls.contains { $0.hasPrefix("cancelled") })
        for call in calls {
            let parts = call.split(separator: " ")
            let name = String(parts[0])
            let at = try #require(Double(parts[3].dropFirst()))
            let earliest = starts[name]! + delays[name]!
            let earliestSeconds = Double(earliest.components.seconds)
                + Double(earliest.components.attoseconds) / 1e18
            #expect(at >= earliestSeconds - 1e-9, "\(name) fired at \(at), before \(earliestSeconds)")
        }
    }

    @Test("bad input is refused and schedules nothing; a timer of another loop is not cancelled")
    func badInput() throws {
        let loop = try TimerLoop.manual()
        let recorder = Recorder(loop: loop)
        let callbacks = loop.callbacks(recorder)
        #expect(throws: TimerError.invalidInterval(.zero)) {
            try callbacks.schedule(after: .seconds(1), repeating: .zero)
        }
        #expect(throws: TimerError.negativeTolerance(.seconds(-1))) {
            try callbacks.schedule(after: .seconds(1), tolerance: .seconds(-1))
        }
        #expect(loop.statistics.pending == 0)
        // A handle of another loop: refused, even one whose id names a
        // timer here (as ids of two loops may, once a loop has reused its
        // slots often enough), and the timers of both loops stay.
        let own = try callbacks.schedule(after: .seconds(1))
        let other = try TimerLoop.manual()
        let foreign = try other.callbacks(Recorder(loop: other)).schedule(after: .seconds(1))
        let sameID = CallbackTimer(id: own.id, loop: other.serial)
        for handle in [foreign, sameID] {
            #expect(!callbacks.isScheduled(handle))
            #expect(!callbacks.cancel(handle))
        }
        #expect(callbacks.isScheduled(own))
        #expect(loop.statistics.pending == 1, "a foreign handle cancelled a timer of this loop")
        #expect(other.statistics.pending == 1, "a cancel on another loop changed it")
        try other.advance(by: .seconds(1))
        #expect(other.statistics.pending == 0)
    }
}
