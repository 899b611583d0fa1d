#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A C function failed: which one, and the ``Errno`` it reported.
///
/// ``TimerError/system(_:)`` and TrustedTime's errors carry it when a call
/// into the C core or the system fails for a reason that has no case of its
/// own.
///
/// ```swift
/// do {
///     try loop.run()
/// } catch TimerError.system(let failure) {
///     print(failure)            // "tk_loop_run failed: Cannot allocate memory (ENOMEM)"
///     print(failure.function)   // "tk_loop_run"
///     if failure.errno == .noMemory { print("out of memory") }
/// } catch {
///     print(error)
/// }
/// ```
public struct SystemError: Error, Hashable, Sendable, CustomStringConvertible {
    /// What went wrong.
    public var errno: Errno

    /// The C function that failed, for example `"tk_loop_run"` or `"open"`.
    public var function: String

    /// A failure of `function` with `errno`.
    public init(errno: Errno, function: String) {
        self.errno = errno
        self.function = function
    }

    /// `"<function> failed: <what errno means> (<its name>)"`.
    public var description: String {
        "\(function) failed: \(errno)"
    }
}

// MARK: Where C results become Swift errors

extension SystemError {
    /// Returns `result` if it is not negative; otherwise throws the failure
    /// it encodes (a negative errno, as every CTimerCore and CTimerSNTP
    /// function returns), naming `function`.
    ///
    /// This and ``posix(_:_:)`` are the only places where a C result becomes
    /// a Swift error; each module's error type then says what the failure
    /// means for its calls.
    @inlinable
    package static func check<Result: BinaryInteger>(
        _ result: Result, _ function: StaticString
    ) throws(SystemError) -> Result {
        guard result < 0 else { return result }
        throw SystemError(errno: Errno(rawValue: CInt(truncatingIfNeeded: result)), function: "\(function)")
    }

    /// Returns `result` if it is not -1; otherwise throws the thread's
    /// `errno`, naming `function`. For POSIX calls that report failure that
    /// way (`open`, `read`, `fsync`, ...); read at once, before anything else
    /// can change `errno`.
    @inline(never)
    package static func posix<Result: BinaryInteger>(
        _ result: Result, _ function: StaticString
    ) throws(SystemError) -> Result {
        guard result == -1 else { return result }
        throw SystemError(errno: Errno(rawValue: threadErrno()), function: "\(function)")
    }

    /// Checks a call whose C contract rules out failure for the arguments
    /// TimerKit passes (for example `tk_loop_stop` on a live loop can only
    /// fail for a NULL loop). A failure there is a bug in TimerKit, not in
    /// the caller's input: it stops the program with the function's name and
    /// the error rather than going on in a state nobody planned for.
    @inlinable
    package static func expectSuccess<Result: BinaryInteger>(
        _ result: Result, _ function: StaticString
    ) {
        if result < 0 {
            let failure = SystemError(
                errno: Errno(rawValue: CInt(truncatingIfNeeded: result)), function: "\(function)")
            preconditionFailure("TimerKit: \(failure), which its contract rules out here")
        }
    }
}

/// The calling thread's `errno` (a function of its own: inside
/// ``SystemError`` the name means the property).
@inline(never)
private func threadErrno() -> CInt {
    errno
}
