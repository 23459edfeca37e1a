import Foundation
import Testing
@testable import PosternCore
import PosternIO

/// The loop's memo of token digests gives the digest SHA-256 gives, for a token seen before or not, whatever else
/// passed through its slots in between.
@Suite struct TokenDigestMemoTests {
    /// The digest computed with no memo.
    private func digest(_ token: [UInt8]) -> TokenKey {
        token.withUnsafeBytes { TokenKey(bytes: $0) }
    }

    @Test func aTokenSeenAgainGetsItsOwnDigestAndNoOtherTokensDigest() {
        let memo = TokenDigestMemo()
        // More tokens than slots, so that slots are shared and entries replaced; each asked for twice in a row
        // (the second a hit) and again after all the others (a hit or a miss, depending on what replaced it).
        var tokens: [[UInt8]] = (0..<(3 * TokenDigestMemo.slotCount)).map { _ in
            Array(Crypto.newToken(prefix: Crypto.accessTokenPrefix).utf8)
        }
        // Tokens that differ from a kept one only in their last byte, their first byte, or their length.
        let first = tokens[0]
        tokens.append(first.dropLast() + [first.last! ^ 1])
        tokens.append([first[0] ^ 1] + first.dropFirst())
        tokens.append(Array(first.dropLast()))
        tokens.append(first + [0])
        for token in tokens {
            token.withUnsafeBytes { bytes in
                #expect(memo.key(bytes) == digest(token))
                #expect(memo.key(bytes) == digest(token))
            }
        }
        for token in tokens.reversed() {
            token.withUnsafeBytes { #expect(memo.key($0) == digest(token)) }
        }
    }

    @Test func tokensOfEveryLengthAroundTheKeptLimitGetTheirDigest() {
        let memo = TokenDigestMemo()
        // An empty token, tokens of zero bytes (a never-filled slot is all zeros too), and lengths past the limit.
        for count in 0...(TokenDigestMemo.maxTokenBytes + 9) {
            for token in [[UInt8](repeating: 0, count: count), [UInt8](repeating: UInt8(ascii: "a"), count: count)] {
                for _ in 0..<2 {
                    token.withUnsafeBytes { #expect(memo.key($0) == digest(token), "\(count) bytes") }
                }
            }
        }
    }

    @Test func onAnEventLoopTheLoopsMemoIsUsedAndOffTheLoopsTheDigestIsComputed() {
        let token = Array(Crypto.newToken(prefix: Crypto.accessTokenPrefix).utf8)
        let other = Array(Crypto.newToken(prefix: Crypto.accessTokenPrefix).utf8)
        let loop = EventLoop(name: "memo-test")
        loop.start()
        defer { loop.stop() }
        let onLoop = loop.runAndWait { () -> [TokenKey] in
            [token, other, token, other].map { value in value.withUnsafeBytes { TokenDigestMemo.key(of: $0) } }
        }
        #expect(onLoop == [digest(token), digest(other), digest(token), digest(other)])
        #expect(token.withUnsafeBytes { TokenDigestMemo.key(of: $0) } == digest(token))
    }
}
