/// A cooldown's key as ``Cooldowns`` tells keys apart: by their UTF-8 bytes,
/// as the state file holds them and as Linux tells file names apart.
///
/// Swift's `String` equality is canonical equivalence, under which "é"
/// (U+00E9) and "e" + U+0301 are one string. As keys they are two: each is
/// saved and restored with its own bytes, and a cooldown is found by the
/// bytes it was started with. An app that wants such keys to be one
/// normalizes them before use.
struct CooldownKey: Hashable {
    let string: String

    init(_ string: String) {
        self.string = string
    }

    static func == (lhs: CooldownKey, rhs: CooldownKey) -> Bool {
        lhs.string.utf8.elementsEqual(rhs.string.utf8)
    }

    func hash(into hasher: inout Hasher) {
        hasher.combine(string.utf8.count)
        for byte in string.utf8 { hasher.combine(byte) }
    }

    /// Byte-wise order, the order of the state file's entries.
    static func precedes(_ lhs: String, _ rhs: String) -> Bool {
        lhs.utf8.lexicographicallyPrecedes(rhs.utf8)
    }
}
