import CTimerCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why TimerKit refused or failed a call.
///
/// Every throwing API of the loop, its timers, its clocks and its ticks
/// throws this type (TrustedTime has its own). A refused call changes
/// nothing: timers already scheduled stay scheduled. New cases may come
/// with new APIs, so a `switch` over it needs a `default`.
///
/// ```swift
/// do {
///     let timer = try LoopTimer(after: .seconds(1)) { _, _ in }
///     try loop.add(timer, in: [])
/// } catch .noModes {
///     // an empty mode list
/// } catch {
///     print(error)
/// }
/// ```
public enum TimerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A repeating interval must be at least one nanosecond.
    case invalidInterval(Duration)
    /// A tolerance must not be negative.
    case negativeTolerance(Duration)
    /// The timer (or ``FrameTicker``) was invalidated, or, a one-shot timer,
    /// has fired: it cannot be scheduled or changed any more. Inside its own
    /// action a one-shot has no next fire to change: only `setFireDate(_:)`
    /// gives it one.
    case invalidated
    /// The timer is already scheduled on another loop.
    case scheduledOnAnotherLoop
    /// Another thread is running the loop, or the call is not allowed from
    /// inside one of the loop's callbacks (for example advancing a manual
    /// loop from a timer it fires).
    case busy
    /// Another task is waiting in `next()` of the same ``TimerTicks``
    /// iterator (a copy of it: copies share one timer). An iterator belongs
    /// to one task; the waiting call goes on.
    case iteratorInUse
    /// A loop tells apart at most 31 modes (`TK_MODE_COUNT`); this one would be the 32nd.
    case tooManyModes(LoopMode)
    /// ``LoopMode/common`` names a set of modes; a loop runs in one mode.
    case notARunMode(LoopMode)
    /// A timer needs at least one mode; the list was empty.
    case noModes
    /// Only a repeating timer has an interval to change.
    case notRepeating
    /// The call needs a loop made by ``TimerLoop/manual(startingAt:)``: a
    /// manual-time call on a real loop, or a `LoopTimer<ManualClock>` added
    /// to one.
    case notManual
    /// A frame rate range must have rates in [1e-6, 1e9] frames per
    /// second, a minimum no higher than its maximum, and a preferred rate
    /// (if any) between them.
    case invalidFrameRate(FrameRateRange)
    /// A frame-rate monitor needs a frame interval and a window from 1 ns
    /// to `Int64.max` nanoseconds (about 292 years).
    case invalidMonitorSetting(Duration)
    /// A ``QueueTimer`` was resumed more often than it was suspended.
    case unbalancedResume
    /// A ``QueueTimer`` was cancelled; a cancelled timer cannot be scheduled.
    case cancelled
    /// A ``LoopPrecision`` out of range: a margin below 1 ns or above
    /// 100 ms, or a real-time priority not in 1...99.
    case invalidPrecision(LoopPrecision)
    /// The process may not run a thread at the `SCHED_FIFO` priority a
    /// ``LoopPrecision`` asks for: it needs `CAP_SYS_NICE`, or an
    /// `RLIMIT_RTPRIO` at least that high. Thrown by
    /// ``TimerLoop/setPrecision(_:)``, which tries, and by a run whose thread
    /// is refused it when it applies it (the permission went away meanwhile).
    /// Never ignored silently.
    case realtimePriorityNotPermitted
    /// This process reads the clock off the kernel's own reading of it, as
    /// a time faker preloaded into it does (libfaketime without
    /// `FAKETIME_DONT_FAKE_MONOTONIC=1` fakes the monotonic and boot
    /// clocks). The kernel fires a loop's timers on its own clocks, so they
    /// would fire at the wrong times, an hour late on a clock faked an hour
    /// ahead: ``TimerLoop/init()`` refuses to make a loop. A faker that
    /// fakes only the wall clock is fine (wall-clock timers follow it).
    case fakedClock(ClockID)
    /// A call into the C core or the system failed for another reason, or
    /// the loop serving this call stopped because its run failed (the
    /// function is then `tk_loop_run`).
    case system(SystemError)

    /// The error a failed C call stands for: ``busy`` for the `EBUSY` of a
    /// call that claims the loop (`tk_loop_run`, `tk_loop_advance`),
    /// ``notManual`` for the `ENOTSUP` of a manual-time call on a real loop
    /// (`tk_loop_advance`, `tk_loop_set_manual_time`),
    /// ``realtimePriorityNotPermitted`` for the `EPERM` of
    /// `tk_loop_set_precision` and `tk_loop_run`, and ``system(_:)``,
    /// which keeps the function's name, for every other failure.
    public init(_ failure: SystemError) {
        switch (failure.errno, failure.function) {
        case (.resourceBusy, "tk_loop_run"), (.resourceBusy, "tk_loop_advance"):
            self = .busy
        case (.notSupported, "tk_loop_advance"), (.notSupported, "tk_loop_set_manual_time"):
            self = .notManual
        case (.notPermitted, "tk_loop_set_precision"), (.notPermitted, "tk_loop_run"):
            self = .realtimePriorityNotPermitted
        default:
            self = .system(failure)
        }
    }

    /// A sentence saying what went wrong.
    public var description: String {
        switch self {
        case .invalidInterval(let interval):
            "a repeating interval must be at least 1 ns, not \(interval)"
        case .negativeTolerance(let tolerance):
            "a tolerance must not be negative, not \(tolerance)"
        case .invalidated:
            "the timer was invalidated (or, a one-shot, has fired): it cannot be scheduled or changed any more"
        case .scheduledOnAnotherLoop:
            "the timer is already scheduled on another loop"
        case .busy:
            "the loop is running on another thread, or this call is not allowed from its callbacks"
        case .iteratorInUse:
            "another task is waiting for this ticks iterator's next tick: an iterator belongs to one task"
        case .tooManyModes(let mode):
            "the loop already has \(TK_MODE_COUNT) modes; cannot add mode \(ErrorText.quoted(mode.name))"
        case .notARunMode(let mode):
            "\(ErrorText.quoted(mode.name)) is a set of modes; a loop runs in one mode"
        case .noModes:
            "a timer needs at least one mode; the list of modes was empty"
        case .notRepeating:
            "a one-shot timer has no interval to change"
        case .notManual:
            "this call needs a manual loop"
        case .invalidFrameRate(let range):
            "not a frame rate range: \(range) (rates are in [1e-6, 1e9] frames per second, minimum <= preferred <= maximum)"
        case .invalidMonitorSetting(let value):
            "a frame-rate monitor needs a frame interval and window from 1 ns to Int64.max ns (about 292 years), not \(value)"
        case .unbalancedResume:
            "the queue timer was resumed without a matching suspend"
        case .cancelled:
            "the queue timer was cancelled and cannot be scheduled"
        case .invalidPrecision(let precision):
            "not a loop precision: \(precision) (the margin must be from 1 ns to 100 ms, a real-time priority in 1...99)"
        case .realtimePriorityNotPermitted:
            "the process may not run a thread at that SCHED_FIFO priority (it needs CAP_SYS_NICE or a high enough RLIMIT_RTPRIO)"
        case .fakedClock(let clock):
            "the \(clock) clock this process reads is not the kernel's (a preloaded libfaketime faking it?),"
                + " so a loop's timers would fire at the wrong times;"
                + " run it with FAKETIME_DONT_FAKE_MONOTONIC=1, which fakes only the wall clock"
        case .system(let failure):
            failure.description
        }
    }

    /// Returns `result` if it is not negative; otherwise throws the
    /// ``TimerError`` the failure stands for, naming `function`.
    static func check<Result: BinaryInteger>(
        _ result: Result, _ function: StaticString
    ) throws(TimerError) -> Result {
        do {
            return try SystemError.check(result, function)
        } catch {
            throw TimerError(error)
        }
    }
}
