import Glibc
import Synchronization
import Testing
import TimerKit
import TrustedTime

/// Clock readings a test moves by hand. Besides the boot, monotonic and wall
/// clocks it keeps the true time (what a server would say): it advances with
/// the boot clock, and the wall clock is the true time plus whatever the
/// "user" did to it.
final class ScriptedReadings: ClockReadings, Sendable {
    struct Clocks {
        var boot: Duration
        var monotonic: Duration
        var wall: Duration
        var truth: Duration
        var bootID: String?
        var sleeps: [Duration] = []
        var duringSleep: (@Sendable () -> Void)?
        var afterBootRead: (@Sendable () -> Void)?
    }

    let clocks: Mutex<Clocks>

    /// 2026-01-01 00:00:00 UTC.
    static let newYear2026 = Duration.seconds(1_767_225_600)

    init(
        boot: Duration = .seconds(1_000), monotonic: Duration = .seconds(900),
        truth: Duration = ScriptedReadings.newYear2026, wallError: Duration = .zero,
        bootID: String? = "6f1f5b7e-0000-4000-8000-000000000001"
    ) {
        clocks = Mutex(
            Clocks(
                boot: boot, monotonic: monotonic, wall: truth + wallError, truth: truth,
                bootID: bootID))
    }

    var boot: BootClock.Instant {
        let (boot, action) = clocks.withLock { c -> (Duration, (@Sendable () -> Void)?) in
            defer { c.afterBootRead = nil }
            return (c.boot, c.afterBootRead)
        }
        action?()
        return BootClock.Instant(offset: boot)
    }
    var monotonic: MonotonicClock.Instant {
        MonotonicClock.Instant(offset: clocks.withLock { $0.monotonic })
    }
    var wall: Duration { clocks.withLock { $0.wall } }
    var bootID: String? { clocks.withLock { $0.bootID } }
    var truth: Duration { clocks.withLock { $0.truth } }
    var sleeps: [Duration] { clocks.withLock { $0.sleeps } }

    /// Time passes with the machine awake: every clock moves.
    func advance(by duration: Duration) {
        clocks.withLock { c in
            c.boot += duration
            c.monotonic += duration
            c.wall += duration
            c.truth += duration
        }
    }

    /// The machine is suspended: the monotonic clock stops.
    func suspend(for duration: Duration) {
        clocks.withLock { c in
            c.boot += duration
            c.wall += duration
            c.truth += duration
        }
    }

    /// Someone sets the wall clock `duration` forward (negative: back).
    func stepWall(by duration: Duration) {
        clocks.withLock { $0.wall += duration }
    }

    /// The machine is off for `downtime` and boots again: a new boot id, and
    /// the boot and monotonic clocks start near zero.
    func reboot(downtime: Duration, bootID: String) {
        clocks.withLock { c in
            c.truth += downtime
            c.wall += downtime
            c.boot = .seconds(5)
            c.monotonic = .seconds(5)
            c.bootID = bootID
        }
    }

    /// Runs `action` (once) right after the next boot-clock read, before
    /// the reader gets the value: what another thread does between that read
    /// and the reader's next step.
    func afterNextBootRead(_ action: @escaping @Sendable () -> Void) {
        clocks.withLock { $0.afterBootRead = action }
    }

    /// Runs `action` (once) in the middle of the next sleep.
    func onNextSleep(_ action: @escaping @Sendable () -> Void) {
        clocks.withLock { $0.duringSleep = action }
    }

    /// A sleep takes no real time: the clocks jump to the deadline.
    func sleep(until deadline: BootClock.Instant, tolerance: Duration?) async throws {
        let (left, action) = clocks.withLock { c -> (Duration, (@Sendable () -> Void)?) in
            let left = deadline.offset - c.boot
            c.sleeps.append(left)
            defer { c.duringSleep = nil }
            return (left, c.duringSleep)
        }
        if left > .zero { advance(by: left / 2) }
        action?()
        let rest = deadline.offset - clocks.withLock { $0.boot }
        if rest > .zero { advance(by: rest) }
    }

    /// A request to a server whose clock is the true time plus `serverError`:
    /// the request takes `outbound` to arrive, the reply `inbound` to return.
    func exchange(
        outbound: Duration, inbound: Duration, serverError: Duration = .zero,
        resolution: Duration = .zero
    ) -> TimeSample {
        let sent = boot
        advance(by: outbound)
        var server = truth + serverError
        if resolution > .zero {
            // Truncate to a multiple of the resolution, as a Date header is.
            let step = resolution.trustedNanoseconds
            let value = server.trustedNanoseconds
            server = .nanoseconds(value - ((value % step) + step) % step)
        }
        advance(by: inbound)
        return TimeSample(
            serverTime: server, sentAt: sent, receivedAt: boot, serverResolution: resolution)
    }
}

/// The machine's clocks read `shift` away from what they read (a boot clock
/// that is not the machine's), with no sleep of their own: sleeps take the
/// default of `ClockReadings`. Counts the boot-clock reads.
final class ShiftedReadings: ClockReadings, Sendable {
    let shift: Duration
    private let bootReads = Mutex(0)

    init(shift: Duration) { self.shift = shift }

    var boot: BootClock.Instant {
        bootReads.withLock { $0 += 1 }
        return BootClock.now + shift
    }
    var monotonic: MonotonicClock.Instant { MonotonicClock.now + shift }
    var wall: Duration { WallClock.now.offset }
    var bootID: String? { "6f1f5b7e-0000-4000-8000-000000000002" }

    /// How many times ``boot`` was read.
    var reads: Int { bootReads.withLock { $0 } }
}

