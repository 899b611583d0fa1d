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
    /// moves on by `step` at each read, and the process reads it plus the
    /// next of `offsets` (the last one again once they run out).
    final class Readings {
        var kernel: Int64 = 1_000_000_000_000
        let step: Int64
        var offsets: [Int64]
        var reads = 0
        var kernelReads = 0
        var failKernelRead = false

        init(offsets: [Int64], step: Int64 = 1_000) {
            self.offsets = offsets
            self.step = step
        }

        func isFaked() -> Bool {
            ClockID.isFaked(
                read: { value in
                    self.reads += 1
                    self.kernel += self.step
                    let offset = self.offsets.count > 1 ? self.offsets.removeFirst() : self.offsets[0]
                    value = self.kernel + offset
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
            let readings = Readings(offsets: [offset])
            #expect(readings.isFaked(), "offset \(offset)")
            // Two tries, each between two of the kernel's readings.
            #expect(readings.reads == 2 && readings.kernelReads == 4)
        }
    }

    @Test("the kernel's own reading is not faked, and one try is enough")
    func kernelsOwn() {
        let readings = Readings(offsets: [0])
        #expect(!readings.isFaked())
        #expect(readings.reads == 1 && readings.kernelReads == 2)
    }

    @Test("a reading off once, as a pause between reads makes it, is not faked")
    func offOnce() {
        let readings = Readings(offsets: [200_000_000, 0])
        #expect(!readings.isFaked())
        #expect(readings.reads == 2)
    }

    @Test("up to the slack either way is not faked; a nanosecond more is")
    func slack() {
        let slack = ClockID.fakedClockSlack
        // Between the kernel's reads `before` and `after`, `step` apart on
        // either side of the process's read.
        let step: Int64 = 1_000
        #expect(!Readings(offsets: [step + slack], step: step).isFaked())
        #expect(Readings(offsets: [step + slack + 1], step: step).isFaked())
        #expect(!Readings(offsets: [-step - slack], step: step).isFaked())
        #expect(Readings(offsets: [-step - slack - 1], step: step).isFaked())
    }

    @Test("a clock the kernel cannot read counts as not faked")
    func kernelCannotRead() {
        let readings = Readings(offsets: [3_600_000_000_000])
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
