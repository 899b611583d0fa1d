import Dispatch
import Glibc

/// A value behind a pthread mutex (ThreadSanitizer sees its
/// synchronisation), shared between a test, handlers and threads.
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

    var value: Value { withLock { $0 } }

    @discardableResult
    func withLock<Result: Sendable>(_ body: (inout Value) -> Result) -> Result {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        return body(&stored)
    }
}

/// `|duration|`.
func abs(_ duration: Duration) -> Duration {
    duration < .zero ? .zero - duration : duration
}

/// Whether `call`, run on another thread, returns within 30 s: the check
/// for a call that would wait for itself forever (a lock taken again by a
/// deinit that the call set off).
func returnsOnAnotherThread(_ call: @escaping @Sendable () -> Void) -> Bool {
    let done = DispatchSemaphore(value: 0)
    DispatchQueue.global().async {
        call()
        done.signal()
    }
    return done.wait(timeout: .now() + 30) == .success
}
