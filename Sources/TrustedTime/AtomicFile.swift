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
/// `fsync`, renamed over the target, and the directory is flushed: a crash
/// leaves the old file or the new one, never a mix. Interrupted system calls
/// are resumed.
package enum AtomicFile {
    /// The file's first `limit + 1` bytes at most (so a caller can tell a
    /// file larger than `limit`).
    ///
    /// - Throws: the failed call (`open`, `read`), with
    ///   `Errno/noSuchFileOrDirectory` from `open` if there is no file.
    package static func read(_ path: String, limit: Int) throws(SystemError) -> [UInt8] {
        let fd = try retrying { () throws(SystemError) in
            try SystemError.posix(open(path, O_RDONLY | O_CLOEXEC), "open")
        }
        defer { _ = close(fd) }  // read-only: closing cannot lose data
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

    /// Replaces the file at `path` with `bytes`, atomically (mode 0600 for a
    /// new file).
    ///
    /// - Throws: the failed call (`open`, `write`, `fsync`, `close`,
    ///   `rename`); the temporary file is removed and `path` is unchanged.
    package static func write(_ bytes: [UInt8], to path: String) throws(SystemError) {
        let temporary = path + ".tmp-\(getpid())-\(temporaryCounter.next())"
        let fd = try retrying { () throws(SystemError) in
            try SystemError.posix(
                open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600), "open")
        }
        do throws(SystemError) {
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
            _ = close(fd)  // the error above is what the caller needs to hear
            _ = unlink(temporary)
            throw error
        }
        do throws(SystemError) {
            _ = try SystemError.posix(close(fd), "close")
            _ = try SystemError.posix(rename(temporary, path), "rename")
        } catch {
            _ = unlink(temporary)
            throw error
        }
        // Make the rename itself durable; the file is in place already, so a
        // directory that cannot be flushed (some file systems refuse) is not
        // a failure of the write.
        let slash = path.lastIndex(of: "/")
        let directory = slash.map { String(path[..<$0]) } ?? "."
        let directoryFD = open(directory.isEmpty ? "/" : directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if directoryFD >= 0 {
            _ = fsync(directoryFD)
            _ = close(directoryFD)
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
