import TimerKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Why a ``TrustedClock`` call, an SNTP query or a time sample was refused.
///
/// A refused call changes nothing: the clock keeps the samples and the state
/// it had.
public enum TrustedTimeError: Error, Sendable, Hashable, CustomStringConvertible {
    // MARK: Samples

    /// A ``TimeSample`` that cannot be right, for example a reply received
    /// before its request was sent. The text says what is wrong.
    case invalidSample(String)
    /// An HTTP `Date` value that is not an HTTP-date (RFC 7231 §7.1.1.1).
    case invalidHTTPDate(String)

    // MARK: SNTP

    /// The server is neither a host name nor an IP address (for example an
    /// empty string).
    case invalidServerName(String)
    /// The server's host name does not resolve to an address.
    case serverNotFound(String)
    /// The resolver could not look the name up: no name server answered,
    /// or one failed (for now or for good).
    case nameResolutionFailed(String)
    /// A sample count outside 1...64 or a timeout that is not positive.
    case invalidArgument(String)
    /// No reply came in time.
    case timedOut
    /// Nothing listens on the server's port (ICMP port unreachable).
    case connectionRefused
    /// The server sent a kiss-of-death (stratum 0) with this code, such as
    /// `RATE` (slow down), `DENY` or `RSTR` (access denied). Stop asking it.
    case kissOfDeath(code: String)
    /// A reply shorter than an NTP header (48 bytes).
    case shortReply
    /// A reply whose origin timestamp is not the request's: a reply to
    /// someone else, or a forgery.
    case spoofedReply
    /// A reply whose mode is not "server".
    case notAServerReply
    /// A reply whose NTP version is not 3 or 4.
    case unsupportedVersion
    /// The server says its own clock is not synchronised (leap indicator 3).
    case serverUnsynchronized
    /// A stratum above 15.
    case stratumOutOfRange
    /// Impossible timestamps: a transmit time of zero, before the receive
    /// time, a server that held the request longer than the round trip, or
    /// a server time past what `Int64` nanoseconds hold.
    case invalidTimestamps

    // MARK: Saved state

    /// There is no saved state at this path.
    case stateFileNotFound(String)
    /// The file ends before the state it announces.
    case stateFileTruncated
    /// The file has the state's format but cannot be used: a bad checksum,
    /// inconsistent lengths or impossible values. The text says which.
    case stateFileCorrupt(String)
    /// The file is not a TimerKit trusted-time state at all.
    case notAStateFile
    /// The file was written by a newer version of the format than this
    /// library reads.
    case stateFileFromNewerVersion(UInt16)

    // MARK: System

    /// A system call failed (the C function or system call and its errno).
    case system(SystemError)

    /// A sentence saying what went wrong.
    public var description: String {
        switch self {
        case .invalidSample(let why): "invalid time sample: \(why)"
        case .invalidHTTPDate(let text): "not an HTTP-date: \(ErrorText.quoted(text))"
        case .invalidServerName(let server): "not a host name or an IP address: \(ErrorText.quoted(server))"
        case .serverNotFound(let server): "the host name \(ErrorText.quoted(server)) does not resolve"
        case .nameResolutionFailed(let server):
            "the resolver could not look up \(ErrorText.quoted(server))"
        case .invalidArgument(let why): "invalid argument: \(why)"
        case .timedOut: "the time server did not answer in time"
        case .connectionRefused: "nothing listens on the time server's port"
        case .kissOfDeath(let code): "the time server refused to serve (kiss-of-death \(code))"
        case .shortReply: "the time server's reply is shorter than an NTP header"
        case .spoofedReply: "a reply that does not answer our request (wrong origin timestamp)"
        case .notAServerReply: "a reply that is not in server mode"
        case .unsupportedVersion: "a reply with an NTP version other than 3 or 4"
        case .serverUnsynchronized: "the time server's clock is not synchronised"
        case .stratumOutOfRange: "a reply with a stratum above 15"
        case .invalidTimestamps: "a reply with impossible timestamps"
        case .stateFileNotFound(let path): "no saved trusted-time state at \(ErrorText.quoted(path, limit: 1024))"
        case .stateFileTruncated: "the saved trusted-time state is truncated"
        case .stateFileCorrupt(let why): "the saved trusted-time state is corrupt: \(why)"
        case .notAStateFile: "not a TimerKit trusted-time state file"
        case .stateFileFromNewerVersion(let version):
            "the saved trusted-time state has format version \(version), newer than this library reads"
        case .system(let error): error.description
        }
    }

    /// What a failed `tk_sntp_query` for `server` means (its errors are
    /// listed in CTimerSNTP.h). The name was checked before the query, and a
    /// kiss-of-death carries its code, so an `EINVAL` or `EACCES` from the
    /// network (a `connect` refused for an address) stays a system error.
    static func sntp(_ failure: SystemError, server: String, kissCode: String) -> TrustedTimeError {
        switch failure.errno {
        case .permissionDenied where !kissCode.isEmpty: .kissOfDeath(code: kissCode)
        case .noSuchAddressOrDevice: .serverNotFound(server)
        case .resourceTemporarilyUnavailable, .remoteIOError: .nameResolutionFailed(server)
        case .timedOut: .timedOut
        case .connectionRefused: .connectionRefused
        case .messageTooLong: .shortReply
        case .noMessage: .spoofedReply
        case .protocolError: .notAServerReply
        case .protocolNotSupported: .unsupportedVersion
        case .noData: .serverUnsynchronized
        case .outOfRange: .stratumOutOfRange
        case .badMessage, .overflow: .invalidTimestamps
        default: .system(failure)
        }
    }
}
