import Synchronization
import Testing
@testable import TimerKit

// Delayed performs: TimerLoop.perform(after:in:target:_:) and perform(after:in:_:),
// cancellation by token and by target, weak targets.

@Suite("PerformRequest")
struct PerformRequestTests {
    @Test("a perform runs once after its delay, with its target")
    func runsAfterDelay() throws {
        let loop = try TimerLoop.manual()
        let owner = Watched()
        let ran = Locked<[String]>([])
        let first = try loop.perform(after: .seconds(1), target: owner) { target in
            ran.withLock { $0.append("first@\(loop.time) \(target === owner)") }
        }
        let second = try loop.perform(after: .seconds(2), target: owner) { _ in
            ran.withLock { $0.append("second@\(loop.time)") }
        }
        #expect(loop.pendingPerformRequests(target: owner) == 2)
        #expect(first.isPending && second.isPending)
        try loop.advance(by: .seconds(1))
        #expect(ran.value == ["first@1.0 seconds true"])
        #expect(!first.isPending)
        #expect(loop.pendingPerformRequests(target: owner) == 1)
        try loop.advance(by: .seconds(5))
        #expect(ran.value == ["first@1.0 seconds true", "second@2.0 seconds"])
        #expect(loop.pendingPerformRequests(target: owner) == 0)
        #expect(loop.statistics.pending == 0)
    }

    @Test("a request is no longer pending once its action runs, in the action too")
    func notPendingWhileRunning() throws {
        let loop = try TimerLoop.manual()
        let owner = Watched()
        let requests = Locked<[PerformRequest]>([])
        let seen = Locked<[Bool]>([])
        let withTarget = try loop.perform(after: .seconds(1), target: owner) { _ in
            seen.withLock { $0.append(requests.value[0].isPending) }
        }
        let plain = try loop.perform(after: .seconds(1)) {
            seen.withLock { $0.append(requests.value[1].isPending) }
        }
        requests.withLock { $0 = [withTarget, plain] }
        try loop.advance(by: .seconds(1))
        #expect(seen.value == [false, false])
        #expect(!withTarget.isPending && !plain.isPending)
        #expect(loop.statistics.pending == 0)
    }

    @Test("cancel() by token stops one request, and is idempotent")
    func cancelByToken() throws {
        let loop = try TimerLoop.manual()
        let owner = Watched()
        let ran = Locked<[String]>([])
        let hint = try loop.perform(after: .seconds(2), target: owner) { _ in
            ran.withLock { $0.append("hint") }
        }
        try loop.perform(after: .seconds(2), target: owner) { _ in ran.withLock { $0.append("other") } }
        let plain = try loop.perform(after: .seconds(2)) { ran.withLock { $0.append("plain") } }
        try loop.advance(by: .seconds(1))
        hint.cancel()
        hint.cancel()
        plain.cancel()
        #expect(!hint.isPending)
        #expect(!plain.isPending)
        #expect(loop.pendingPerformRequests(target: owner) == 1)
        #expect(loop.statistics.pending == 1)
        try loop.advance(by: .seconds(5))
        #expect(ran.value == ["other"])
        // Cancelling a request that already ran changes nothing.
        hint.cancel()
        #expect(loop.statistics.pending == 0)
    }

    @Test("cancelPerformRequests(target:) cancels every request of that target only")
    func cancelByTarget() throws {
        let loop = try TimerLoop.manual()
        let owner = Watched()
        let bystander = Watched()
        let ran = Locked<[String]>([])
        var requests: [PerformRequest] = []
        for n in 0..<3 {
            requests.append(try loop.perform(after: .seconds(n + 1), target: owner) { _ in
                ran.withLock { $0.append("owner \(n)") }
            })
        }
        try loop.perform(after: .seconds(2), target: bystander) { _ in
            ran.withLock { $0.append("bystander") }
        }
        try loop.advance(by: .seconds(1))
        #expect(ran.value == ["owner 0"])
        #expect(loop.cancelPerformRequests(target: owner) == 2)
        #expect(requests.map(\.isPending) == [false, false, false])
        #expect(loop.pendingPerformRequests(target: owner) == 0)
        #expect(loop.pendingPerformRequests(target: bystander) == 1)
        #expect(loop.cancelPerformRequests(target: owner) == 0)
        try loop.advance(by: .seconds(5))
        #expect(ran.value == ["owner 0", "bystander"])
        #expect(loop.statistics.pending == 0)
    }