extension Duration {
    /// The duration in whole nanoseconds.
    var trustedNanoseconds: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

/// A temporary directory, removed with everything in it by `remove()`.
struct TrustedTestDirectory {
    let path: String

    init() {
        var template = Array("/tmp/timerkit-trusted-XXXXXX".utf8CString)
        let made = template.withUnsafeMutableBufferPointer { mkdtemp($0.baseAddress!) }
        precondition(made != nil, "mkdtemp failed")
        path = String(decoding: template.prefix(while: { $0 != 0 }).map { UInt8(bitPattern: $0) }, as: UTF8.self)
    }

    private init(existing path: String) { self.path = path }

    func file(_ name: String) -> String { path + "/" + name }

    /// The names of the files in the directory.
    func entries() -> [String] {
        guard let directory = opendir(path) else { return [] }
        defer { closedir(directory) }
        var names: [String] = []
        while let entry = readdir(directory) {
            let name = withUnsafeBytes(of: entry.pointee.d_name) { raw in
                String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names.sorted()
    }

    func remove() { Self.removeTree(path) }

    /// Removes `path` and, for a directory (not a link to one), all in it.
    private static func removeTree(_ path: String) {
        var info = stat()
        guard lstat(path, &info) == 0 else { return }
        guard info.st_mode & S_IFMT == S_IFDIR else {
            unlink(path)
            return
        }
        for name in TrustedTestDirectory(existing: path).entries() { removeTree(path + "/" + name) }
        rmdir(path)
    }
}

/// Reads a whole file.
func trustedTestRead(_ path: String) -> [UInt8]? {
    let fd = open(path, O_RDONLY)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var bytes: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while true {
        let got = chunk.withUnsafeMutableBytes { Glibc.read(fd, $0.baseAddress, $0.count) }
        if got <= 0 { break }
        bytes += chunk[0..<got]
    }
    return bytes
}

/// Writes a whole file (replacing it).
func trustedTestWrite(_ bytes: [UInt8], to path: String) {
    let fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    precondition(fd >= 0, "cannot write \(path)")
    defer { close(fd) }
    _ = bytes.withUnsafeBytes { Glibc.write(fd, $0.baseAddress, $0.count) }
}

/// Runs `body` on a new detached thread (for servers that serve a test).
func startThread(_ body: @escaping @Sendable () -> Void) throws {
    final class Start: Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    let start = Unmanaged.passRetained(Start(body))
    var thread = pthread_t()
    let result = pthread_create(&thread, nil, { context in
        Unmanaged<Start>.fromOpaque(context!).takeRetainedValue().body()
        return nil
    }, start.toOpaque())
    guard result == 0 else {
        start.release()
        throw SystemError(errno: Errno(rawValue: result), function: "pthread_create")
    }
    pthread_detach(thread)
}

/// The value of `task`, or `nil` if it has not ended within 60 s (a generous
/// limit, for a loaded machine); the task is cancelled then.
func valueWithin60Seconds<Value: Sendable>(
    of task: Task<Value, any Error>
) async -> Result<Value, any Error>? {
    await withTaskGroup(of: Result<Value, any Error>?.self) { group in
        group.addTask { await task.result }
        group.addTask {
            try? await Task.sleep(for: .seconds(60))
            return nil
        }
        let first = await group.next() ?? nil
        task.cancel()
        group.cancelAll()
        return first
    }
}

/// Waits (on the standard library's clock, up to 60 s: a loaded machine may
/// keep a task from running for seconds) until `condition` holds; throws if
/// it never does.
///
/// Past the 60 s it still polls 200 times before it gives up: tests that
/// keep every thread of the pool busy (slow ones under ThreadSanitizer)
/// may hold up the task the condition waits for as long as this one, and
/// each poll lets that task run.
func waitFor(_ condition: () -> Bool) async throws {
    let start = ContinuousClock.now
    var pollsPastTheLimit = 0
    while !condition() {
        if ContinuousClock.now - start >= .seconds(60) {
            pollsPastTheLimit += 1
            guard pollsPastTheLimit <= 200 else {
                Issue.record("a condition did not hold within 60 s and 200 polls after")
                throw CancellationError()
            }
        }
        try await Task.sleep(for: .milliseconds(1))
    }
}

/// Runs `body` with the calling thread's file-system user and group
/// (`setfsuid`, `setfsgid`, which only this thread has) set to `uid` and
/// `gid` when the process is root, whose file checks would otherwise pass
/// anything, and puts them back after; the rest of the process keeps its
/// own. A process that is not root runs `body` as it is (`uid` and `gid`
/// should then be its own). The body must not suspend: it has to end on
/// the thread it began on.
func withFileSystemIDs<Result>(uid: uid_t, gid: gid_t, _ body: () throws -> Result) throws -> Result {
    guard geteuid() == 0 else { return try body() }
    // Not in Glibc's module map: looked up, with their C signatures.
    typealias SetID = @convention(c) (UInt32) -> Int32
    guard let setfsuid = dlsym(nil, "setfsuid"), let setfsgid = dlsym(nil, "setfsgid") else {
        throw SystemError(errno: .noFunction, function: "dlsym")
    }
    let setUser = unsafeBitCast(setfsuid, to: SetID.self)
    let setGroup = unsafeBitCast(setfsgid, to: SetID.self)
    // Each returns the one in force before: put back after.
    let group = setGroup(gid)
    let user = setUser(uid)
    defer {
        _ = setUser(UInt32(bitPattern: user))
        _ = setGroup(UInt32(bitPattern: group))
    }
    // A refusal would leave root's, and a body that passes as root would
    // prove nothing.
    guard setGroup(gid) == gid, setUser(uid) == uid else {
        throw SystemError(errno: .notPermitted, function: "setfsuid")
    }
    return try body()
}
