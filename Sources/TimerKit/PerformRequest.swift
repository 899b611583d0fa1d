import CTimerCore

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
/// Unlike `performSelector:afterDelay:`, a request holds its target weakly: a
/// pending request never keeps its target alive, and a request whose target is
/// gone does nothing.
public final class PerformRequest: Sendable, Hashable {
    let timer: LoopTimer
    private let loop: TimerLoop
    private let target: ObjectIdentifier?

    init(timer: LoopTimer, loop: TimerLoop, target: ObjectIdentifier?) {
        self.timer = timer
        self.loop = loop
        self.target = target
    }

    /// Whether the action has yet to run (and was not cancelled).
    public var isPending: Bool { timer.isValid }

    /// Cancels the request if it has not run yet. Idempotent; safe from any thread.
    public func cancel() {
        timer.invalidate()
        forget()
    }

    /// Removes the request from its loop's registry.
    func forget() {
        guard let target else { return }
        loop.performRegistry.withLock { $0.remove(self, target: target) }
    }

    public static func == (lhs: PerformRequest, rhs: PerformRequest) -> Bool { lhs === rhs }

    public func hash(into hasher: inout Hasher) { hasher.combine(ObjectIdentifier(self)) }
}

/// A loop's pending perform requests, by target.
struct PerformRegistry {
    private var byTarget: [ObjectIdentifier: Set<PerformRequest>] = [:]

    mutating func insert(_ request: PerformRequest, target: ObjectIdentifier) {
        byTarget[target, default: []].insert(request)
    }

    mutating func remove(_ request: PerformRequest, target: ObjectIdentifier) {
        byTarget[target]?.remove(request)
        if byTarget[target]?.isEmpty == true { byTarget[target] = nil }
    }

    mutating func removeAll(target: ObjectIdentifier) -> Set<PerformRequest> {
        byTarget.removeValue(forKey: target) ?? []
    }

    /// How many requests are registered for `target`.
    func count(target: ObjectIdentifier) -> Int { byTarget[target]?.count ?? 0 }
}

extension TimerLoop {
    /// Runs `action` with `target` after `delay`, on the loop's thread, while
    /// the loop runs one of `modes`. The target is held weakly: if it is gone
    /// by then, nothing runs.
    ///
    /// - Complexity: O(log n) in the loop's pending timers.
    @discardableResult
    public func perform<Target: AnyObject>(
        after delay: Duration,
        in modes: [LoopMode] = [.default],
        target: Target,
        _ action: @escaping @Sendable (Target) -> Void
    ) throws(TimerError) -> PerformRequest {
        let reference = WeakReference(target)
        let box = RequestBox()
        let timer = try LoopTimer(after: delay) { _, _ in
            box.request?.forget()
            if let target = reference.object { action(target) }
        }
        let key = ObjectIdentifier(target)
        let request = PerformRequest(timer: timer, loop: self, target: key)
        box.request = request
        performRegistry.withLock { $0.insert(request, target: key) }
        do {
            try add(timer, in: modes)
        } catch {
            request.forget()
            throw error
        }
        return request
    }

    /// Runs `action` after `delay` on the loop's thread, while the loop runs
    /// one of `modes`. The loop holds `action` (and what it captures) until it
    /// runs or is cancelled.
    @discardableResult
    public func perform(
        after delay: Duration,
        in modes: [LoopMode] = [.default],
        _ action: @escaping @Sendable () -> Void
    ) throws(TimerError) -> PerformRequest {
        let timer = try LoopTimer(after: delay) { _, _ in action() }
        try add(timer, in: modes)
        return PerformRequest(timer: timer, loop: self, target: nil)
    }

    /// Cancels every pending request made with ``perform(after:in:target:_:)``
    /// for `target`, like `cancelPreviousPerformRequestsWithTarget:`.
    ///
    /// - Returns: how many requests were cancelled.
    @discardableResult
    public func cancelPerformRequests(target: AnyObject) -> Int {
        let requests = performRegistry.withLock { $0.removeAll(target: ObjectIdentifier(target)) }
        for request in requests { request.timer.invalidate() }
        return requests.count
    }

    /// How many requests are pending for `target`.
    public func pendingPerformRequests(target: AnyObject) -> Int {
        performRegistry.withLock { $0.count(target: ObjectIdentifier(target)) }
    }
}

/// Lets a request's action find its request, which is made after the timer.
/// Weak: the registry (or the caller) keeps a pending request alive, and the
/// timer must not, or request and timer would keep each other forever.
private final class RequestBox: @unchecked Sendable {
    // Written once before the timer is scheduled, read by the action after.
    weak var request: PerformRequest?
}
