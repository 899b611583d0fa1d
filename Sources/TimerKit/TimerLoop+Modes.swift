import CTimerCore

extension TimerLoop {
    /// Adds `mode` to the loop's common modes: timers added to
    /// ``LoopMode/common`` from now on also fire in it. (Timers already added
    /// to ``LoopMode/common`` keep the modes they had.)
    ///
    /// - Throws: ``TimerError/tooManyModes(_:)``, ``TimerError/notARunMode(_:)``.
    public func addCommonMode(_ mode: LoopMode) throws(TimerError) {
        try modeTable.withLock { (table) throws(TimerError) in
            let index = try table.index(of: mode)
            table.common |= 1 << index
        }
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
struct ModeTable {
    var indexes: [LoopMode: UInt32] = [.default: 0, .tracking: 1]
    var common: tk_mode_set = 0b11

    mutating func index(of mode: LoopMode) throws(TimerError) -> UInt32 {
        if mode == .common { throw .notARunMode(mode) }
        if let index = indexes[mode] { return index }
        guard indexes.count < Int(TK_MODE_COUNT) else { throw .tooManyModes(mode) }
        let index = UInt32(indexes.count)
        indexes[mode] = index
        return index
    }

    mutating func set(of mode: LoopMode) throws(TimerError) -> tk_mode_set {
        mode == .common ? common : 1 << (try index(of: mode))
    }
}
