import FoundationEssentials
import Glibc
import PosternIO
import PosternHTTP

/// One JSON line per request on stdout; never tokens, passwords or bodies.
///
/// Lines are written straight into bytes (no JSON tree per line). On an event loop, stdout lines go into
/// that loop's own buffer, written with one `write(2)` once the loop's turn ends: no lock shared by the
/// loops, and a line is never split across writes, so lines of different loops never interleave mid-line.
final class AccessLog: @unchecked Sendable {
    /// Log levels, lowest first (`notice`: an operator's action worth keeping, such as a session revocation,
    /// logged without the request lines at `POSTERN_LOG_LEVEL=notice`).
    enum Level: Int, Sendable {
        case debug, info, notice, warning, error

        /// Parses `debug`, `info`, `notice`, `warning`, `error`.
        init(_ text: String) {
            switch text {
            case "debug": self = .debug
            case "notice": self = .notice
            case "warning": self = .warning
            case "error": self = .error
            default: self = .info
            }
        }
    }

    private let level: Level
    /// A custom sink (tests), called one line at a time under `sinkLock`; nil writes to stdout.
    private let sink: (@Sendable (String) -> Void)?
    private let sinkLock = PlainLock()
    /// The key of each loop's line buffer.
    private let batchKey = EventLoop.LocalKey()

    /// Logs at `level` and above to `sink`, or to stdout (batched per event loop) when `sink` is nil.
    init(level: Level, sink: (@Sendable (String) -> Void)? = nil) {
        self.level = level
        self.sink = sink
    }

    /// Writes a line to stdout (one `write(2)`, unbatched).
    static let stdout: @Sendable (String) -> Void = { line in
        var bytes = Array(line.utf8)
        bytes.append(10)
        LogLine.writeAll(bytes)
    }

    /// Whether finished requests are logged (`access` writes a line): the level is `info` or below.
    var logsAccess: Bool { level.rawValue <= Level.info.rawValue }

    /// Whether a line at `lineLevel` is written.
    func logs(_ lineLevel: Level) -> Bool { lineLevel.rawValue >= level.rawValue }

    /// A free-form line (start-up, shutdown).
    func event(_ level: Level, _ message: String, _ fields: [(String, JSONValue)] = []) {
        guard level.rawValue >= self.level.rawValue else { return }
        let name = ["debug", "info", "notice", "warning", "error"][level.rawValue]
        emit { line in
            line.begin(level: name)
            line.field("msg", message)
            for (key, value) in fields { line.field(key, json: value) }
            line.end()
        }
    }

    /// Builds one line with `build` and sends it: to the custom sink, to this loop's batch, or straight to stdout.
    func emit(_ build: (inout LogLine) -> Void) {
        if let sink {
            var line = LogLine(bytes: [])
            build(&line)
            line.bytes.removeLast()  // the sink takes the line without its newline
            let text = String(decoding: line.bytes, as: UTF8.self)
            sinkLock.withLock { sink(text) }
            return
        }
        guard let loop = EventLoop.current else {
            var line = LogLine(bytes: [])
            build(&line)
            LogLine.writeAll(line.bytes)
            return
        }
        let batch = loop.local(batchKey) { LogBatch() }
        var line = LogLine(bytes: batch.bytes)
        batch.bytes = []  // hand the storage to `line` so that appending does not copy it
        build(&line)
        batch.bytes = line.bytes
        if batch.bytes.count >= LogBatch.flushBytes {
            batch.flush()
        } else if !batch.scheduled {
            batch.scheduled = true
            loop.atEndOfTurn { batch.flush() }
        }
    }
}

/// One loop's pending stdout lines (touched only on that loop's thread).
private final class LogBatch {
    /// Above this many pending bytes the batch is written at once.
    static let flushBytes = 32 * 1024
    /// Complete lines, each ending in a newline.
    var bytes: [UInt8] = []
    /// True while a flush is scheduled for the end of the loop's turn.
    var scheduled = false

