#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif

/// A value guarded by a pthread mutex: how TimerKit's types protect their state.
///
/// `Synchronization.Mutex` would serve, but on Linux ThreadSanitizer does not
/// see its synchronisation (the lock lives in the uninstrumented standard
/// library) and reports races that are not there. A pthread mutex is one it
/// understands, so `swift test --sanitize=thread` speaks only of real races.
/// The value and the mutex share one allocation.
package struct ThreadLocked<Value>: @unchecked Sendable {
    private final class Storage: ManagedBuffer<Value, pthread_mutex_t> {
        deinit {
            withUnsafeMutablePointerToElements {
                SystemError.expectSuccess(-pthread_mutex_destroy($0), "pthread_mutex_destroy")
            }
        }
    }

    private let storage: Storage
    private let mutex: UnsafeMutablePointer<pthread_mutex_t>

    /// Guards `value`.
    package init(_ value: Value) {
        let buffer = Storage.create(minimumCapacity: 1) { _ in value }
        storage = unsafeDowncast(buffer, to: Storage.self)
        // Tail-allocated in the buffer, so it stays put for the buffer's life.
        mutex = storage.withUnsafeMutablePointerToElements { $0 }
        SystemError.expectSuccess(-pthread_mutex_init(mutex, nil), "pthread_mutex_init")
    }

    /// Runs `body` with the value, holding the lock.
    @inline(__always)
    package func withLock<Result, Failure: Error>(
        _ body: (inout Value) throws(Failure) -> Result
    ) throws(Failure) -> Result {
        SystemError.expectSuccess(-pthread_mutex_lock(mutex), "pthread_mutex_lock")
        defer { SystemError.expectSuccess(-pthread_mutex_unlock(mutex), "pthread_mutex_unlock") }
        return try body(&storage.header)
    }
}
