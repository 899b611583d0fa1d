import CTimerCore

extension TimerLoop {
    /// Adds `mode` to the loop's common modes: what is in
    /// ``LoopMode/common`` fires in it too, timers and frame tickers added
    /// there before this call as well as those added after, as with
    /// `CFRunLoopAddCommonMode`. A timer keeps its fire date; one that came
    /// due while the loop ran `mode` and waits for one of its modes fires
    /// at the loop's next pass in `mode`.
    ///
    /// The corresponding C function is `tk_loop_add_common_modes`.
    ///
    /// - Throws: ``TimerError/tooManyModes(_:)``, ``TimerError/notARunMode(_:)``.
    public func addCommonMode(_ mode: LoopMode) throws(TimerError) {
        try modeTable.withLock { (table) throws(TimerError) in
            let index = try table.index(of: mode)
            // Under the table's lock, so that two adds reach the C loop in
            // the order their modes were named.
            SystemError.expectSuccess(
                tk_loop_add_common_modes(handle, 1 << index), "tk_loop_add_common_modes")
        }
    }

    /// In a mode set of TimerKit's, the bit that stands for
    /// ``LoopMode/common``: the C core's `TK_MODES_INVALID`, which no mode
    /// has, taken off by ``cModes(_:)`` before a set reaches the C core.
    /// (Computed: a stored static would cost a one-time-initialisation check
    /// on the path of every schedule.)
    @inline(__always)
    static var commonModes: tk_mode_set { 0x8000_0000 }

    /// A mode set of TimerKit's as the C core takes it: its modes, and
    /// whether it holds ``LoopMode/common`` (the C flag `TK_TIMER_COMMON`
    /// or `TK_FRAME_COMMON`, under which the C loop keeps the common
    /// modes).
    @inline(__always)
    static func cModes(_ set: tk_mode_set) -> (modes: tk_mode_set, common: Bool) {
        (set & ~commonModes, set & commonModes != 0)
    }

    /// The one-mode C set of a mode the loop can run in (`tk_loop_run`'s and
    /// `tk_loop_advance`'s mode).
    func runModeSet(_ mode: LoopMode) throws(TimerError) -> tk_mode_set {
        if mode.isDefault { return 1 << TK_MODE_DEFAULT }
        return try modeTable.withLock { (table) throws(TimerError) in 1 << (try table.index(of: mode)) }
    }

    /// The C mode set for one mode (``LoopMode/common`` standing for the
    /// common modes). Inlined for ``LoopMode/default``, the mode of most
    /// schedules; other modes are looked up in the table.
    @inline(__always)
    func modeSet(_ mode: LoopMode) throws(TimerError) -> tk_mode_set {
        if mode.isDefault { return 1 << TK_MODE_DEFAULT }
        return try namedModeSet(mode)
    }

    @inline(never)
    private func namedModeSet(_ mode: LoopMode) throws(TimerError) -> tk_mode_set {
        try modeTable.withLock { (table) throws(TimerError) in try table.set(of: mode) }
    }

    /// The C mode set for `modes`.
    ///
    /// - Throws: ``TimerError/noModes`` for an empty list.
    func modeSet(_ modes: [LoopMode]) throws(TimerError) -> tk_mode_set {
        guard !modes.isEmpty else { throw .noModes }
        return try modeTable.withLock { (table) throws(TimerError) in
            // Named on a copy, kept only if every mode gets a bit: a list
            // refused for one of its modes names none of the others.
            var named = table
            var set: tk_mode_set = 0
            for mode in modes { set |= try named.set(of: mode) }
            table = named
            return set
        }
    }
}

/// Named modes and their bits: ``LoopMode/default`` is mode 0 and
/// ``LoopMode/tracking`` mode 1; others get the next free bit when first named.
/// ``LoopMode/common`` is ``TimerLoop/commonModes``: the C loop keeps which
/// modes are common.
struct ModeTable {
    var indexes: [LoopMode: UInt32] = [.default: 0, .tracking: 1]

    mutating func index(of mode: LoopMode) throws(TimerError) -> UInt32 {
        if mode == .common { throw .notARunMode(mode) }
        if let index = indexes[mode] { return index }
        guard indexes.count < Int(TK_MODE_COUNT) else { throw .tooManyModes(mode) }
        let index = UInt32(indexes.count)
        indexes[mode] = index
        return index
    }

    mutating func set(of mode: LoopMode) throws(TimerError) -> tk_mode_set {
        mode == .common ? TimerLoop.commonModes : 1 << (try index(of: mode))
    }
}
