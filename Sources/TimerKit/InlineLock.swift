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
/// compare-and-swap, and a thread that finds it held spins briefly, then
/// yields the processor until it is free. That suits sections of a few
/// instructions and C calls that do not wait (a timer's state and the
/// `tk_loop_*` call that goes with it), never code that may block. The flag is
/// an `Atomic`, inlined into this module, so ThreadSanitizer sees its
/// acquire and release (unlike `Synchronization.Mutex`'s; see
/// ``ThreadLocked``).
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
        var spins = 0
        while true {
            if !held.load(ordering: .relaxed)
                && held.compareExchange(
                    expected: false, desired: true, successOrdering: .acquiring,
                    failureOrdering: .relaxed
                ).exchanged
            {
                return
            }
            spins += 1
            // A holder that was preempted cannot finish while this spins:
            // after a short spin, let it run.
            if spins >= 64 { sched_yield() }
        }
    }

    /// Releases the lock, which the calling thread holds.
    @inline(__always)
    func unlock() {
        held.store(false, ordering: .releasing)
    }
}
