/// A run-loop mode: a name that decides which timers may fire.
///
/// A loop runs in one mode at a time, and a timer fires only while the loop
/// runs one of the modes it was added to. The classic case: a carousel timer
/// added to ``common`` keeps ticking while the loop runs in ``tracking``
/// (say, while a list scrolls); a timer in ``default`` only waits, and fires
/// once when the loop is back in ``default``.
///
/// A loop tells apart at most 31 modes (``TimerError/tooManyModes(_:)``),
/// ``default`` and ``tracking`` among them: each other name takes one the
/// first time the loop meets it, in a run, a timer's modes or a common mode,
/// and keeps it for the loop's life. Adding a timer or frame ticker that the
/// loop refuses for itself (invalidated, on another loop, needing a manual
/// loop) names no mode, a list of modes refused for one of them
/// (``TimerError/tooManyModes(_:)``) names none of the others, and an
/// advance refused for a negative span names none. A call refused for what
/// the loop finds only after naming has named its modes: a frame ticker
/// refused for its frame rate when it is made, a run or advance refused as
/// ``TimerError/busy``, a one-shot that fires for good while a mode is
/// added to it, or a frame ticker stopped by an error.
///
/// ```swift
/// let loop = try TimerLoop()
/// let carousel = try loop.schedule(after: .seconds(3), repeating: .seconds(3),
///                                  in: .common) { _, _ in showNextPage(skipping: 0) }
/// try loop.run(mode: .tracking, for: .seconds(10))   // the carousel still ticks
/// carousel.invalidate()
/// ```
public struct LoopMode: Hashable, Sendable, ExpressibleByStringLiteral, CustomStringConvertible {
    /// The mode's name. Two modes with the same name are the same mode.
    public let name: String

    /// Whether this is ``default``: known without comparing names, on the
    /// path of every schedule.
    let isDefault: Bool

    /// A mode with the given name.
    public init(_ name: String) {
        self.init(name: name, isDefault: name == "default")
    }

    /// A mode whose name is known to be ``default`` or not.
    private init(name: String, isDefault: Bool) {
        self.name = name
        self.isDefault = isDefault
    }

    /// A mode named by a string literal: `let mode: LoopMode = "modal"`.
    public init(stringLiteral name: String) {
        self.init(name)
    }

    /// Whether both are the same mode: whether they have the same name.
    public static func == (lhs: LoopMode, rhs: LoopMode) -> Bool {
        lhs.name == rhs.name
    }

    /// Hashes the name.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(name)
    }

    // The built-in modes are made where they are used, from literals, rather
    // than stored: `in mode: LoopMode = .default` is evaluated at every
    // schedule, and a stored value would cost a one-time-initialisation check
    // and a copy of its string there.

    /// The mode a loop runs in unless told otherwise.
    public static var `default`: LoopMode { LoopMode(name: "default", isDefault: true) }

    /// The mode for interactive tracking (a scroll, a drag).
    public static var tracking: LoopMode { LoopMode(name: "tracking", isDefault: false) }

    /// Not a mode but the loop's set of common modes (``default`` and
    /// ``tracking`` unless more are added with ``TimerLoop/addCommonMode(_:)``).
    /// Add timers to it; a loop cannot run in it.
    public static var common: LoopMode { LoopMode(name: "common", isDefault: false) }

    /// The mode's name.
    public var description: String { name }
}
