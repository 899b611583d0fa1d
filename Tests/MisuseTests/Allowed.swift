// expect: compiles
//
// What the checks above must still allow: Sendable targets (an actor, a class
// the caller vouches for with @unchecked Sendable, the explicit opt-in),
// instants of the timer's own clock, and several tasks iterating one sequence.
import TimerKit

actor Counter {
    var count = 0
    func bump() { count += 1 }
}

final class Vouched: @unchecked Sendable {
    var count = 0
}

func allowed(loop: TimerLoop) async throws {
    let counter = Counter()
    let timer = try LoopTimer(after: .seconds(1), target: counter) { counter, _, _ in
        Task { await counter.bump() }
    }
    try loop.add(timer)
    _ = try LoopTimer(after: .seconds(1), target: Vouched()) { vouched, _, _ in vouched.count += 1 }
    try loop.perform(after: .seconds(1), target: counter) { counter in Task { await counter.bump() } }
    try timer.setFireDate(MonotonicClock.now + .seconds(5))
    let boot = try LoopTimer(fireAt: BootClock.now + .seconds(30)) { _, _ in }
    try boot.setFireDate(BootClock.now + .seconds(60))
    try loop.run(until: MonotonicClock.now + .milliseconds(1))
    let ticks = try TimerTicks(every: .seconds(1))
    let first = Task { for try await _ in ticks { break } }
    let second = Task { for try await _ in ticks { break } }
    _ = (first, second)
}
