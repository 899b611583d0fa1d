import TimerKit

/// Proleptic Gregorian calendar arithmetic in UTC, without Foundation: days
/// since the Unix epoch to and from year/month/day (the algorithms of Howard
/// Hinnant's "chrono-compatible low-level date algorithms").
enum CivilTime {
    /// Days from 1970-01-01 to `year`-`month`-`day`.
    static func days(year: Int64, month: Int, day: Int) -> Int64 {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yearOfEra = y - era * 400
        let m = Int64(month)
        let dayOfYear = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + Int64(day) - 1
        let dayOfEra = yearOfEra * 365 + yearOfEra / 4 - yearOfEra / 100 + dayOfYear
        return era * 146_097 + dayOfEra - 719_468
    }

    /// The date `days` after 1970-01-01.
    static func date(days: Int64) -> (year: Int64, month: Int, day: Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = Int(dayOfYear - (153 * mp + 2) / 5 + 1)
        let month = Int(mp < 10 ? mp + 3 : mp - 9)
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        return (year, month, day)
    }

    /// 0 for Sunday ... 6 for Saturday.
    static func weekday(days: Int64) -> Int {
        // 1970-01-01 was a Thursday (4).
        let w = (days + 4) % 7
        return Int(w >= 0 ? w : w + 7)
    }

    static func isLeapYear(_ year: Int64) -> Bool {
        year % 4 == 0 && (year % 100 != 0 || year % 400 == 0)
    }

    static func daysInMonth(year: Int64, month: Int) -> Int {
        switch month {
        case 2: isLeapYear(year) ? 29 : 28
        case 4, 6, 9, 11: 30
        default: 31
        }
    }

    static let weekdayNames = ["Sun", "Mon", "Tue", "Wed", "Thu", "Fri", "Sat"]
    static let longWeekdayNames = [
        "Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday",
    ]
    static let monthNames = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ]

    /// `duration` since the epoch as `2025-11-22T03:46:12.123456789Z`.
    static func iso8601(_ sinceEpoch: Duration) -> String {
        let nanoseconds = sinceEpoch.saturatingNanoseconds
        var seconds = nanoseconds / 1_000_000_000
        var fraction = nanoseconds % 1_000_000_000
        if fraction < 0 {
            fraction += 1_000_000_000
            seconds -= 1
        }
        var days = seconds / 86_400
        var secondOfDay = seconds % 86_400
        if secondOfDay < 0 {
            secondOfDay += 86_400
            days -= 1
        }
        let (year, month, day) = date(days: days)
        func two(_ value: Int64) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let fractionText = String(fraction)
        let padded = String(repeating: "0", count: 9 - fractionText.count) + fractionText
        return "\(year)-\(two(Int64(month)))-\(two(Int64(day)))T\(two(secondOfDay / 3600)):"
            + "\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)).\(padded)Z"
    }
}
