import Foundation
import Testing
@testable import PosternHTTP
import PosternTesting

/// The precomputed head bytes match what the text they replace would give.
@Suite struct HeadBytesTests {
    @Test func statusLinesMatchTheReasonPhrases() {
        for status in [100, 200, 201, 204, 304, 404, 429, 502, 599, 600, 99, 1000] {
            #expect(String(decoding: HeadBytes.statusLine(status), as: UTF8.self)
                    == "HTTP/1.1 \(status) \(HTTPResponse.reason(status))\r\n")
        }
    }

    @Test func decimalsMatchStringConversion() {
        for value in [0, 7, 10, 99, 100, 4096, 1_000_000_007, Int.max, -1, Int.min] {
            var out: [UInt8] = []
            HeadBytes.appendDecimal(value, to: &out)
            #expect(String(decoding: out, as: UTF8.self) == String(value))
        }
    }

    @Test func connectionCloseIsReadInAnyCase() {
        for value in ["close", "Close", "CLOSE", "cLoSe"] { #expect(HeadBytes.isClose(value), "\(value)") }
        for value in ["", "clos", "closed", " close", "keep-alive", "cl0se", "clOsE\u{0}", "ｃlose", "close,"] {
            #expect(!HeadBytes.isClose(value), "\(value)")
        }
    }

    @Test func theHeadBufferHoldsWhatWasAppendedThroughGrowthAndClears() {
        var buffer = HeadBuffer(capacity: 8)
        defer { buffer.deallocate() }
        var expected: [UInt8] = []
        let bridged = NSString(string: "x-trace: äbc") as String
        for (i, text) in ["Host", "a-much-longer-header-value-that-is-not-a-small-string", "äöü", bridged, ""].enumerated() {
            buffer.appendField(text, "v\(i)")
            expected += Array(text.utf8) + Array(": v\(i)\r\n".utf8)
        }
        for value in [0, 7, 10, 99, 4096, 999_999_999_999, 1_000_000_000_000, Int.max, -1, Int.min] {
            buffer.appendDecimal(value)
            expected += Array(String(value).utf8)
        }
        buffer.append(HeadBytes.statusLine(204))
        expected += Array("HTTP/1.1 204 No Content\r\n".utf8)
        #expect(Array(buffer.bytes) == expected)
        buffer.clear(reserving: 100_000)
        #expect(buffer.count == 0 && buffer.capacity >= 100_000)
        buffer.append([1, 2, 3])
        #expect(Array(buffer.bytes) == [1, 2, 3])
        buffer.clear(reserving: 10)
        #expect(buffer.count == 0 && buffer.capacity == 1024, "back to small after a large head")
    }

    /// `appendDecimal` writes as many digits as `String` does at every power of ten and just below it, into a
    /// buffer that must grow for them.
    @Test func decimalsInTheHeadBufferHaveEveryDigit() {
        var power = 1
        for _ in 0...12 {
            for value in [power - 1, power, power + 1] {
                var buffer = HeadBuffer(capacity: 1)
                defer { buffer.deallocate() }
                buffer.append([0x2A])
                buffer.appendDecimal(value)
                #expect(Array(buffer.bytes) == [0x2A] + Array(String(value).utf8), "\(value)")
            }
            power *= 10
        }
    }

    @Test func textIsCopiedWhetherNativeOrBridged() {
        let bridged = NSString(string: "x-trace: äbc") as String
        for text in ["", "Host", "a-much-longer-header-value-that-is-not-a-small-string", "äöü", bridged] {
            var out: [UInt8] = [1]
            HeadBytes.append(text, to: &out)
            #expect(out == [1] + Array(text.utf8))
        }
    }
}
