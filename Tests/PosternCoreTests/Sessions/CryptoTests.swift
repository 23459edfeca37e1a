import Foundation
import Testing
@testable import PosternCore
import PosternTesting

@Suite struct CryptoTests {
    @Test func sha256OfABCMatchesTheFIPSVector() {
        #expect(Crypto.sha256Hex("abc") == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(Crypto.hex(Crypto.sha256(Array("abc".utf8))) == Crypto.sha256Hex("abc"))
        #expect(Crypto.sha256Hex("") == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
    }

    @Test func base64URLRoundTripsEveryLengthWithoutPadding() {
        for n in 0..<40 {
            let bytes = Crypto.randomBytes(n)
            let text = Crypto.base64URLEncode(bytes)
            #expect(!text.contains("=") && !text.contains("+") && !text.contains("/"))
            #expect(Crypto.base64URLDecode(text) == bytes)
        }
        #expect(Crypto.base64URLEncode([0xfb, 0xff]) == "-_8")
        #expect(Crypto.base64URLDecode("-_8") == [0xfb, 0xff])
    }

    @Test(arguments: ["a+b/", "ab c", "abcde", "é"])
    func base64URLRejectsForeignText(_ text: String) {
        #expect(Crypto.base64URLDecode(text) == nil)
    }

    @Test func constantTimeEqualsComparesContentAndLength() {
        #expect(Crypto.constantTimeEquals([1, 2, 3], [1, 2, 3]))
        #expect(!Crypto.constantTimeEquals([1, 2, 3], [1, 2, 4]))
        #expect(!Crypto.constantTimeEquals([1, 2, 3], [1, 2]))
        #expect(Crypto.constantTimeEquals([], []))
    }

    @Test(arguments: [Crypto.accessTokenPrefix, Crypto.refreshTokenPrefix])
    func tokensHavePrefixAnd256RandomBits(_ prefix: String) {
        let tokens = (0..<200).map { _ in Crypto.newToken(prefix: prefix) }
        #expect(Set(tokens).count == tokens.count)
        for token in tokens {
            #expect(token.hasPrefix(prefix))
            let body = String(token.dropFirst(prefix.count))
            #expect(body.count == 43)
            #expect(Crypto.base64URLDecode(body)?.count == 32)
        }
        #expect(Crypto.accessTokenPrefix == "pst_" && Crypto.refreshTokenPrefix == "psr_")
    }

    private static let keyA = Data(repeating: 7, count: 32).base64EncodedString()
    private static let keyB = Data(repeating: 8, count: 32).base64EncodedString()

    @Test func secretBoxRoundTripsAndUsesFreshNonces() throws {
        let box = try #require(SecretBox(base64Key: Self.keyA))
        for plain in ["", "x", "eyJhbGciOiJIUzI1NiJ9.payload.sig", String(repeating: "é", count: 500)] {
            let sealed = box.seal(plain)
            #expect(sealed.hasPrefix("v1:"))
            #expect(plain.count < 8 || !sealed.contains(plain))  // short strings can appear in base64 by chance
            #expect(box.open(sealed) == plain)
        }
        #expect(box.seal("same") != box.seal("same"))
    }

    @Test func secretBoxRejectsTamperingAndWrongKey() throws {
        let box = try #require(SecretBox(base64Key: Self.keyA))
        let other = try #require(SecretBox(base64Key: Self.keyB))
        let sealed = box.seal("directus-refresh-token")
        #expect(other.open(sealed) == nil)
        var blob = try #require(Data(base64Encoded: String(sealed.dropFirst(3))))
        for index in [0, 12, blob.count - 1] {   // nonce, ciphertext, tag
            var bad = blob
            bad[index] ^= 0x01
            #expect(box.open("v1:" + bad.base64EncodedString()) == nil)
        }
        blob.removeLast()
        #expect(box.open("v1:" + blob.base64EncodedString()) == nil)
        #expect(box.open("v2:" + sealed.dropFirst(3)) == nil)
        #expect(box.open("garbage") == nil)
    }

    /// Values sealed by another AES-256-GCM implementation (Python's `cryptography`, key bytes 0…31, nonce bytes
    /// 100…111) open: the stored format is nonce, ciphertext, tag.
    @Test func secretBoxOpensValuesSealedElsewhere() throws {
        let box = try #require(SecretBox(key: Array(0..<32)))
        #expect(box.open("v1:ZGVmZ2hpamtsbW5vLHKsAxqdI+0TEDqOqAAZlW+2aWHuAtOxDtgs5TAd1KF/KzMkRvblMPw=")
                == "directus-refresh-token é")
        #expect(box.open("v1:ZGVmZ2hpamtsbW5vYJvVD2rXbfZl8Ei6jF/XBg==") == "")
        #expect(box.open(box.seal("")) == "")
    }

    @Test(arguments: ["", "c2hvcnQ=", Data(repeating: 1, count: 31).base64EncodedString(),
                      Data(repeating: 1, count: 33).base64EncodedString(), "not base64!"])
    func secretBoxNeedsExactly32ByteKey(_ key: String) {
        #expect(SecretBox(base64Key: key) == nil)
    }
}
