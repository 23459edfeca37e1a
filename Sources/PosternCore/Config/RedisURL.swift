/// A parsed `redis[s]://[[user]:password@]host:port[/db]` (docs/api.md, Several instances (Redis)).
///
/// The user information ends at the last `@` of the text (a password may hold `@`, `/`, `:`; percent-encoding
/// is decoded, so any byte can be written); what follows is `host:port` and an optional `/db`. `rediss://` is
/// Redis over TLS.
package struct RedisURL: Sendable, Equatable {
    /// Where Redis listens.
    package var address: HostPort
    /// The ACL user (`AUTH user password`); nil: `AUTH password` as the default user.
    package var username: String?
    /// The `AUTH` password, if any (never logged).
    package var password: String?
    /// The database number (`SELECT`), 0 by default.
    package var db: Int
    /// `rediss://`: TLS, the server's certificate verified.
    package var tls: Bool

    /// Parses the URL; nil for another scheme, a missing port, a user name without a password, a bad
    /// percent-encoding, or a database that is not a number from 0 to 15.
    package init?(_ text: String) {
        let tls: Bool
        var rest: Substring
        if text.hasPrefix("redis://") {
            tls = false
            rest = text.dropFirst("redis://".count)
        } else if text.hasPrefix("rediss://") {
            tls = true
            rest = text.dropFirst("rediss://".count)
        } else {
            return nil
        }
        var username: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            guard let colon = credentials.firstIndex(of: ":"),
                  let user = RedisURL.percentDecoded(credentials[..<colon]),
                  let secret = RedisURL.percentDecoded(credentials[credentials.index(after: colon)...]) else { return nil }
            username = user.isEmpty ? nil : user
            password = secret.isEmpty ? nil : secret
            if username != nil && password == nil { return nil }
        }
        var db = 0
        if let slash = rest.firstIndex(of: "/") {
            let dbText = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
            if !dbText.isEmpty {
                guard dbText.allSatisfy(\.isASCII), let n = Int(dbText), (0...15).contains(n) else { return nil }
                db = n
            }
        }
        guard let address = HostPort(String(rest)), address.port != 0 else { return nil }
        self.address = address
        self.username = username
        self.password = password
        self.db = db
        self.tls = tls
    }

    /// `text` with `%XX` sequences decoded (UTF-8); nil for a bad sequence.
    private static func percentDecoded(_ text: Substring) -> String? {
        guard text.contains("%") else { return String(text) }
        var bytes: [UInt8] = []
        var rest = Array(text.utf8)[...]
        while let byte = rest.popFirst() {
            guard byte == UInt8(ascii: "%") else {
                bytes.append(byte)
                continue
            }
            guard rest.count >= 2, let value = UInt8(String(decoding: rest.prefix(2), as: UTF8.self), radix: 16) else {
                return nil
            }
            bytes.append(value)
            rest = rest.dropFirst(2)
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}
