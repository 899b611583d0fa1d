// expect: error: type 'Model' does not conform to the 'Sendable' protocol
//
// A delayed perform runs on the loop's thread with its target, as a timer does.
import TimerKit

final class Model {
    var count = 0
}

func later(loop: TimerLoop, model: Model) throws {
    try loop.perform(after: .seconds(1), target: model) { model in model.count += 1 }
}
