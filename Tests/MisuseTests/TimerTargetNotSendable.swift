// expect: error: type 'Model' does not conform to the 'Sendable' protocol
//
// A timer's action runs on the loop's thread with its target: a target that
// is not Sendable would be used from two threads at once.
import TimerKit

final class Model {
    var count = 0
}

func start(loop: TimerLoop, model: Model) throws {
    let timer = try LoopTimer(after: .seconds(1), repeating: .seconds(1), target: model) {
        model, _, _ in model.count += 1
    }
    try loop.add(timer)
}
