import Foundation
import Testing
@testable import PosternCore
import PosternTesting
import PosternIO
import PosternHTTP

/// A request read in place (bearer tokens, paths under the API, token digests, the first space, request ids, bodies
/// of every size) gives what the string forms and the general code give.
@Suite struct RequestScanningTests {
    @Test func bearerTokensAreRead() {
        #expect(AuthenticationStage.bearer("Bearer abc") == "abc")
        #expect(AuthenticationStage.bearer("bEaReR   abc  ") == "abc")
        #expect(AuthenticationStage.bearer("  Bearer abc") == "abc")
        #expect(AuthenticationStage.bearer("Bearer") == nil)
        #expect(AuthenticationStage.bearer("Bearer ") == nil)
        #expect(AuthenticationStage.bearer("Bearerabc") == nil)
        #expect(AuthenticationStage.bearer("Bearer a b") == nil)
        #expect(AuthenticationStage.bearer("Basic abc") == nil)
        #expect(AuthenticationStage.bearer("Bearer\tabc") == nil)
        #expect(AuthenticationStage.bearer("Bearer é😀") == "é😀")
        #expect(AuthenticationStage.bearer(nil) == nil)
    }

    @Test func pathsUnderTheAPIAreRecognisedBytewiseLikeHasPrefix() {
        for path in ["/api/", "/api/v1/books", "/api", "/apix/", "/API/v1", "", "/", "/healthz", "/api/é", "/ápi/", "x/api/"] {
            #expect(EdgeStages.underAPI(path) == path.hasPrefix("/api/"), "\(path)")
        }
    }

    @Test func tokenDigestsAndPrefixesReadInPlaceMatchTheStringForms() {
        for token in ["pst_abc", "pst_" + String(repeating: "z", count: 80), "psr_abc", "pst", "", "PST_abc", "é_pst_"] {
            let bytes = Array(token.utf8)
            let inPlace = bytes.withUnsafeBufferPointer { SessionManager.hasAccessTokenPrefix($0) }
            #expect(inPlace == token.hasPrefix(Crypto.accessTokenPrefix), "\(token)")
            let key = bytes.withUnsafeBytes { TokenKey(bytes: $0) }
            #expect(key == TokenKey(token: token) && key.hex == Crypto.sha256Hex(token), "\(token)")
        }
    }

    @Test func bearerTokensAreReadAlikeInStringsAndInBytes() {
        let headers = ["Bearer abc", "bEaReR   abc  ", "  Bearer abc", "Bearer", "Bearer ", "Bearerabc", "Bearer a b",
                       "Basic abc", "Bearer\tabc", "Bearer é😀", "Bearer pst_" + String(repeating: "x", count: 60), "", "   "]
        for header in headers {
            let inPlace = AuthenticationStage.bearerRange(header).map { String(header[$0]) }
            let offsets = Array(header.utf8).withUnsafeBufferPointer { AuthenticationStage.bearerOffsets($0) }
            let viaOffsets = offsets.map { String(decoding: Array(header.utf8)[$0], as: UTF8.self) }
            #expect(inPlace == viaOffsets, "\(header)")
        }
        // A token in a longer (heap) header is found in place too.
        let long = "Bearer pst_" + String(repeating: "y", count: 60)
        #expect(AuthenticationStage.bearer(long) == "pst_" + String(repeating: "y", count: 60))
    }

    /// The token's end is found eight bytes at a time: a space at every position of every length up to 40, from
    /// every start, with bytes around it that differ from a space by one bit (0x00, 0x21, 0xA0) and two spaces.
    @Test func theFirstSpaceIsFoundAtEveryPosition() {
        for length in 0...40 {
            for filler: UInt8 in [UInt8(ascii: "x"), 0x00, 0x21, 0xA0] {
                let plain = [UInt8](repeating: filler, count: length)
                for start in 0...length {
                    #expect(plain.withUnsafeBufferPointer { AuthenticationStage.firstSpace($0, from: start) } == length)
                    for space in start..<length {
                        var bytes = plain
                        bytes[space] = 0x20
                        if space + 3 < length { bytes[space + 3] = 0x20 }
                        let found = bytes.withUnsafeBufferPointer { AuthenticationStage.firstSpace($0, from: start) }
                        if found != space {
                            Issue.record("length \(length), filler \(filler), start \(start): space at \(space), found \(found)")
                            return
                        }
                    }
                }
            }
        }
    }

    @Test func generatedRequestIDsAreDistinctSafeHex() {
        var seen = Set<String>()
        for _ in 0..<10_000 {
            let id = RequestID.start(HTTPHeaders()).id
            #expect(id.utf8.count == 32)
            #expect(id.utf8.allSatisfy { (48...57).contains($0) || (97...102).contains($0) })
            seen.insert(id)
        }
        #expect(seen.count == 10_000)
        #expect(RequestID.start(["X-Request-Id": "bad id!"]).id != "bad id!")
        #expect(RequestID.start(["X-Request-Id": "ok-1.2_3"]).id == "ok-1.2_3")
    }

    @Test func bodiesOfEverySizeArriveWhole() async throws {
        let group = EventLoopGroup(count: 1)
        defer { group.shutdown() }
        // Lent to the buffer from 1024 bytes on, copied below: both sides of the line, and a body large
        // enough to need several writes.
        let sizes = [1, 1023, 1024, 4096, 300_000]
        let server = HTTPServer(group: group) { request in
            let size = Int(request.query) ?? 0
            return HTTPResponse(status: 200, body: Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }))
        }
        try server.start(host: "127.0.0.1", port: 0)
        defer { server.shutdown(grace: 1) }
        let client = RawHTTPClient(port: server.port)
        for size in sizes + sizes.reversed() {
            let r = try client.request("GET", "/body?\(size)")
            #expect(r.status == 200)
            #expect(r.body == Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }), "size \(size)")
        }
    }
}
