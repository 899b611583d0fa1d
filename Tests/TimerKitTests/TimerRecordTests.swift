import CTimerCore
import Testing

@testable import TimerKit

// A LoopTimer keeps the C core's record of its timer inside itself
// (tk_loop_schedule_record), and invalidating it takes the loop's reference
// back (tk_loop_cancel_record). These check where the record is, and that the
// loop lets go of a timer, by either way, exactly when it should.

@Suite("LoopTimer's record")
struct TimerRecordTests {
    @Test("the record the core writes is the timer's own stored property")
    func recordIsTheStoredProperty() throws {
        let loop = try TimerLoop.manual()
        let timer = try loop.schedule(after: .seconds(1), repeating: .seconds(1)) { _, _ in }
        let property = withUnsafeMutablePointer(to: &timer.record) { UnsafeRawPointer($0) }
        #expect(property == UnsafeRawPointer(timer.recordPointer))
        // Written by the core through recordPointer, seen through the property.
        let written = withUnsafeBytes(of: timer.record) { $0.contains { $0 != 0 } }
        #expect(written)
        // And the rest of the timer is intact.
        #expect(timer.isValid)
        #expect(timer.repeats)
        #expect(timer.interval == .seconds(1))
        #expect(timer.fireDate?.offset == .seconds(1))
        timer.invalidate()
    }

    @Test("a LoopTimer's instance is at most 136 bytes, whatever its clock")
    func objectSize() {
        // The size the runtime asks the allocator for, read from the class
        // metadata: 136 bytes fill a 144-byte glibc chunk (the size the
        // layout in AnyLoopTimer is arranged for); one byte more takes the
        // object to the next chunk, 160 bytes. What malloc_usable_size says
        // of a live object is no measure of this: a chunk cut from a larger
        // free one may keep the few bytes left over. (The metadata's size
        // is the whole allocation for a class with no tail-allocated
        // storage, which LoopTimer has none of.)
        #expect(instanceSize(OneWord.self) == 24, "class metadata layout not as expected")
        #expect(instanceSize(OneWordAndAByte.self) == 25, "class metadata layout not as expected")
        let classes: [AnyClass] = [
            LoopTimer<MonotonicClock>.self,
            LoopTimer<BootClock>.self,
            LoopTimer<WallClock>.self,
            LoopTimer<ManualClock>.self,
        ]
        for timerClass in classes {
            let bytes = instanceSize(timerClass)
            #expect(bytes > 0 && bytes <= 136, "\(timerClass): \(bytes) bytes")
        }
    }

    @Test("an invalidated timer is let go of at once, on a manual and on a real loop")
    func invalidateLetsGo() throws {
        for loop in [try TimerLoop.manual(), try TimerLoop()] {
            weak var weakTimer: LoopTimer<MonotonicClock>?
            do {
                let timer = try loop.schedule(after: .seconds(100)) { _, _ in }
                weakTimer = timer
            }
            // Only the loop holds it now.
            #expect(weakTimer != nil)
            weakTimer?.invalidate()
            #expect(weakTimer == nil, "the loop still holds an invalidated timer")
            #expect(loop.statistics.pending == 0)
        }
    }

    @Test("a timer that invalidates itself from its action is let go of when the action returns")
    func invalidateFromItsOwnAction() throws {
        let loop = try TimerLoop.manual()
        weak var weakTimer: LoopTimer<MonotonicClock>?
        let calls = Locked(0)
        let heldDuringAction = Locked(false)
        do {
            let timer = try loop.schedule(after: .seconds(1), repeating: .seconds(1)) {
                timer, _ in
                calls.withLock { $0 += 1 }
                timer.invalidate()
                // The loop's reference is released only when this returns.
                heldDuringAction.withLock { $0 = true }
            }
            weakTimer = timer
        }
        try loop.advance(by: .seconds(1))
        #expect(calls.value == 1)
        #expect(heldDuringAction.value)
        #expect(weakTimer == nil, "the loop still holds a timer invalidated from its action")
        try loop.advance(by: .seconds(5))
        #expect(calls.value == 1)
    }

    @Test("timers keep working when many are scheduled and invalidated")
    func manyTimers() throws {
        let loop = try TimerLoop.manual()
        let fired = Locked(0)
        var timers: [LoopTimer<MonotonicClock>] = []
        for i in 0..<10_000 {
            timers.append(
                try loop.schedule(after: .milliseconds(1 + i % 1000)) { _, _ in
                    fired.withLock { $0 += 1 }
                })
        }
        for i in stride(from: 0, to: timers.count, by: 2) { timers[i].invalidate() }
        #expect(loop.statistics.pending == 5_000)
        try loop.advance(by: .seconds(1))
        #expect(fired.value == 5_000)
        #expect(timers.enumerated().allSatisfy { !$0.element.isValid })
        #expect(loop.statistics.pending == 0)
    }
}

/// The instance size in a Swift class's metadata: after the kind and
/// superclass words come the flags, the instance address point and the
/// instance size, each 32 bits (Swift's class metadata on platforms without
/// Objective-C interop). `objectSize` checks the reading on two classes of
/// known size first.
private func instanceSize(_ someClass: AnyClass) -> Int {
    let metadata = unsafeBitCast(someClass, to: UnsafeRawPointer.self)
    return Int(metadata.load(fromByteOffset: 24, as: UInt32.self))
}

/// A heap object header (16 bytes) and one word.
private final class OneWord {
    var word: Int64 = 0
}

/// A heap object header, one word and one byte.
private final class OneWordAndAByte {
    var word: Int64 = 0
    var byte: UInt8 = 0
}
