import CTimerCore
import Glibc
import Testing

@testable import TimerKit

/// A loop refuses a process whose monotonic or boot clock readings are off
/// the kernel's own (a preloaded time faker), on which its timers would fire
/// at the wrong times. The readings are given here; scripts/test-demo.sh
/// and scripts/test-fps.sh run `timerkit` under libfaketime, where
/// `TimerLoop()` meets a faked clock.
@Suite("Faked clocks")
struct FakedClockTests {
    /// Readings for `ClockID.isFaked(read:kernelRead:)`: the kernel's clock
    /// moves on by `step` at each read, and the process reads it plus
    /// `offset`.
    final class Readings {
        var kernel: Int64 = 1_000_000_000_000
        let step: Int64
        let offset: Int64
        var reads = 0
        var kernelReads = 0
        var failKernelRead = false

        init(offset: Int64, step: Int64 = 1_000) {
            self.offset = offset
            self.step = step
        }

        func isFaked() -> Bool {
            ClockID.isFaked(
                read: { value in
                    self.reads += 1
                    self.kernel += self.step
                    value = self.kernel + self.offset
                    return 0
                },
                kernelRead: { value in
                    self.kernelReads += 1
                    if self.failKernelRead { return -EINVAL }
                    self.kernel += self.step
                    value = self.kernel
                    return 0
                })
        }
    }

    @Test("a clock read an hour ahead or behind the kernel's is faked")
    func hourOff() {
        let hour: Int64 = 3_600_000_000_000
        for offset in [hour, -hour] {
            let readings = Readings(offset: offset)
            #expect(readings.isFaked(), "offset \(offset)")
            // One try, between two of the kernel's readings.
            #expect(readings.reads == 1 && readings.kernelReads == 2)
        }
    }

    @Test("the kernel's own reading is not faked, however far apart the kernel's reads are")
    func kernelsOwn() {
        // A thread paused for a second between reads.
        let readings = Readings(offset: 0, step: 1_000_000_000)
        #expect(!readings.isFaked())
        #expect(readings.reads == 1 && readings.kernelReads == 2)
    }

    @Test("up to the slack either way is not faked; a nanosecond more is")
    func slack() {
        let slack = ClockID.fakedClockSlack
        // Between the kernel's reads `before` and `after`, `step` apart on
        // either side of the process's read.
        let step: Int64 = 1_000
        #expect(!Readings(offset: step + slack, step: step).isFaked())
        #expect(Readings(offset: step + slack + 1, step: step).isFaked())
        #expect(!Readings(offset: -step - slack, step: step).isFaked())
        #expect(Readings(offset: -step - slack - 1, step: step).isFaked())
    }

    @Test("a clock the kernel cannot read counts as not faked")
    func kernelCannotRead() {
        let readings = Readings(offset: 3_600_000_000_000)
        readings.failKernelRead = true
        #expect(!readings.isFaked())
    }

    @Test("this test process reads the kernel's clocks, and makes a loop")
    func realClocks() throws {
        for clock in ClockID.allCases {
            #expect(!clock.isFaked, "\(clock)")
        }
        _ = try TimerLoop()
    }
}
