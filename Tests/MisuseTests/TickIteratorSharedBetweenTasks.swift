// expect: error: risks causing data races
//
// One iterator belongs to one task; each task iterates the sequence itself.
import TimerKit

func share() async throws {
    let ticks = try TimerTicks(every: .seconds(1))
    var iterator = ticks.makeAsyncIterator()
    let other = Task { _ = try await iterator.next() }
    _ = try await iterator.next()
    _ = other
}
