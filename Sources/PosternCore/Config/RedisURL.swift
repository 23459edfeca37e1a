/// A parsed `redis[s]://[[user]:password@]host:port[/db]` (docs/api.md, Several instances (Redis)).
///
/// The first `/` after the scheme starts the database; before it, the user information ends at the last `@` (a
/// password may hold `@`, `:`, `%`, `?`, `#`, taken as written, but no `/`), and the user name at its first `:`.
/// `rediss://` is Redis over TLS. `PosternConfig.redactingCredentials` hides the user information as this cuts it.
struct RedisURL: Sendable, Equatable {
    /// Where Redis listens.
    var address: HostPort
    /// The ACL user (`AUTH user password`); nil: `AUTH password` as the default user.
    var username: String?
    /// The `AUTH` password, if any (never logged).
    var password: String?
    /// The database number (`SELECT`), 0 by default.
    var db: Int
    /// `rediss://`: TLS, the server's certificate verified.
    var tls: Bool

    /// Parses the URL; nil for another scheme, a missing port, a user name without a password, or a database
    /// that is not a number from 0 to 15.
    init?(_ text: String) {
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
        var db = 0
        if let slash = rest.firstIndex(of: "/") {
            let dbText = rest[rest.index(after: slash)...]
            rest = rest[..<slash]
            if !dbText.isEmpty {
                guard dbText.allSatisfy(\.isASCII), let n = Int(dbText), (0...15).contains(n) else { return nil }
                db = n
            }
        }
        var username: String?
        var password: String?
        if let at = rest.lastIndex(of: "@") {
            let credentials = rest[..<at]
            rest = rest[rest.index(after: at)...]
            guard let colon = credentials.firstIndex(of: ":") else { return nil }
            let user = credentials[..<colon]
            let secret = credentials[credentials.index(after: colon)...]
            username = user.isEmpty ? nil : String(user)
            password = secret.isEmpty ? nil : String(secret)
            if username != nil && password == nil { return nil }
        }
        guard let address = HostPort(String(rest)), address.port != 0 else { return nil }
        self.address = address
        self.username = username
        self.password = password
        self.db = db
        self.tls = tls
    }
}
