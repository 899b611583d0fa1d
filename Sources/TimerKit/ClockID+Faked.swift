import CTimerCore

extension ClockID {
    /// How far this process's reading of a clock may be off the kernel's
    /// own before it counts as faked: far above any difference between the
    /// two ways of reading one clock, far below any offset a time faker is
    /// set to.
    static let fakedClockSlack: Int64 = 50_000_000

    /// Whether this process reads the clock off the kernel's own reading of
    /// it: what a time faker preloaded into the process does (libfaketime
    /// without `FAKETIME_DONT_FAKE_MONOTONIC=1` fakes the monotonic and boot
    /// clocks it reads). The kernel fires a loop's timers on its own
    /// clocks, so on a faked one they would fire at the wrong times: an
    /// hour late on a clock faked an hour ahead.
    ///
    /// The process's reading (`tk_clock_now`) is taken between two of the
    /// kernel's (`tk_clock_now_kernel`, a system call that no preloaded
    /// library reaches), and the clock counts as faked if it is outside
    /// them by more than ``fakedClockSlack``. A true reading lies between
    /// the two however long the thread is paused between reads, so one try
    /// is enough. A clock the kernel cannot read counts as not faked: the
    /// loop's own calls report that.
    var isFaked: Bool {
        Self.isFaked(
            read: { tk_clock_now(rawClock, &$0) },
            kernelRead: { tk_clock_now_kernel(rawClock, &$0) })
    }

    /// ``isFaked``, with the two readings given: each stores nanoseconds and
    /// returns 0, or returns a negative errno.
    static func isFaked(
        read: (inout Int64) -> Int32, kernelRead: (inout Int64) -> Int32
    ) -> Bool {
        var before: Int64 = 0
        var reading: Int64 = 0
        var after: Int64 = 0
        guard kernelRead(&before) == 0, read(&reading) == 0, kernelRead(&after) == 0 else {
            return false
        }
        return reading < before &- fakedClockSlack || reading > after &+ fakedClockSlack
    }
}
