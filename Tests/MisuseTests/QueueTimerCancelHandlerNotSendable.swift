// expect: error: capture of 'model' with non-Sendable type 'Model' in a '@Sendable' closure
//
// The cancel handler runs on the timer's queue too.
import Dispatch
import TimerKit

final class Model {
    var cancelled = false
}

func stop(queue: DispatchQueue, model: Model) throws {
    let timer = try QueueTimer(queue: queue)
    timer.setCancelHandler { model.cancelled = true }
    timer.cancel()
}
