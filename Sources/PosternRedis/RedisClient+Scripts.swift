import COpenSSL
import PosternIO

/// A Lua script run with `EVALSHA`, sent in full (`EVAL`, which also caches it in Redis) only when Redis
/// answers `NOSCRIPT` — once per Redis server, and again after Redis restarted.
package struct RedisScript: Sendable, Equatable {
    /// The Lua source.
    package let source: String
    /// Its SHA-1 in lowercase hex, as Redis names cached scripts.
    let sha1: String

    /// A script from its Lua source (the digest is computed here, no round trip).
    package init(_ source: String) {
        self.source = source
        var digest = [UInt8](repeating: 0, count: Int(SHA_DIGEST_LENGTH))
        let bytes = Array(source.utf8)
        _ = bytes.withUnsafeBufferPointer { SHA1($0.baseAddress, $0.count, &digest) }
        sha1 = digest.map { byte in
            let hex = String(byte, radix: 16)
            return byte < 16 ? "0" + hex : hex
        }.joined()
    }
}

extension RedisClient {
    /// Runs `script` with `keys` (`KEYS[1…]`) and `arguments` (`ARGV[1…]`); an error raised by the script
    /// throws `.server`.
    package func evaluate(_ script: RedisScript, keys: [RedisArgument] = [], arguments: [RedisArgument] = [])
        async throws(RedisError) -> RedisReply {
        var command: [RedisArgument] = ["EVALSHA", .string(script.sha1), .integer(keys.count)]
        command.append(contentsOf: keys)
        command.append(contentsOf: arguments)
        do {
            return try await self.command(command)
        } catch .server(let message) where message.hasPrefix("NOSCRIPT") {
            command[0] = "EVAL"
            command[1] = .string(script.source)
            return try await self.command(command)
        }
    }
}
