import Synchronization

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A lock stored inside the object it guards, so that guarding costs no
/// allocation of its own: what keeps a ``LoopTimer`` at one allocation.
///
/// It is a test-and-set lock on one atomic flag: taking it free costs one
/// compare-and-swap, and releasing it one store. That suits sections of a few
/// instructions and C calls that do not wait (a timer's state and the
/// `tk_loop_*` call that goes with it), never code that may block. The flag is
/// an `Atomic`, inlined into this module, so ThreadSanitizer sees its
/// acquire and release (unlike `Synchronization.Mutex`'s; see
/// ``ThreadLocked``).
///
/// A thread that finds it held spins briefly (the holder is running on
/// another processor and about to let go), then yields the processor, for
/// about ten microseconds in all (to a holder of its own priority waiting
/// for this processor, or one in a system call), then sleeps, for 2 µs at
/// first and longer each time, up to 128 µs (an ordinary thread's timer
/// slack makes each sleep some 50 µs longer). The sleep is
/// what lets a holder of lower priority run: a loop thread at a `SCHED_FIFO`
/// priority (``LoopPrecision/realtimePriority``) that preempted an ordinary
/// thread in the middle of a section would otherwise spin and yield to no
/// one, keeping that thread off its processor until the kernel's real-time
/// throttling stepped in, about a second later.
struct InlineLock: ~Copyable, Sendable {
    private let held = Atomic<Bool>(false)

    init() {}

    /// Takes the lock.
    @inline(__always)
    func lock() {
        if held.compareExchange(
            expected: false, desired: true, successOrdering: .acquiring, failureOrdering: .relaxed
        ).exchanged {
            return
        }
        lockContended()
    }

    @inline(never)
    private func lockContended() {
        var attempts = 0
        var pause = Self.firstPause
        while true {
            if !held.load(ordering: .relaxed)
                && held.compareExchange(
                    expected: false, desired: true, successOrdering: .acquiring,
                    failureOrdering: .relaxed
                ).exchanged
            {
                return
            }
            attempts += 1
            if attempts <= Self.spins { continue }
            if attempts <= Self.spins + Self.yields {
                sched_yield()
                continue
            }
            // The holder is not running: block, so that it can, whatever
            // its priority against this thread's.
            var sleep = timespec(tv_sec: 0, tv_nsec: pause)
            nanosleep(&sleep, nil)
            pause = min(pause * 2, Self.longestPause)
        }
    }

    /// Failed attempts spent spinning, then yielding, before sleeping.
    static let spins = 100
    static let yields = 32
    /// The first sleep and the longest, in nanoseconds.
    static let firstPause = 2_000
    static let longestPause = 128_000

    /// Releases the lock, which the calling thread holds.
    @inline(__always)
    func unlock() {
        held.store(false, ordering: .releasing)
    }
}
