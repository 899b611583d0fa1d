// What the commands that take `--state FILE` say about a state file that
// could not be restored or saved: what is at the path, if anything.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Whether something (a file, a link, anything) is at `path`: a state file
/// that could not be restored is "left as it is" only then (a path through a
/// regular file, failing with ENOTDIR, names nothing).
func somethingIsAt(_ path: String) -> Bool {
    var status = stat()
    return lstat(path, &status) == 0
}

/// What went wrong restoring or saving the state file at `path`, for a
/// person: for something there that is not a regular file, what it is,
/// rather than the EINVAL that the library refuses it with; else `error`'s
/// description. As is: a screen or a terminal needs it made printable.
func stateFileFailureText(_ path: String, _ error: any Error) -> String {
    // stat, not lstat: a restore follows a link, as this does (and a save
    // reads the file first).
    var status = stat()
    guard stat(path, &status) == 0 else { return "\(error)" }
    let kind: String? =
        switch status.st_mode & S_IFMT {
        case S_IFIFO: "a FIFO"
        case S_IFSOCK: "a socket"
        case S_IFCHR: "a character device"
        case S_IFBLK: "a block device"
        case S_IFDIR: "a directory"
        default: nil
        }
    guard let kind else { return "\(error)" }
    return "not a regular file: it is \(kind)"
}
