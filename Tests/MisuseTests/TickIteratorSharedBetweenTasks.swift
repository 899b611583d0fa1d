// expect: error: risks causing data races
//
// One iterator belongs to one task (it is not Sendable); each task iterates
// the sequence itself. Were the iterator Sendable, this would compile: the
// copies go to the task by value, with no captured variable.
import TimerKit

func share() async throws {
    let ticks = try TimerTicks(every: .seconds(1))
    let iterator = ticks.makeAsyncIterator()
    let other = Task {
        var mine = iterator
        _ = try await mine.next()
    }
    var again = iterator
    _ = try await again.next()
    _ = other
}
