// expect: error: cannot convert value of type 'ClockInstant<WallClock>' to expected argument type
//
// A loop's run deadline is on its monotonic clock.
import TimerKit

func runAWhile(_ loop: TimerLoop) throws {
    try loop.run(until: WallClock.now + .seconds(1))
}
