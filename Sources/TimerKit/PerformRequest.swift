import CTimerCore
import Synchronization

/// A pending "perform after delay": a one-shot action on a loop, cancellable
/// by this token or, for all requests of a target at once, by
/// ``TimerLoop/cancelPerformRequests(target:)``.
///
/// ```swift
/// let request = try loop.perform(after: .seconds(2), target: self) { view in view.hideHint() }
/// // ... the user acted first:
/// request.cancel()
/// ```
///
/// The target is `self` here, a `Sendable` object with a `hideHint()` method.
///
/// Unlike `performSelector:afterDelay:`, a request holds its target weakly: a
/// pending request never keeps its target alive, and a request whose target is
/// gone does nothing.
///
/// A request ends one way: its action starts, or a cancel (by the token or
/// by target) comes first. The two are decided at once, so a cancel that
/// finds the action started (on the loop's thread, which may still be
/// running it) cancels nothing, and is not counted.
public final class PerformRequest: Sendable, Hashable {
    let timer: LoopTimer<MonotonicClock>
    let outcome: PerformOutcome
    private let loop: TimerLoop
    /// The target's address, under which the loop's registry keeps the
    /// request (nil for a request with no target).
    private let targetKey: ObjectIdentifier?

    init(timer: LoopTimer<MonotonicClock>, outcome: PerformOutcome, loop: TimerLoop, targetKey: ObjectIdentifier?) {
        self.timer = timer
        self.outcome = outcome
        self.loop = loop
        self.targetKey = targetKey
    }

    /// Whether the action has yet to run (and was not cancelled): false from
    /// the moment it starts, in the action too.
    public var isPending: Bool { outcome.isPending }

    /// Cancels the request if its action has not started. Idempotent; safe
    /// from any thread. An action that started first (on the loop's thread)
    /// is not stopped: it may still be running when this returns.
    public func cancel() {
        _ = end()
    }

    /// Cancels the request if its action has not started, lets go of its
    /// timer, and returns whether this cancelled it.
    func end() -> Bool {
        let cancelled = outcome.cancel()
        timer.invalidate()
        forget()
        return cancelled
    }

    /// Removes the request from its loop's registry.
    func forget() {
        guard let targetKey else { return }
        loop.performRegistry.withLock { $0.remove(self, target: targetKey) }
    }

    public static func == (lhs: PerformRequest, rhs: PerformRequest) -> Bool { lhs === rhs }

    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// How a request ended, decided once: by its action starting on the loop's
/// thread, or by a cancel coming first. Shared by the request and its
/// timer's action, which is made before the request is.
final class PerformOutcome: Sendable {
    private let state = Atomic<UInt8>(PerformOutcome.pending)

    private static let pending: UInt8 = 0
    private static let started: UInt8 = 1
    private static let cancelled: UInt8 = 2

    /// Whether neither has happened yet.
    var isPending: Bool { state.load(ordering: .acquiring) == Self.pending }

    /// Marks the action started, unless a cancel came first: whether it may run.
    func start() -> Bool {
        state.compareExchange(
            expected: Self.pending, desired: Self.started, ordering: .acquiringAndReleasing
        ).exchanged
    }

    /// Marks the request cancelled, unless its action started first: whether
    /// this cancelled it.
    func cancel() -> Bool {
        state.compareExchange(
            expected: Self.pending, desired: Self.cancelled, ordering: .acquiringAndReleasing
        ).exchanged
    }
}

/// A loop's pending perform requests, by their target's address.
///
/// Each address's entry holds its object unowned, which keeps the object's
/// memory (not the object: it is not kept alive, and its `deinit` runs as
/// ever) until the last request registered there leaves. So no other object
/// takes the address while requests are registered under it, and every
/// request at an address is for the object there: also in its `deinit`,
/// where weak references to it read nil already.
struct PerformRegistry {
    private struct Entry {
        unowned let target: AnyObject
        var requests: Set<PerformRequest>
    }

    private var byTarget: [ObjectIdentifier: Entry] = [:]

    mutating func insert(_ request: PerformRequest, target: AnyObject) {
        let key = ObjectIdentifier(target)
        if byTarget[key] == nil {
            byTarget[key] = Entry(target: target, requests: [request])
        } else {
            byTarget[key]!.requests.insert(request)
        }
    }

    mutating func remove(_ request: PerformRequest, target: ObjectIdentifier) {
        byTarget[target]?.requests.remove(request)
        if byTarget[target]?.requests.isEmpty == true { byTarget[target] = nil }
    }

    /// Removes every request for `target`.
    mutating func removeAll(for target: AnyObject) -> Set<PerformRequest> {
        byTarget.removeValue(forKey: ObjectIdentifier(target))?.requests ?? []
    }

