import CTimerCore

/// A failed call into the C core: the errno value it returned and the name of
/// the C function that returned it.
///
/// Every fallible function of CTimerCore returns 0 or a negative errno value,
/// so Swift never reads the thread's `errno`.
///
/// ```swift
/// do {
///     _ = try CoreClock.monotonic.now()
/// } catch {
///     print(error.function, error.code)  // e.g. "tk_clock_now" 22
/// }
/// ```
public struct CoreError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The errno value, positive (for example 22, `EINVAL`).
    public let code: Int32

    /// The name of the C function that failed, for example `"tk_clock_now"`.
    public let function: String

    /// Makes an error from a positive errno value and a C function's name.
    public init(code: Int32, function: String) {
        self.code = code
        self.function = function
    }

    /// `"<function> failed: errno <code>"`.
    public var description: String {
        "\(function) failed: errno \(code)"
    }
}

/// Returns `result` if it is not negative, and otherwise throws the error it
/// encodes, naming `function` as the C function that failed.
///
/// The one place where a core return value becomes a ``CoreError``.
func checkCore<Result: SignedInteger>(
    _ result: Result, _ function: StaticString
) throws(CoreError) -> Result {
    guard result >= 0 else {
        throw CoreError(code: Int32(truncatingIfNeeded: -result), function: "\(function)")
    }
    return result
}
