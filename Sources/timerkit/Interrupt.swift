import Foundation
import Synchronization
import TimerKit

/// Ctrl-C (`SIGINT`) as a request to finish early, for a command that
/// measures (`timerkit fps`): the signal stops its loop, the command prints
/// what it measured so far, and the process then ends by `SIGINT` as it
/// would have at once (``endIfRequested()``, so that a shell running it in
/// a loop stops there too).
///
/// The handler only sets a flag and writes a byte to a pipe (both safe in a
/// signal handler); a thread of its own reads the pipe and stops the loop,
/// which `TimerLoop.stop()` allows from any thread. An open `Terminal`
/// hands `SIGINT` on here while one is being watched (``deliver()``).
/// A process started ignoring `SIGINT` (as a shell starts a background job)
/// is left so: Ctrl-C does nothing there. A second `SIGINT` while the first
/// is being handled ends the process at once, as the signal's default
/// action does (the command may be stuck, writing to a pipe nobody reads).
final class Interrupt {
    /// The pipe's write end while a loop is watched, -1 otherwise: what the
    /// handler reads (a lock-free atomic).
    private static let writeEnd = Atomic<Int32>(-1)
    /// Whether `SIGINT` came while a loop was watched.
    private static let requestedFlag = Atomic<Bool>(false)

    /// Whether Ctrl-C asked the command to finish early.
    static var requested: Bool { requestedFlag.load(ordering: .sequentiallyConsistent) }

    /// The action `SIGINT` had before ``init(stopping:)``, put back by
    /// ``stopWatching()``; nil when it was not changed (the process ignores
    /// `SIGINT`).
    private var previous: sigaction?

    /// Starts watching for Ctrl-C: from now on `SIGINT` stops `loop` (or the
    /// next run of it) instead of ending the process, until ``stopWatching()``.
    /// Does nothing if the process ignores `SIGINT`.
    ///
    /// - Throws: the failed call (`pipe`, `sigaction`).
    init(stopping loop: TimerLoop) throws(SystemError) {
        var current = sigaction()
        _ = try SystemError.posix(sigaction(SIGINT, nil, &current), "sigaction")
        if current.ignoresSignal { return }
        var ends: [Int32] = [-1, -1]
        _ = try SystemError.posix(pipe(&ends), "pipe")
        let (readEnd, writeEnd) = (ends[0], ends[1])
        // Not passed on to a program this one starts.
        _ = fcntl(readEnd, F_SETFD, FD_CLOEXEC)
        _ = fcntl(writeEnd, F_SETFD, FD_CLOEXEC)
        // The reader starts with SIGINT blocked (a thread takes its
        // creator's mask), so that the handler never runs there.
        var interrupt = sigset_t()
        sigemptyset(&interrupt)
        sigaddset(&interrupt, SIGINT)
        var mask = sigset_t()
        pthread_sigmask(SIG_BLOCK, &interrupt, &mask)
        defer { pthread_sigmask(SIG_SETMASK, &mask, nil) }
        let reader = Thread {
            var byte: UInt8 = 0
            while true {
                let count = read(readEnd, &byte, 1)
                if count == 1 {
                    loop.stop()
                } else if count == 0 || errno != EINTR {
                    return
                }
            }
        }
        reader.name = "timerkit-interrupt"
        reader.start()
        Self.requestedFlag.store(false, ordering: .sequentiallyConsistent)
        Self.writeEnd.store(writeEnd, ordering: .sequentiallyConsistent)
        var action = sigaction()
        action.__sigaction_handler.sa_handler = handleInterrupt
        sigemptyset(&action.sa_mask)
        action.sa_flags = SA_RESTART
        guard sigaction(SIGINT, &action, &current) == 0 else {
            let error = SystemError(errno: Errno(rawValue: errno), function: "sigaction")
            Self.writeEnd.store(-1, ordering: .sequentiallyConsistent)
            // The reader sees the end of the pipe and returns.
            close(writeEnd)
            throw error
        }
        previous = current
    }

    /// Stops watching: `SIGINT` gets its action from before ``init(stopping:)``
    /// back, and ends the process again. The pipe and its reader stay until
    /// the process ends: a handler running on another thread may still hold
    /// the write end, and a closed descriptor's number could name another
    /// file by then.
    func stopWatching() {
        guard var previous else { return }
        self.previous = nil
        Self.writeEnd.store(-1, ordering: .sequentiallyConsistent)
        sigaction(SIGINT, &previous, nil)
    }

    /// Passes a `SIGINT` on to the loop being watched, from a signal
    /// handler: returns whether one was (if not, the signal should do what
    /// it would have done). Only the first is: a second one, the command
    /// not done yet (stuck, say, writing its summary to a pipe nobody
    /// reads), is not.
    static func deliver() -> Bool {
        let end = writeEnd.load(ordering: .sequentiallyConsistent)
        guard end >= 0 else { return false }
        guard !requestedFlag.exchange(true, ordering: .sequentiallyConsistent) else { return false }
        var byte: UInt8 = 1
        _ = write(end, &byte, 1)
        return true
    }

    /// Ends the process by `SIGINT` (its default action) if Ctrl-C asked
    /// the command to finish early; returns otherwise. Where the signal
    /// cannot end it (the process is a PID namespace's init, as in a
    /// container run without one), it exits with status 130, what a shell
    /// reports for an end by `SIGINT`.
    static func endIfRequested() {
        guard requested else { return }
        signal(SIGINT, SIG_DFL)
        var interrupt = sigset_t()
        sigemptyset(&interrupt)
        sigaddset(&interrupt, SIGINT)
        pthread_sigmask(SIG_UNBLOCK, &interrupt, nil)
        raise(SIGINT)
        _exit(128 + SIGINT)
    }
}

/// The `SIGINT` handler while a loop is watched: passes the signal on, or,
/// once nothing is watched (a handler that was running as watching
/// stopped), does what the default action does.
private func handleInterrupt(_ number: Int32) {
    let savedErrno = errno
    defer { errno = savedErrno }
    if !Interrupt.deliver() {
        signal(number, SIG_DFL)
        raise(number)
    }
}