    /// Whether no request is registered.
    var isEmpty: Bool { byTarget.isEmpty }

    /// How many requests are registered and pending for `target` (one whose
    /// action has started leaves the registry just after).
    func count(for target: AnyObject) -> Int {
        byTarget[ObjectIdentifier(target)]?.requests.count { $0.isPending } ?? 0
    }
}

extension TimerLoop {
    /// Runs `action` with `target` after `delay`, on the loop's thread, while
    /// the loop runs in `mode` (or one of the common modes, for
    /// ``LoopMode/common``). The target is held weakly: if it is gone by then,
    /// nothing runs. (Until the request ends, the loop keeps a gone target's
    /// memory, not the object, whose `deinit` has run: no other object takes
    /// its address, so no request of its is ever counted or cancelled for
    /// another. A request on a loop that nobody runs again ends only when
    /// cancelled, as any timer there stays.) It must be `Sendable`, since
    /// `action` uses it on the
    /// loop's thread. A ``cancelPerformRequests(target:)`` on another thread
    /// that comes while this call runs may cancel the request it returns.
    ///
    /// - Throws: a mode error, or ``TimerError/system(_:)`` if the core cannot
    ///   take the timer.
    /// - Complexity: O(log n) in the loop's pending timers.
    @discardableResult
    public func perform<Target: AnyObject & Sendable>(
        after delay: Duration,
        in mode: LoopMode = .default,
        target: Target,
        _ action: @escaping @Sendable (Target) -> Void
    ) throws(TimerError) -> PerformRequest {
        let reference = WeakReference(target)
        let box = RequestBox()
        let outcome = PerformOutcome()
        let timer = try LoopTimer(after: delay) { timer, _ in
            // A cancel that came first wins; once started, the request is
            // no longer pending (isPending), in the action too, and no
            // cancel counts it.
            guard outcome.start() else { return }
            timer.invalidate()
            box.request?.forget()
            if let target = reference.object { action(target) }
        }
        let request = PerformRequest(timer: timer, outcome: outcome, loop: self, targetKey: ObjectIdentifier(target))
        box.request = request
        performRegistry.withLock { $0.insert(request, target: target) }
        do {
            try add(timer, forMode: mode)
        } catch .invalidated {
            // A cancelPerformRequests(target:) from another thread took the
            // request between its registration and this add, and counted
            // it: it is returned cancelled, as if the cancel came after.
        } catch {
            // Unless a cancelPerformRequests(target:) took and counted it
            // first (then, as above), the request is given up.
            guard request.outcome.cancel() else { return request }
            request.forget()
            throw error
        }
        return request
    }

    /// Runs `action` after `delay` on the loop's thread, while the loop runs
    /// in `mode`. The loop holds `action` (and what it captures) until it
    /// runs or is cancelled; then the request lets go of it too, so a
    /// request kept by an object its action captures does not keep that
    /// object alive.
    ///
    /// - Throws: a mode error, or ``TimerError/system(_:)``.
    @discardableResult
    public func perform(
        after delay: Duration,
        in mode: LoopMode = .default,
        _ action: @escaping @Sendable () -> Void
    ) throws(TimerError) -> PerformRequest {
        let outcome = PerformOutcome()
        let timer = try LoopTimer(after: delay) { timer, _ in
            guard outcome.start() else { return }
            timer.invalidate()
            action()
        }
        try add(timer, forMode: mode)
        return PerformRequest(timer: timer, outcome: outcome, loop: self, targetKey: nil)
    }

    /// Cancels every pending request made with ``perform(after:in:target:_:)``
    /// for `target`, like `cancelPreviousPerformRequestsWithTarget:`, also
    /// from the target's `deinit`. A request whose action has started on
    /// the loop's thread is not pending: it is neither stopped nor counted.
    ///
    /// - Returns: how many requests were cancelled: none of them runs.
    @discardableResult
    public func cancelPerformRequests(target: AnyObject) -> Int {
        let requests = performRegistry.withLock { $0.removeAll(for: target) }
        return requests.count { $0.end() }
    }

    /// How many requests are pending for `target`.
    public func pendingPerformRequests(target: AnyObject) -> Int {
        performRegistry.withLock { $0.count(for: target) }
    }
}

/// Lets a request's action find its request, which is made after the timer.
/// Weak: the registry (or the caller) keeps a pending request alive, and the
/// timer must not, or request and timer would keep each other forever.
private final class RequestBox: @unchecked Sendable {
    // Written once before the timer is scheduled, read by the action after.
    weak var request: PerformRequest?
}
