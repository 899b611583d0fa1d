import TimerKit

extension TimeSample {
    /// A sample from an HTTP `Date` header (RFC 7231 §7.1.1.2): the server's
    /// time to the second, so ``serverResolution`` is one second.
    ///
    /// Accepts the three HTTP-date formats a recipient must accept (RFC 7231
    /// §7.1.1.1): the preferred IMF-fixdate `Sun, 06 Nov 1994 08:49:37 GMT`,
    /// and the obsolete RFC 850 `Sunday, 06-Nov-33 08:49:37 GMT` (2033) and
    /// asctime `Sun Nov  6 08:49:37 1994`. The day name must match the date. A
    /// two-digit RFC 850 year is read as the year with those digits from
    /// 2025 to 2124, as SNTP's timestamps are read from 2025 (see
    /// ``SNTPClient``): RFC 7231 reads it against the current year, which a
    /// trusted clock must not take from the wall clock, which a user can
    /// set. A leap second (`:60`) is read as the next second.
    ///
    /// - Throws: ``TrustedTimeError/invalidHTTPDate(_:)``.
    public init(httpDate: String, sentAt: BootClock.Instant, receivedAt: BootClock.Instant)
        throws(TrustedTimeError)
    {
        guard let seconds = HTTPDate.parse(httpDate) else {
            throw .invalidHTTPDate(httpDate)
        }
        self.init(
            serverTime: .seconds(seconds), sentAt: sentAt, receivedAt: receivedAt,
            serverResolution: .seconds(1))
    }
}

/// An HTTP-date parser (RFC 7231 §7.1.1.1), without Foundation.
enum HTTPDate {
    /// Seconds since the Unix epoch, or `nil` if `text` is not an HTTP-date.
    static func parse(_ text: String) -> Int64? {
        var scanner = Scanner(Array(text.utf8))
        // Leading and trailing optional whitespace is allowed around a header
        // field value.
        scanner.skipSpaces()
        let result: Int64?
        if scanner.peek(",", at: 3) {
            result = imfFixdate(&scanner)
        } else if scanner.peek(" ", at: 3) {
            result = asctime(&scanner)
        } else {
            result = rfc850(&scanner)
        }
        guard let result else { return nil }
        scanner.skipSpaces()
        return scanner.atEnd ? result : nil
    }

    /// `Sun, 06 Nov 1994 08:49:37 GMT`
    private static func imfFixdate(_ s: inout Scanner) -> Int64? {
        guard let weekday = s.name(CivilTime.weekdayNames), s.literal(", "),
            let day = s.digits(2), s.literal(" "),
            let month = s.name(CivilTime.monthNames), s.literal(" "),
            let year = s.digits(4), s.literal(" "),
            let time = timeOfDay(&s), s.literal(" GMT")
        else { return nil }
        return combine(year: Int64(year), month: month + 1, day: day, time: time, weekday: weekday)
    }

    /// `Sunday, 06-Nov-33 08:49:37 GMT` (2033: see `TimeSample.init(httpDate:sentAt:receivedAt:)`)
    private static func rfc850(_ s: inout Scanner) -> Int64? {
        guard let weekday = s.name(CivilTime.longWeekdayNames), s.literal(", "),
            let day = s.digits(2), s.literal("-"),
            let month = s.name(CivilTime.monthNames), s.literal("-"),
            let twoDigits = s.digits(2), s.literal(" "),
            let time = timeOfDay(&s), s.literal(" GMT")
        else { return nil }
        // The year with these digits from 2025 to 2124, never one read
        // against the wall clock.
        let year = Int64(twoDigits) < 25 ? 2100 + Int64(twoDigits) : 2000 + Int64(twoDigits)
        return combine(year: year, month: month + 1, day: day, time: time, weekday: weekday)
    }

    /// `Sun Nov  6 08:49:37 1994` (the day padded with a space, or two digits)
    private static func asctime(_ s: inout Scanner) -> Int64? {
        guard let weekday = s.name(CivilTime.weekdayNames), s.literal(" "),
            let month = s.name(CivilTime.monthNames), s.literal(" ")
        else { return nil }
        let day: Int
        if s.literal(" ") {
            guard let single = s.digits(1) else { return nil }
            day = single
        } else {
            guard let double = s.digits(2) else { return nil }
            day = double
        }
        guard s.literal(" "), let time = timeOfDay(&s), s.literal(" "), let year = s.digits(4)
        else { return nil }
        return combine(year: Int64(year), month: month + 1, day: day, time: time, weekday: weekday)
    }

    /// `HH:MM:SS` as seconds into the day (a leap second 60 allowed).
    private static func timeOfDay(_ s: inout Scanner) -> Int64? {
        guard let hour = s.digits(2), s.literal(":"), let minute = s.digits(2), s.literal(":"),
            let second = s.digits(2), hour < 24, minute < 60, second <= 60
        else { return nil }
        return Int64(hour * 3600 + minute * 60 + second)
    }

    private static func combine(year: Int64, month: Int, day: Int, time: Int64, weekday: Int)
        -> Int64?
    {
        guard day >= 1, day <= CivilTime.daysInMonth(year: year, month: month) else { return nil }
        let days = CivilTime.days(year: year, month: month, day: day)
        guard CivilTime.weekday(days: days) == weekday else { return nil }
        return days * 86_400 + time
    }

    /// Reads ASCII bytes front to back.
    struct Scanner {
        let bytes: [UInt8]
        var position = 0

        init(_ bytes: [UInt8]) { self.bytes = bytes }

        var atEnd: Bool { position == bytes.count }

        func peek(_ character: Character, at offset: Int) -> Bool {
            let index = position + offset
            return index < bytes.count && bytes[index] == character.asciiValue
        }

        mutating func skipSpaces() {
            while position < bytes.count, bytes[position] == 0x20 || bytes[position] == 0x09 {
                position += 1
            }
        }

        /// Consumes `text` exactly (case-sensitive, as RFC 7231 requires).
        mutating func literal(_ text: String) -> Bool {
            let expected = Array(text.utf8)
            guard position + expected.count <= bytes.count,
                Array(bytes[position..<position + expected.count]) == expected
            else { return false }
            position += expected.count
            return true
        }

        /// Consumes one of `names`; returns its index.
        mutating func name(_ names: [String]) -> Int? {
            for (index, name) in names.enumerated() {
                // Longer names first would matter only for prefixes; none of
                // these is a prefix of another followed by a letter.
                let saved = position
                if literal(name) {
                    if position < bytes.count, isLetter(bytes[position]) {
                        position = saved
                        continue
                    }
                    return index
                }
            }
            return nil
        }

        /// Consumes exactly `count` ASCII digits.
        mutating func digits(_ count: Int) -> Int? {
            guard position + count <= bytes.count else { return nil }
            var value = 0
            for index in position..<position + count {
                let byte = bytes[index]
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            position += count
            return value
        }

        private func isLetter(_ byte: UInt8) -> Bool {
            (byte >= 0x41 && byte <= 0x5A) || (byte >= 0x61 && byte <= 0x7A)
        }
    }
}
