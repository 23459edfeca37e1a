/// RFC 3339 date-times (`2026-01-01T00:00:00Z`, `2026-01-01T02:00:00.5+02:00`), turned into UTC.
package enum RFC3339 {
    /// `text` as a UTC date-time with milliseconds (`YYYY-MM-DDTHH:MM:SS.sssZ`), or nil when it is not an RFC 3339
    /// `date-time` (full date, `T`, time with seconds, optional fraction, `Z` or a `±HH:MM` offset) or its UTC
    /// time falls outside the years 0001–9999. Digits past milliseconds are dropped.
    package static func utcText(_ text: String) -> String? {
        let b = Array(text.utf8)
        guard b.count >= 20 else { return nil }
        func number(_ start: Int, _ count: Int) -> Int? {
            guard start + count <= b.count else { return nil }
            var value = 0
            for byte in b[start..<(start + count)] {
                guard byte >= 0x30, byte <= 0x39 else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard let year = number(0, 4), b[4] == UInt8(ascii: "-"), let month = number(5, 2), b[7] == UInt8(ascii: "-"),
              let day = number(8, 2), b[10] == UInt8(ascii: "T") || b[10] == UInt8(ascii: "t"),
              let hour = number(11, 2), b[13] == UInt8(ascii: ":"), let minute = number(14, 2), b[16] == UInt8(ascii: ":"),
              let second = number(17, 2) else { return nil }
        guard (1...12).contains(month), day >= 1, day <= daysIn(month: month, year: year),
              hour <= 23, minute <= 59, second <= 59 else { return nil }
        var index = 19
        var millis = 0
        if b[index] == UInt8(ascii: ".") {
            index += 1
            var digits = 0
            while index < b.count, b[index] >= 0x30, b[index] <= 0x39 {
                if digits < 3 { millis = millis * 10 + Int(b[index] - 0x30) }
                digits += 1
                index += 1
            }
            guard digits > 0 else { return nil }
            for _ in digits..<max(digits, 3) { millis *= 10 }
        }
        guard index < b.count else { return nil }
        var offsetMinutes = 0
        switch b[index] {
        case UInt8(ascii: "Z"), UInt8(ascii: "z"):
            guard index + 1 == b.count else { return nil }
        case UInt8(ascii: "+"), UInt8(ascii: "-"):
            guard index + 6 == b.count, let oh = number(index + 1, 2), b[index + 3] == UInt8(ascii: ":"),
                  let om = number(index + 4, 2), oh <= 23, om <= 59 else { return nil }
            offsetMinutes = (oh * 60 + om) * (b[index] == UInt8(ascii: "-") ? -1 : 1)
        default:
            return nil
        }
        // Seconds since 1970-01-01 of the local time, minus the offset: UTC.
        let days = daysFromCivil(year: year, month: month, day: day)
        let total = days * 86_400 + hour * 3600 + minute * 60 + second - offsetMinutes * 60
        let utcDays = total >= 0 ? total / 86_400 : (total - 86_399) / 86_400
        let rest = total - utcDays * 86_400
        let (y, m, d) = civilFromDays(utcDays)
        guard (1...9999).contains(y) else { return nil }
        func pad(_ value: Int, _ width: Int) -> String {
            let digits = String(value)
            return String(repeating: "0", count: max(0, width - digits.count)) + digits
        }
        return "\(pad(y, 4))-\(pad(m, 2))-\(pad(d, 2))T\(pad(rest / 3600, 2)):\(pad(rest / 60 % 60, 2)):\(pad(rest % 60, 2))"
            + ".\(pad(millis, 3))Z"
    }

    private static func isLeap(_ year: Int) -> Bool { year % 4 == 0 && (year % 100 != 0 || year % 400 == 0) }

    private static func daysIn(month: Int, year: Int) -> Int {
        switch month {
        case 2: return isLeap(year) ? 29 : 28
        case 4, 6, 9, 11: return 30
        default: return 31
        }
    }

    /// Days since 1970-01-01 of a proleptic Gregorian date (H. Hinnant's `days_from_civil`).
    private static func daysFromCivil(year: Int, month: Int, day: Int) -> Int {
        let y = month <= 2 ? year - 1 : year
        let era = (y >= 0 ? y : y - 399) / 400
        let yoe = y - era * 400
        let doy = (153 * (month + (month > 2 ? -3 : 9)) + 2) / 5 + day - 1
        let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy
        return era * 146_097 + doe - 719_468
    }

    /// The date of a day count since 1970-01-01 (`civil_from_days`).
    private static func civilFromDays(_ days: Int) -> (Int, Int, Int) {
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let doe = z - era * 146_097
        let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365
        let doy = doe - (365 * yoe + yoe / 4 - yoe / 100)
        let mp = (5 * doy + 2) / 153
        let day = doy - (153 * mp + 2) / 5 + 1
        let month = mp + (mp < 10 ? 3 : -9)
        return (yoe + era * 400 + (month <= 2 ? 1 : 0), month, day)
    }
}
