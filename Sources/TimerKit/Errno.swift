import CTimerCore

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// An error number, as a C function of the core or the system reports it.
///
/// Every fallible function of CTimerCore returns 0 or a negative errno value;
/// TimerKit turns that value into an `Errno` (inside a ``SystemError`` that
/// also names the function). Compare it with the named values, or match it
/// in a `catch`:
///
/// ```swift
/// do {
///     try loop.run()
/// } catch TimerError.system(Errno.noMemory) {
///     // tk_loop_run ran out of memory
/// } catch {
///     print(error)   // "tk_loop_run failed: Bad file descriptor (EBADF)"
/// }
/// ```
///
/// The names follow swift-system's `Errno`; the C name is in each value's
/// documentation and in ``name``.
public struct Errno: RawRepresentable, Error, Hashable, Sendable, CustomStringConvertible {
    /// The positive errno value, for example 12 for `ENOMEM`.
    public let rawValue: CInt

    /// The error with this number. A negative value (as the core returns
    /// them) is taken as its magnitude.
    public init(rawValue: CInt) {
        self.rawValue = rawValue == .min ? .max : abs(rawValue)
    }

    /// The C name, such as `"ENOMEM"`, or `nil` for a number with no name.
    ///
    /// The corresponding C function is `tk_errno_name`.
    public var name: String? {
        tk_errno_name(rawValue).map { String(cString: $0) }
    }

    /// What the error means, as `strerror` says it, with its C name:
    /// `"Cannot allocate memory (ENOMEM)"`.
    ///
    /// The corresponding C function is `tk_strerror`.
    public var description: String {
        let text = String(cString: tk_strerror(rawValue))
        return "\(text) (\(name ?? "errno \(rawValue)"))"
    }

