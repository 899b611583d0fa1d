import TimerKit

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value behind a pthread mutex (which ThreadSanitizer understands),
/// shared between the test and the loop's callbacks.
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
    func withLock<Result>(_ body: (inout Value) -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body(&stored)
    }
}

extension TimerLoop {
    /// A manual loop's monotonic time since its start.
    var time: Duration { now(.monotonic).offset }
}
