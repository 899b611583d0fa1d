import CTimerCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why TimerKit refused a call.
///
/// Every throwing API of the loop, its timers and clocks throws this type
/// (trusted time has its own, `TrustedTimeError`). A refused call changes
/// nothing: timers already scheduled stay scheduled.
public enum TimerError: Error, Sendable, Hashable, CustomStringConvertible {
    /// A repeating interval must be greater than zero.
    case invalidInterval(Duration)
    /// A tolerance must not be negative.
    case negativeTolerance(Duration)
    /// The timer was invalidated; an invalidated timer cannot be scheduled again.
    case invalidated
    /// The timer is already scheduled on another loop.
    case scheduledOnAnotherLoop
    /// Another thread is running the loop, or the call is not allowed from
    /// inside one of the loop's callbacks (e.g. advancing a manual loop).
    case busy
    /// A loop tells apart at most 32 modes; this one would be the 33rd.
    case tooManyModes(LoopMode)
    /// ``LoopMode/common`` names a set of modes; a loop runs in one mode.
    case notARunMode(LoopMode)
    /// The call needs a loop made by ``TimerLoop/manual(startingAt:)``.
    case notManual
    /// The C core failed for another reason.
    case core(CoreError)

    /// A sentence saying what went wrong.
    public var description: String {
        switch self {
        case .invalidInterval(let interval):
            "a repeating interval must be greater than zero, not \(interval)"
        case .negativeTolerance(let tolerance):
            "a tolerance must not be negative, not \(tolerance)"
        case .invalidated:
            "the timer was invalidated and cannot be scheduled again"
        case .scheduledOnAnotherLoop:
            "the timer is already scheduled on another loop"
        case .busy:
            "the loop is running on another thread, or this call is not allowed from its callbacks"
        case .tooManyModes(let mode):
            "the loop already has \(TK_MODE_COUNT) modes; cannot add mode \(mode)"
        case .notARunMode(let mode):
            "\(mode) is a set of modes; a loop runs in one mode"
        case .notManual:
            "this call needs a manual loop"
        case .core(let error):
            error.description
        }
    }
}

/// Returns `result` if it is not negative; otherwise throws the ``TimerError``
/// it stands for, naming `function` as the C function that failed.
func checkLoop<Result: SignedInteger>(
    _ result: Result, _ function: StaticString
) throws(TimerError) -> Result {
    guard result < 0 else { return result }
    switch Int32(truncatingIfNeeded: -result) {
    case EBUSY: throw .busy
    case ENOTSUP: throw .notManual
    case let code: throw .core(CoreError(code: code, function: "\(function)"))
    }
}