    init() { bytes.reserveCapacity(LogBatch.flushBytes) }

    /// Writes the pending lines with one `write(2)` (more only for a partial write).
    func flush() {
        scheduled = false
        guard !bytes.isEmpty else { return }
        LogLine.writeAll(bytes)
        bytes.removeAll(keepingCapacity: true)
    }
}

/// A JSON log line written straight into bytes: `{"time":…,"level":…` then fields, then `}\n`.
struct LogLine {
    /// The bytes so far (may start with earlier lines of the same batch).
    var bytes: [UInt8]

    /// Opens the object with the time and the level.
    mutating func begin(level: String) {
        bytes.append(UInt8(ascii: "{"))
        bytes.append(contentsOf: #""time":""#.utf8)
        LogLine.appendTimestamp(&bytes)
        bytes.append(UInt8(ascii: "\""))
        bytes.append(UInt8(ascii: ","))
        key("level")
        string(level)
    }

    /// Closes the object and the line.
    mutating func end() {
        bytes.append(UInt8(ascii: "}"))
        bytes.append(10)
    }

    /// A string field.
    mutating func field(_ name: String, _ value: String) {
        bytes.append(UInt8(ascii: ","))
        key(name)
        string(value)
    }

    /// An integer field.
    mutating func field(_ name: String, integer value: Int) {
        bytes.append(UInt8(ascii: ","))
        key(name)
        LogLine.appendInteger(value, to: &bytes)
    }

    /// A duration in milliseconds with three decimals (microseconds), from seconds.
    mutating func field(_ name: String, milliseconds seconds: Double) {
        bytes.append(UInt8(ascii: ","))
        key(name)
        let micros = seconds.isFinite ? Int((max(0, seconds) * 1_000_000).rounded()) : 0
        LogLine.appendInteger(micros / 1000, to: &bytes)
        let fraction = micros % 1000
        guard fraction != 0 else { return }
        bytes.append(UInt8(ascii: "."))
        var digits = fraction
        var width = 3
        while digits % 10 == 0 {  // no trailing zeros: 1.5, not 1.500
            digits /= 10
            width -= 1
        }
        LogLine.appendPadded(digits, width: width, to: &bytes)
    }

    /// A trace id field (32 hex digits, written from the numbers: no string).
    mutating func field(_ name: String, trace: TraceContext) {
        bytes.append(UInt8(ascii: ","))
        key(name)
        trace.appendQuotedTraceID(to: &bytes)
    }

    /// A field with any JSON value (start-up lines).
    mutating func field(_ name: String, json value: JSONValue) {
        bytes.append(UInt8(ascii: ","))
        key(name)
        value.write(into: &bytes)
    }

    private mutating func key(_ name: String) {
        string(name)
        bytes.append(UInt8(ascii: ":"))
    }

    /// Appends `s` as a JSON string literal (quotes, backslashes and control characters escaped).
    mutating func string(_ s: String) {
        bytes.append(UInt8(ascii: "\""))
        var s = s
        s.withUTF8 { utf8 in
            for b in utf8 {
                switch b {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"):
                    bytes.append(92)
                    bytes.append(b)
                case 0x0A:
                    bytes.append(92)
                    bytes.append(UInt8(ascii: "n"))
                case 0x0D:
                    bytes.append(92)
                    bytes.append(UInt8(ascii: "r"))
                case 0x09:
                    bytes.append(92)
                    bytes.append(UInt8(ascii: "t"))
                case 0..<0x20:
                    bytes.append(92)
                    bytes.append(UInt8(ascii: "u"))
                    bytes.append(48)
                    bytes.append(48)
                    bytes.append(LogLine.hexDigit(b >> 4))
                    bytes.append(LogLine.hexDigit(b & 15))
                default:
                    bytes.append(b)
                }
            }
        }
        bytes.append(UInt8(ascii: "\""))
    }

    private static func hexDigit(_ v: UInt8) -> UInt8 { v < 10 ? 48 + v : 87 + v }

    /// Appends the decimal digits of `value`.
    static func appendInteger(_ value: Int, to out: inout [UInt8]) {
        if value < 0 { out.append(UInt8(ascii: "-")) }
        var v = value.magnitude
        var digits: (UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8,
                     UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8, UInt8) =
            (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        var count = 0
        withUnsafeMutableBytes(of: &digits) { raw in
            repeat {
                raw[count] = UInt8(truncatingIfNeeded: 48 + v % 10)
                v /= 10
                count += 1
            } while v != 0
            for i in stride(from: count - 1, through: 0, by: -1) { out.append(raw[i]) }
        }
    }

    private static func appendPadded(_ value: Int, width: Int, to out: inout [UInt8]) {
        var divisor = 1
        for _ in 1..<width { divisor *= 10 }
        var v = value
        while divisor > 0 {
            out.append(UInt8(truncatingIfNeeded: 48 + v / divisor % 10))
            v %= divisor
            divisor /= 10
        }
    }

    /// Appends the UTC time as `2026-01-31T12:34:56.789Z`. Computed from the epoch by hand: `gmtime_r` takes
    /// glibc's process-wide time-zone lock.
    static func appendTimestamp(_ out: inout [UInt8]) {
        var now = timespec()
        clock_gettime(CLOCK_REALTIME, &now)
        appendTimestamp(&out, seconds: Int(now.tv_sec), milliseconds: Int(now.tv_nsec) / 1_000_000)
    }

    /// Appends the UTC time `seconds` after the epoch, plus `milliseconds`, as `2026-01-31T12:34:56.789Z`.
    static func appendTimestamp(_ out: inout [UInt8], seconds: Int, milliseconds: Int) {
        let days = seconds >= 0 ? seconds / 86_400 : (seconds - 86_399) / 86_400
        let secondOfDay = seconds - days * 86_400
        // Civil date from days since 1970-01-01 (Howard Hinnant's days_from_civil, inverted).
        let z = days + 719_468
        let era = (z >= 0 ? z : z - 146_096) / 146_097
        let dayOfEra = z - era * 146_097
        let yearOfEra = (dayOfEra - dayOfEra / 1460 + dayOfEra / 36_524 - dayOfEra / 146_096) / 365
        let dayOfYear = dayOfEra - (365 * yearOfEra + yearOfEra / 4 - yearOfEra / 100)
        let mp = (5 * dayOfYear + 2) / 153
        let day = dayOfYear - (153 * mp + 2) / 5 + 1
        let month = mp < 10 ? mp + 3 : mp - 9
        let year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0)
        appendPadded(year, width: 4, to: &out)
        out.append(UInt8(ascii: "-"))
        appendPadded(month, width: 2, to: &out)
        out.append(UInt8(ascii: "-"))
        appendPadded(day, width: 2, to: &out)
        out.append(UInt8(ascii: "T"))
        appendPadded(secondOfDay / 3600, width: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendPadded(secondOfDay / 60 % 60, width: 2, to: &out)
        out.append(UInt8(ascii: ":"))
        appendPadded(secondOfDay % 60, width: 2, to: &out)
        out.append(UInt8(ascii: "."))
        appendPadded(milliseconds, width: 3, to: &out)
        out.append(UInt8(ascii: "Z"))
    }

    /// Writes `bytes` to stdout, retrying partial writes and interruptions.
    static func writeAll(_ bytes: [UInt8]) {
        bytes.withUnsafeBytes { raw in
            guard var base = raw.baseAddress else { return }
            var left = raw.count
            while left > 0 {
                let n = Glibc.write(1, base, left)
                if n < 0 {
                    if errno == EINTR { continue }
                    return  // stdout gone: logging must never take the gateway down
                }
                base += n
                left -= n
            }
        }
    }
}
