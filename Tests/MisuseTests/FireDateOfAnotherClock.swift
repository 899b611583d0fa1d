// expect: error: cannot convert value of type 'ClockInstant<BootClock>' to expected argument type 'MonotonicClock.Instant'
//
// A monotonic timer's fire date is a monotonic instant; a boot-clock instant
// (which keeps counting through a suspend) is another clock's.
import TimerKit

func move(_ timer: LoopTimer<MonotonicClock>) throws {
    try timer.setFireDate(BootClock.now + .seconds(5))
}
