import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternIO
import PosternHTTP

@Suite struct LogAndMetricsTests {
    @Test func logLineEscapesEveryStringIntoValidJSON() throws {
        let awkward = "quote \" back \\ nl \n cr \r tab \t bell \u{07} nul \u{00} é 日本 🙂"
        var line = LogLine(bytes: [])
        line.begin(level: "info")
        line.field("msg", awkward)
        line.field("status", integer: -42)
        line.field("duration_ms", milliseconds: 0.0015)
        line.field("upstream_ms", milliseconds: 0.002)
        line.end()
        #expect(line.bytes.last == 10)
        #expect(!line.bytes.dropLast().contains(10), "one line, no raw newline inside")
        let value = try JSONValue.parse(Data(line.bytes.dropLast()))
        #expect(value["msg"]?.stringValue == awkward)
        #expect(value["level"]?.stringValue == "info")
        #expect(value["status"] == .int(-42))
        #expect(value["duration_ms"] == .double(1.5))
        #expect(value["upstream_ms"] == .int(2))
    }

    @Test func timestampsAreUTCCivilTimes() {
        func stamp(_ seconds: Int, _ ms: Int) -> String {
            var out: [UInt8] = []
            LogLine.appendTimestamp(&out, seconds: seconds, milliseconds: ms)
            return String(decoding: out, as: UTF8.self)
        }
        #expect(stamp(0, 0) == "1970-01-01T00:00:00.000Z")
        #expect(stamp(951_782_400, 7) == "2000-02-29T00:00:00.007Z")
        #expect(stamp(1_798_761_599, 999) == "2026-12-31T23:59:59.999Z")
        #expect(stamp(4_107_542_400, 120) == "2100-03-01T00:00:00.120Z")
    }

    @Test func metricsRecordedOnSeveralLoopsAreSummedOnScrape() async {
        let group = EventLoopGroup(count: 2)
        defer { group.shutdown() }
        let metrics = Metrics()
        for loop in group.loops {
            for _ in 0..<3 {
                await Task(executorPreference: loop) {
                    metrics.request(route: "/r", method: "GET", status: 200, seconds: 0.002)
                    metrics.upstreamError("timeout")
                }.value
            }
        }
        metrics.request(route: "/r", method: "GET", status: 200, seconds: 0.002)  // off the loops
        let text = metrics.render()
        #expect(text.contains(#"postern_requests_total{route="/r",method="GET",status="200"} 7"#))
        #expect(text.contains(#"postern_request_duration_seconds_bucket{route="/r",le="0.0025"} 7"#))
        #expect(text.contains(#"postern_request_duration_seconds_count{route="/r"} 7"#))
        #expect(text.contains(#"postern_upstream_errors_total{kind="timeout"} 6"#))
    }
}
