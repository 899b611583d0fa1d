// expect: error: capture of 'model' with non-Sendable type 'Model' in a '@Sendable' closure
//
// The same mistake through a closure: the action must be @Sendable.
import TimerKit

final class Model {
    var count = 0
}

func start(loop: TimerLoop, model: Model) throws {
    try loop.schedule(after: .seconds(1)) { _, _ in model.count += 1 }
}