    /// `EPERM`: the operation is not permitted.
    public static var notPermitted: Errno { Errno(rawValue: EPERM) }
    /// `ENOENT`: no such file, directory or entry (for a timer: no such timer).
    public static var noSuchFileOrDirectory: Errno { Errno(rawValue: ENOENT) }
    /// `ESRCH`: no such process.
    public static var noSuchProcess: Errno { Errno(rawValue: ESRCH) }
    /// `EINTR`: a signal interrupted the call.
    public static var interrupted: Errno { Errno(rawValue: EINTR) }
    /// `EIO`: an input/output error.
    public static var ioError: Errno { Errno(rawValue: EIO) }
    /// `ENXIO`: no such device or address (for a host name: it does not resolve).
    public static var noSuchAddressOrDevice: Errno { Errno(rawValue: ENXIO) }
    /// `EBADF`: a descriptor that is not open.
    public static var badFileDescriptor: Errno { Errno(rawValue: EBADF) }
    /// `EAGAIN`: try again later.
    public static var resourceTemporarilyUnavailable: Errno { Errno(rawValue: EAGAIN) }
    /// `ENOMEM`: out of memory.
    public static var noMemory: Errno { Errno(rawValue: ENOMEM) }
    /// `EACCES`: permission denied.
    public static var permissionDenied: Errno { Errno(rawValue: EACCES) }
    /// `EFAULT`: a bad address.
    public static var badAddress: Errno { Errno(rawValue: EFAULT) }
    /// `EBUSY`: the resource is busy.
    public static var resourceBusy: Errno { Errno(rawValue: EBUSY) }
    /// `EEXIST`: the file exists.
    public static var fileExists: Errno { Errno(rawValue: EEXIST) }
    /// `ENOTDIR`: not a directory.
    public static var notDirectory: Errno { Errno(rawValue: ENOTDIR) }
    /// `EISDIR`: is a directory.
    public static var isDirectory: Errno { Errno(rawValue: EISDIR) }
    /// `EINVAL`: an invalid argument.
    public static var invalidArgument: Errno { Errno(rawValue: EINVAL) }
    /// `ENFILE`: too many open files in the system.
    public static var tooManyOpenFilesInSystem: Errno { Errno(rawValue: ENFILE) }
    /// `EMFILE`: too many open files in this process.
    public static var tooManyOpenFiles: Errno { Errno(rawValue: EMFILE) }
    /// `ENOSPC`: no space left on the device.
    public static var noSpace: Errno { Errno(rawValue: ENOSPC) }
    /// `EROFS`: a read-only file system.
    public static var readOnlyFileSystem: Errno { Errno(rawValue: EROFS) }
    /// `EPIPE`: a broken pipe.
    public static var brokenPipe: Errno { Errno(rawValue: EPIPE) }
    /// `ERANGE`: a result out of range.
    public static var outOfRange: Errno { Errno(rawValue: ERANGE) }
    /// `EDEADLK`: the call would deadlock.
    public static var deadlock: Errno { Errno(rawValue: EDEADLK) }
    /// `ENAMETOOLONG`: a file name too long.
    public static var fileNameTooLong: Errno { Errno(rawValue: ENAMETOOLONG) }
    /// `ENOSYS`: the function is not implemented.
    public static var noFunction: Errno { Errno(rawValue: ENOSYS) }
    /// `ENOMSG`: no message of the desired type.
    public static var noMessage: Errno { Errno(rawValue: ENOMSG) }
    /// `ENODATA`: no data available.
    public static var noData: Errno { Errno(rawValue: ENODATA) }
    /// `EPROTO`: a protocol error.
    public static var protocolError: Errno { Errno(rawValue: EPROTO) }
    /// `EBADMSG`: a bad message.
    public static var badMessage: Errno { Errno(rawValue: EBADMSG) }
    /// `EOVERFLOW`: a value too large for its type.
    public static var overflow: Errno { Errno(rawValue: EOVERFLOW) }
    /// `EMSGSIZE`: a message too long (or too short) for its purpose.
    public static var messageTooLong: Errno { Errno(rawValue: EMSGSIZE) }
    /// `EPROTONOSUPPORT`: the protocol is not supported.
    public static var protocolNotSupported: Errno { Errno(rawValue: EPROTONOSUPPORT) }
    /// `ENOTSUP`: the operation is not supported.
    public static var notSupported: Errno { Errno(rawValue: ENOTSUP) }
    /// `EAFNOSUPPORT`: the address family is not supported.
    public static var addressFamilyNotSupported: Errno { Errno(rawValue: EAFNOSUPPORT) }
    /// `EADDRINUSE`: the address is in use.
    public static var addressInUse: Errno { Errno(rawValue: EADDRINUSE) }
    /// `ENETUNREACH`: the network is unreachable.
    public static var networkUnreachable: Errno { Errno(rawValue: ENETUNREACH) }
    /// `ECONNRESET`: the peer reset the connection.
    public static var connectionReset: Errno { Errno(rawValue: ECONNRESET) }
    /// `ETIMEDOUT`: the operation timed out.
    public static var timedOut: Errno { Errno(rawValue: ETIMEDOUT) }
    /// `ECONNREFUSED`: nothing listens at the peer's port.
    public static var connectionRefused: Errno { Errno(rawValue: ECONNREFUSED) }
    /// `EHOSTUNREACH`: no route to the host.
    public static var noRouteToHost: Errno { Errno(rawValue: EHOSTUNREACH) }
    /// `EREMOTEIO`: a remote input/output error (for a host name: the name
    /// server failed for good).
    public static var remoteIOError: Errno { Errno(rawValue: EREMOTEIO) }
    /// `ECANCELED`: the operation was cancelled.
    public static var canceled: Errno { Errno(rawValue: ECANCELED) }

    /// Whether `error` is this errno: an `Errno` equal to it, or a
    /// ``SystemError`` carrying it. Lets a `catch` or `case` match on errno
    /// values, as in `catch TimerError.system(Errno.noMemory)`.
    public static func ~= (errno: Errno, error: any Error) -> Bool {
        if let value = error as? Errno { return value == errno }
        if let failure = error as? SystemError { return failure.errno == errno }
        return false
    }

    /// Whether `failure` carries this errno.
    public static func ~= (errno: Errno, failure: SystemError) -> Bool {
        failure.errno == errno
    }
}
