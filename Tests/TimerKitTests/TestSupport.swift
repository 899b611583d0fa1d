import Glibc
import Testing
import TimerKit

// Helpers shared by the TimerKit tests: seeded randomness, environment
// knobs, a lock-protected box, real-time waiting with a bound.

/// A small, fast, seedable generator (SplitMix64), so that a failing run can
/// be repeated exactly from its seed.
struct SeededGenerator: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A value in `0..<bound` (bound > 0).
    mutating func below(_ bound: Int) -> Int {
        Int(next() % UInt64(bound))
    }

    /// A value in `range`.
    mutating func within(_ range: ClosedRange<Int64>) -> Int64 {
        let span = UInt64(range.upperBound - range.lowerBound) &+ 1
        if span == 0 { return Int64(bitPattern: next()) }
        return range.lowerBound + Int64(next() % span)
    }

    /// True with probability `percent` / 100.
    mutating func chance(_ percent: Int) -> Bool {
        below(100) < percent
    }
}

/// Reads a non-negative integer from the environment.
func environmentInteger(_ name: String) -> UInt64? {
    guard let raw = getenv(name) else { return nil }
    return UInt64(String(cString: raw))
}

/// The seed of a randomized test: `TK_SEED` if set, else taken from the clock.
/// Tests name it in every failure message so that the run can be repeated.
func testSeed() -> UInt64 {
    if let seed = environmentInteger("TK_SEED") { return seed }
    var time = timespec()
    clock_gettime(CLOCK_REALTIME, &time)
    return UInt64(time.tv_sec) &* 1_000_000_007 &+ UInt64(time.tv_nsec)
}

extension Duration {
    /// The duration in whole nanoseconds (tests keep durations far below the
    /// range of `Int64`).
    var nanosecondCount: Int64 {
        let (seconds, attoseconds) = components
        return seconds * 1_000_000_000 + attoseconds / 1_000_000_000
    }
}

/// A value behind a mutex, shared between a test, timer actions and threads.
///
/// A pthread mutex rather than Synchronization's Mutex: ThreadSanitizer does
/// not see the latter's synchronization on Linux (its futex-based lock lives
/// in an uninstrumented library), so it would report races that are not there.
final class Locked<Value: Sendable>: @unchecked Sendable {
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>
    private var stored: Value

    init(_ value: Value) {
        stored = value
        mutex = .allocate(capacity: 1)
        mutex.initialize(to: pthread_mutex_t())
        pthread_mutex_init(mutex, nil)
    }

    deinit {
        pthread_mutex_destroy(mutex)
        mutex.deallocate()
    }

    var value: Value {
        withLock { $0 }
    }

    @discardableResult
    func withLock<Result: Sendable>(_ body: (inout Value) -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body(&stored)
    }
}

/// Blocks the calling thread for `duration` of real time.
func sleepThread(_ duration: Duration) {
    let nanoseconds = duration.nanosecondCount
    var request = timespec(tv_sec: Int(nanoseconds / 1_000_000_000),
                           tv_nsec: Int(nanoseconds % 1_000_000_000))
    var remaining = timespec()
    while nanosleep(&request, &remaining) != 0 { request = remaining }
}

/// Polls `condition` every millisecond until it holds or `limit` of real time
/// has passed; returns whether it held. Only for waiting on other threads:
/// a test asserts on the result, never on how long the wait took.
func waitUntil(_ limit: Duration = .seconds(30), _ condition: () -> Bool) -> Bool {
    let start = ContinuousClock.now
    while !condition() {
        if ContinuousClock.now - start > limit { return condition() }
        sleepThread(.milliseconds(1))
    }
    return true
}

/// The async form of ``waitUntil(_:_:)``.
func waitUntilAsync(_ limit: Duration = .seconds(30), _ condition: () -> Bool) async -> Bool {
    let start = ContinuousClock.now
    // Past the limit it still polls 200 times: tests that keep every thread
    // of the pool busy may hold up what the condition waits for as long as
    // this task, and each poll lets that run.
    var pollsPastTheLimit = 0
    while !condition() {
        if ContinuousClock.now - start > limit {
            pollsPastTheLimit += 1
            if pollsPastTheLimit > 200 { return condition() }
        }
        try? await Task.sleep(for: .milliseconds(1))
    }
    return true
}

/// An object whose lifetime a test watches.
final class Watched: @unchecked Sendable {
    private let onDeinit: @Sendable () -> Void
    /// A timer the object owns (written only by the test thread before the
    /// object is shared).
    var timer: AnyLoopTimer?
    /// Whether `deinit` invalidates `timer`.
    var invalidatesTimerOnDeinit = true

    init(onDeinit: @escaping @Sendable () -> Void = {}) {
        self.onDeinit = onDeinit
    }

    deinit {
        onDeinit()
        if invalidatesTimerOnDeinit { timer?.invalidate() }
    }
}

/// Runs `body(index)` on `count` new threads at once and waits for them all.
func runThreads(_ count: Int, _ body: @escaping @Sendable (Int) -> Void) {
    final class Start: @unchecked Sendable {
        let body: @Sendable () -> Void
        init(_ body: @escaping @Sendable () -> Void) { self.body = body }
    }
    var threads: [pthread_t] = []
    for index in 0..<count {
        let start = Unmanaged.passRetained(Start { body(index) })
        var thread = pthread_t()
        let result = pthread_create(&thread, nil, { context in
            Unmanaged<Start>.fromOpaque(context!).takeRetainedValue().body()
            return nil
        }, start.toOpaque())
        precondition(result == 0, "pthread_create failed: \(result)")
        threads.append(thread)
    }
    for thread in threads { pthread_join(thread, nil) }
}

extension TimerLoop {
    /// The loop's monotonic clock as time since its zero: what the tests of
    /// manual loops compare.
    var time: Duration { now(.monotonic).offset }
}

/// The monotonic instant `offset` after the clock's zero (on a manual loop,
/// its time).
func at(_ offset: Duration) -> MonotonicClock.Instant {
    MonotonicClock.Instant(offset: offset)
}