    @Test("a pending request does not keep its target alive, and does nothing once it is gone")
    func deadTargetDoesNothing() throws {
        let loop = try TimerLoop.manual()
        let gone = Locked(false)
        let ran = Locked(0)
        var owner: Watched? = Watched { gone.withLock { $0 = true } }
        let request = try loop.perform(after: .seconds(1), target: owner!) { _ in
            ran.withLock { $0 += 1 }
        }
        owner = nil
        #expect(gone.value, "the request kept its target alive")
        #expect(request.isPending)
        try loop.advance(by: .seconds(2))
        #expect(ran.value == 0)
        #expect(!request.isPending)
        #expect(loop.statistics.pending == 0)
    }

    @Test("a request fires only in the modes it was made for")
    func modes() throws {
        let loop = try TimerLoop.manual()
        let owner = Watched()
        let ran = Locked<[String]>([])
        try loop.perform(after: .seconds(1), in: .tracking, target: owner) { _ in
            ran.withLock { $0.append("tracking@\(loop.time)") }
        }
        try loop.perform(after: .seconds(1), in: .common) {
            ran.withLock { $0.append("common@\(loop.time)") }
        }
        try loop.advance(by: .seconds(2), mode: .default)
        #expect(ran.value == ["common@1.0 seconds"])
        try loop.advance(by: .zero, mode: .tracking)
        #expect(ran.value == ["common@1.0 seconds", "tracking@2.0 seconds"])
    }

    @Test("requests of a dead target are not counted for a new object at the same address")
    func deadTargetIsNotConfusedWithNewObject() throws {
        let loop = try TimerLoop.manual()
        // A new object usually takes the address of one just freed: seen
        // here first with no request, or the check below would be empty.
        var reused = false
        for _ in 0..<100 where !reused {
            var freed: Watched? = Watched()
            let freedIdentifier = ObjectIdentifier(freed!)
            freed = nil
            reused = ObjectIdentifier(Watched()) == freedIdentifier
        }
        try #require(reused, "no new object took the address of one just freed in 100 tries: nothing to check")
        // While a request for a dead object is pending, no new object takes
        // its address, so none is counted or cancelled for a new one.
        for _ in 0..<100 {
            var dead: Watched? = Watched()
            let deadIdentifier = ObjectIdentifier(dead!)
            try loop.perform(after: .seconds(1), target: dead!) { _ in }
            dead = nil
            let newcomer = Watched()
            #expect(ObjectIdentifier(newcomer) != deadIdentifier, "a new object took a pending request's target's address")
            #expect(loop.pendingPerformRequests(target: newcomer) == 0)
            #expect(loop.cancelPerformRequests(target: newcomer) == 0)
            try loop.advance(by: .seconds(1))
        }
        #expect(loop.statistics.pending == 0)
    }

    @Test("from the target's deinit, its requests are counted and cancelled")
    func cancelFromDeinit() throws {
        final class Hint: Sendable {
            let loop: TimerLoop
            let counts: Locked<[Int]>
            init(loop: TimerLoop, counts: Locked<[Int]>) {
                self.loop = loop
                self.counts = counts
            }
            deinit {
                let pending = loop.pendingPerformRequests(target: self)
                let cancelled = loop.cancelPerformRequests(target: self)
                counts.withLock { $0 = [pending, cancelled, loop.pendingPerformRequests(target: self)] }
            }
        }
        let loop = try TimerLoop.manual()
        let counts = Locked<[Int]>([])
        let ran = Locked(0)
        var hint: Hint? = Hint(loop: loop, counts: counts)
        var requests: [PerformRequest] = []
        for second in 1...3 {
            requests.append(try loop.perform(after: .seconds(second), target: hint!) { _ in ran.withLock { $0 += 1 } })
        }
        try loop.advance(by: .seconds(1))
        #expect(ran.value == 1)
        hint = nil
        #expect(counts.value == [2, 2, 0])
        #expect(requests.map(\.isPending) == [false, false, false])
        try loop.advance(by: .seconds(5))
        #expect(ran.value == 1)
        #expect(loop.statistics.pending == 0)
    }

