import TimerKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// Small files read whole and replaced atomically: how TimerKit's state files
/// reach the disk.
///
/// A write goes to a temporary file in the same directory, is flushed with
/// `fsync`, renamed over the target, and the directory is flushed where it
/// can be: a crash leaves the old file or the new one, never a mix.
/// Interrupted system calls are resumed.
package enum AtomicFile {
    /// Refuses a path that C would read only up to its first NUL: it would
    /// name another file, and a write would land there.
    private static func checkPath(_ path: String) throws(SystemError) {
        guard !path.utf8.contains(0) else {
            throw SystemError(errno: .invalidArgument, function: "open")
        }
    }

    /// The file's bytes, read in 4 KiB chunks until the end or until more
    /// than `limit` bytes are in (so a caller can tell a file larger than
    /// `limit`: then the result is longer than `limit`, by less than 4 KiB).
    ///
    /// Only a regular file is opened. A FIFO, a socket or a device could
    /// block the read for good (a FIFO with no writer blocks even its
    /// `open`) or never end, and opening some devices does something; a
    /// directory holds no bytes.
    ///
    /// - Throws: the failed call (`stat`, `open`, `fstat`, `fcntl`, `read`),
    ///   with `Errno/noSuchFileOrDirectory` from `stat` if there is no file,
    ///   `Errno/isDirectory` from `read` for a directory, and
    ///   `Errno/invalidArgument` from `open` for a path holding a NUL or
    ///   naming anything else that is not a regular file.
    package static func read(_ path: String, limit: Int) throws(SystemError) -> [UInt8] {
        try checkPath(path)
        var named = stat()
        _ = try SystemError.posix(stat(path, &named), "stat")
        try requireRegularFile(named)
        // Non-blocking, in case the path was replaced by a FIFO since: the
        // open returns at once, and the check below refuses it.
        let fd = try retrying { () throws(SystemError) in
            try SystemError.posix(open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY), "open")
        }
        defer { _ = close(fd) }  // read-only: closing cannot lose data
        var opened = stat()
        _ = try SystemError.posix(fstat(fd, &opened), "fstat")
        try requireRegularFile(opened)
        // A regular file, so reads never block: back to blocking reads, so
        // that a file system that honours the flag on files gives no EAGAIN.
        let flags = try SystemError.posix(fcntl(fd, F_GETFL), "fcntl")
        _ = try SystemError.posix(fcntl(fd, F_SETFL, flags & ~O_NONBLOCK), "fcntl")
        var bytes: [UInt8] = []
        var chunk = [UInt8](repeating: 0, count: 4096)
        while bytes.count <= limit {
            let got = try retrying { () throws(SystemError) in
                let result = chunk.withUnsafeMutableBytes { raw in
                    systemRead(fd, raw.baseAddress, raw.count)
                }
                return try SystemError.posix(result, "read")
            }
            if got == 0 { break }
            bytes += chunk[0..<got]
        }
        return bytes
    }

    /// A new file's name next to `path`, for `write`: the path's own name
    /// with a suffix, or, where that would pass the longest name a
    /// directory holds (255 bytes), a short name of its own, so that any
    /// name a file can have can be written.
    static func temporaryPath(for path: String) -> String {
        let suffix = ".tmp-\(getpid())-\(temporaryCounter.next())"
        let name = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).last
        if (name?.count ?? 0) + suffix.utf8.count <= 255 { return path + suffix }
        let directory = path.utf8.lastIndex(of: UInt8(ascii: "/")).map { String(path[...$0]) } ?? ""
        return directory + ".tk" + suffix
    }

    /// Replaces the file at `path` with `bytes`, atomically: mode 0600 for a
    /// new file (or one that replaces a symbolic link). A file replaced keeps its group and its read, write and
    /// execute bits, the owner's read and write always set; if the group
    /// cannot be kept (a group the process is not in), the group's and
    /// others' bits are dropped rather than granted to another group.
    ///
    /// - Throws: the failed call (`open`, `fstat`, `fchmod`, `write`,
    ///   `fsync`, `close`, `rename`; from `open`, `Errno/invalidArgument`
    ///   for a path holding a NUL or naming something other than a regular
    ///   file, a symbolic link or a directory (a device, a FIFO, a socket),
    ///   `Errno/noSuchFileOrDirectory` for an empty one and
    ///   `Errno/isDirectory` for a directory or a path whose last part is
    ///   empty (it ends in "/"), "." or "..", with no file made); the
    ///   temporary file is removed and `path` is unchanged. Once the rename
    ///   is done the write has succeeded: the directory is then flushed
    ///   where it can be (see ``flushDirectory(of:)``), and a failure there
    ///   is not reported.
    ///
    /// A `path` that is a symbolic link is replaced by the file, as any
    /// rename replaces it: the file it led to is left as it was. (Writing
    /// through the link would let whoever can make a link there, in a
    /// shared directory such as /tmp, pick the file that gets replaced.)
    package static func write(_ bytes: [UInt8], to path: String) throws(SystemError) {
        try checkPath(path)
        // What `open` says of these, before a temporary file is made beside
        // a path that names no file: none for an empty path, and a
        // directory for one whose last part is empty (it ends in "/"), "."
        // or ".." (a rename would fail after it).
        guard !path.isEmpty else {
            throw SystemError(errno: .noSuchFileOrDirectory, function: "open")
        }
        let name = path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false).last ?? []
        guard !name.isEmpty, !name.elementsEqual(".".utf8), !name.elementsEqual("..".utf8) else {
            throw SystemError(errno: .isDirectory, function: "open")
        }
        // Only a regular file or a symbolic link is replaced: a rename over
        // a device, a FIFO or a socket would put a file where the system or
        // another program has one of those (/dev/null, for a process that
        // may write in /dev). Refused as `read` refuses them.
        var existing = stat()
        if lstat(path, &existing) == 0, existing.st_mode & S_IFMT != S_IFLNK {
            try requireRegularFile(existing, directoryRefusedBy: "open")
        }
        let temporary = temporaryPath(for: path)
        let fd = try retrying { () throws(SystemError) in
            try SystemError.posix(
                open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600), "open")
        }
        do throws(SystemError) {
            // The file it replaces keeps its group and its permission bits
            // (not its owner: only a privileged process could give it that).
            // If the group cannot be kept, its bits and others' are not
            // either: they would grant another group. The owner can always
            // read and write it, or the next restore could not read it.
            var created = stat()
            _ = try SystemError.posix(fstat(fd, &created), "fstat")
            var replaced = stat()
            var mode: mode_t = 0o600
            // lstat: a link at the path is replaced, not the file it leads
            // to, whose group and bits are not the new file's to take.
            if lstat(path, &replaced) == 0, replaced.st_mode & S_IFMT == S_IFREG {
                mode = replaced.st_mode & 0o777 | 0o600
                if created.st_gid != replaced.st_gid, fchown(fd, uid_t.max, replaced.st_gid) != 0 {
                    mode &= 0o700
                }
            }
            // Only when needed: some file systems refuse any mode change.
            if created.st_mode & 0o7777 != mode {
                _ = try SystemError.posix(fchmod(fd, mode), "fchmod")
            }
            var written = 0
            while written < bytes.count {
                written += try retrying { () throws(SystemError) in
                    let result = bytes.withUnsafeBytes { raw in
                        systemWrite(fd, raw.baseAddress! + written, raw.count - written)
                    }
                    return try SystemError.posix(result, "write")
                }
            }
            _ = try SystemError.posix(fsync(fd), "fsync")
        } catch {
            // Cleaning up after a failure: the failure is what the caller
            // needs to hear, not a second one on the way out.
            _ = close(fd)
            _ = unlink(temporary)
            throw error
        }
        do throws(SystemError) {
            _ = try SystemError.posix(close(fd), "close")
            _ = try SystemError.posix(rename(temporary, path), "rename")
        } catch {
            _ = unlink(temporary)  // cleaning up, as above
            throw error
        }
        flushDirectory(of: path)
    }

    /// Flushes the directory that holds `path`, so that a rename into it
    /// survives a crash, where that can be done: a directory that the
    /// process may write in but not read (mode 0300, say) cannot be opened
    /// to flush, and some file systems refuse to flush one (EINVAL). A
    /// failure, an I/O error of the flush included, is not reported, as
    /// SQLite's `unixSync` reports neither a failed open nor a failed flush
    /// of the directory: the new file is in place by then, and a crash could
    /// at worst bring back the old one, as a crash just before the rename
    /// would, never a mix.
    static func flushDirectory(of path: String) {
        // Split on the byte: a "/" that a combining mark follows is one
        // Character with it, which a search for "/" would not find.
        let slash = path.utf8.lastIndex(of: UInt8(ascii: "/"))
        let directory = slash.map { String(path[..<$0]) } ?? "."
        guard
            let directoryFD = try? retrying({ () throws(SystemError) in
                try SystemError.posix(
                    open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC), "open")
            })
        else { return }
        _ = try? retrying { () throws(SystemError) in try SystemError.posix(fsync(directoryFD), "fsync") }
        _ = close(directoryFD)  // read-only: closing cannot lose data
    }

    /// Throws unless `status` is a regular file's: `EISDIR` for a directory,
    /// from the call that refuses it (`read` for a read, `open` for a write),
    /// and `EINVAL` from `open` for anything else.
    private static func requireRegularFile(
        _ status: stat, directoryRefusedBy directoryCall: String = "read"
    ) throws(SystemError) {
        switch status.st_mode & S_IFMT {
        case S_IFREG: return
        case S_IFDIR: throw SystemError(errno: .isDirectory, function: directoryCall)
        default: throw SystemError(errno: .invalidArgument, function: "open")
        }
    }

    /// Runs a system call again while it fails with `EINTR`.
    private static func retrying<Result>(_ call: () throws(SystemError) -> Result)
        throws(SystemError) -> Result
    {
        while true {
            do {
                return try call()
            } catch where error.errno == .interrupted {
                continue
            }
        }
    }

    private static let temporaryCounter = Counter()

    private final class Counter: Sendable {
        private let value = ThreadLocked<UInt64>(0)
        func next() -> UInt64 {
            value.withLock { value in
                value += 1
                return value
            }
        }
    }
}

/// `read(2)` (the name is taken by ``AtomicFile/read(_:limit:)``).
private func systemRead(_ fd: Int32, _ buffer: UnsafeMutableRawPointer?, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.read(fd, buffer, count)
    #else
    Musl.read(fd, buffer, count)
    #endif
}

/// `write(2)` (the name is taken by ``AtomicFile/write(_:to:)``).
private func systemWrite(_ fd: Int32, _ buffer: UnsafeRawPointer?, _ count: Int) -> Int {
    #if canImport(Glibc)
    Glibc.write(fd, buffer, count)
    #else
    Musl.write(fd, buffer, count)
    #endif
}
