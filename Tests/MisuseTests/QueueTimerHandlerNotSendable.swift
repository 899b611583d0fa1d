// expect: error: capture of 'model' with non-Sendable type 'Model' in a '@Sendable' closure
//
// A queue timer's handler runs on its queue, not on the thread that set it:
// state it captures must be Sendable, as with DispatchSourceTimer under
// strict concurrency.
import Dispatch
import TimerKit

final class Model {
    var count = 0
}

func start(queue: DispatchQueue, model: Model) throws {
    let timer = try QueueTimer(queue: queue)
    timer.setEventHandler { _ in model.count += 1 }
    try timer.schedule(deadline: .now + .seconds(1))
    try timer.activate()
}