    @Test("a request made from its target's deinit runs nothing and leaves the registry")
    func performFromDeinit() throws {
        final class Leaving: Sendable {
            let loop: TimerLoop
            let made: Locked<PerformRequest?>
            init(loop: TimerLoop, made: Locked<PerformRequest?>) {
                self.loop = loop
                self.made = made
            }
            deinit {
                let request = try? loop.perform(after: .seconds(1), target: self) { _ in }
                made.withLock { $0 = request }
            }
        }
        let loop = try TimerLoop.manual()
        let made = Locked<PerformRequest?>(nil)
        _ = Leaving(loop: loop, made: made)
        let request = try #require(made.value)
        #expect(request.isPending)
        #expect(loop.performRegistry.withLock { $0.isEmpty } == false)
        try loop.advance(by: .seconds(2))
        #expect(!request.isPending)
        #expect(loop.performRegistry.withLock { $0.isEmpty })
        #expect(loop.statistics.pending == 0)
    }

    @Test("a cancel by target and the action's start never both win")
    func cancelRacesStart() throws {
        // The loop's thread starts each action while this thread cancels by
        // target, after a spin of random length: a request counted as
        // cancelled never runs, one whose action started is not counted, and
        // each does one or the other. The spin's range adapts until both
        // have happened often: a run in which one side always won would
        // have tested nothing.
        let loop = try TimerLoop.startThread()
        defer { loop.stop() }
        let owner = Watched()
        let ran = Locked<Set<Int>>([])
        let spin = Atomic(0)
        var generator = SeededGenerator(seed: 7)
        var cancelled: Set<Int> = []
        var longestSpin = 1_000
        var rounds = 0
        let start = ContinuousClock.now
        while rounds < 400_000 && ContinuousClock.now - start < .seconds(60)
            && (ran.value.count < 1_000 || cancelled.count < 1_000)
        {
            let round = rounds
            try loop.perform(after: .zero, target: owner) { _ in ran.withLock { _ = $0.insert(round) } }
            for _ in 0...generator.below(longestSpin) { spin.add(1, ordering: .relaxed) }
            switch loop.cancelPerformRequests(target: owner) {
            case 0: break
            case 1: cancelled.insert(round)
            case let count: Issue.record("round \(round): \(count) requests cancelled, of 1")
            }
            rounds += 1
            if rounds % 1_000 == 0 {
                // Past the next round's start, most of the last thousand ran
                // or were cancelled: move the spin towards half and half.
                let share = Double(ran.value.count) / Double(rounds)
                if share < 0.25 { longestSpin = min(longestSpin * 2, 1 << 24) }
                if share > 0.75 { longestSpin = max(longestSpin / 2, 1) }
            }
        }
        // The loop's thread runs actions one after another: once this one
        // has run, every action that started before it has returned.
        let done = Locked(false)
        try loop.perform(after: .zero) { done.withLock { $0 = true } }
        #expect(waitUntil { done.value })
        let both = ran.value.intersection(cancelled).count
        #expect(both == 0, "\(both) requests counted as cancelled ran")
        #expect(ran.value.count + cancelled.count == rounds)
        #expect(ran.value.count >= 1_000 && cancelled.count >= 1_000,
                "in \(rounds) rounds, \(ran.value.count) ran and \(cancelled.count) were cancelled")
        #expect(loop.pendingPerformRequests(target: owner) == 0)
    }

    @Test("requests are equal only to themselves")
    func identity() throws {
        let loop = try TimerLoop.manual()
        let a = try loop.perform(after: .seconds(1)) {}
        let b = try loop.perform(after: .seconds(1)) {}
        #expect(a == a)
        #expect(a != b)
        #expect(Set([a, b, a]).count == 2)
        a.cancel()
        b.cancel()
    }
}
